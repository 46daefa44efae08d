import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

/**
 * The runtime the service is tested and run on (contract § Runtime): Node.js 24 LTS. The
 * suite itself runs on it (scripts/test.sh puts it first on PATH), and scripts/node.sh gives
 * Node 24 to a shell whose `node` is older, as on machines that still have Node 20.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

t.test('the suite runs on the Node.js that package.json asks for: 24 or later', async (t) => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
  t.equal(pkg.engines.node, '>=24');
  t.ok(Number(process.versions.node.split('.')[0]) >= 24, `this test runs on Node ${process.versions.node}`);
});

t.test('scripts/node.sh: a shell whose node is 20 gets Node 24 first on PATH', async (t) => {
  // A `node` that says it is 20.20.2, first on PATH, as on the machines.
  const bin = await mkdtemp(join(tmpdir(), 'old-node-'));
  t.teardown(() => rm(bin, { recursive: true, force: true }));
  await writeFile(join(bin, 'node'), `#!/bin/sh\ncase "$*" in *process.versions*) echo 20 ;; *) echo v20.20.2 ;; esac\n`);
  await chmod(join(bin, 'node'), 0o755);
  const { stdout, stderr } = await run('bash', ['-c', `. scripts/node.sh && ensure_node && node -p process.versions.node && command -v node`], {
    cwd: root,
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    timeout: 120_000,
  });
  const [version, path] = stdout.trim().split('\n');
  t.ok(Number(version!.split('.')[0]) >= 24, `node is ${version} (${stderr.trim().split('\n').at(-1)})`);
  t.equal(path, join(root, '.cache', `node-24-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}`, 'bin', 'node'), 'the unpacked runtime, kept in the ignored .cache/');
});

t.test('scripts/node.sh: a shell whose node is 24 keeps it', async (t) => {
  const { stdout } = await run('bash', ['-c', `. scripts/node.sh && ensure_node && command -v node`], {
    cwd: root,
    env: { ...process.env, PATH: `${join(process.execPath, '..')}:${process.env.PATH}` },
  });
  t.equal(stdout.trim(), process.execPath);
});
