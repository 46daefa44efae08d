/**
 * Test hygiene for CI (.ci/run): every test file removes the streams and KV buckets it
 * created in the shared NATS. `snapshot <file>` writes the names that exist before the
 * suite; `check <file>` fails (exit 1, naming them) when the suite left new ones behind.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../lib/nats.js';

const [mode, file] = process.argv.slice(2);
if ((mode !== 'snapshot' && mode !== 'check') || !file) {
  process.stderr.write('usage: nats-leftovers.ts snapshot|check <file>\n');
  process.exit(2);
}
const nc = await connectNats(process.env.TEST_NATS_URL ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'ci-leftovers');
const names: string[] = [];
for await (const s of (await jetstreamManager(nc)).streams.list()) names.push(s.config.name);
await nc.close();
if (mode === 'snapshot') {
  await writeFile(file, names.join('\n'));
} else {
  const before = new Set((await readFile(file, 'utf8')).split('\n'));
  const left = names.filter((n) => !before.has(n));
  if (left.length > 0) {
    process.stderr.write(`the test suite left ${left.length} stream(s) / bucket(s) in NATS: ${left.slice(0, 20).join(', ')}\n`);
    process.exit(1);
  }
  process.stdout.write('no stream or bucket left behind in NATS\n');
}
