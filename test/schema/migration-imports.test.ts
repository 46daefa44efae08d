// A migration's result must not change when live code does: a migration imports nothing but
// node's built-ins, @mikro-orm and files of its own folder (frozen copies, schema/migrations/frozen/).
import { readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

const MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../schema/migrations');

/** Every TypeScript or JavaScript file under the migrations folder. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(c|m)?(t|j)s$/.test(e.name) ? [path] : [];
  });
}

/** Static imports, re-exports, `import()` and `require()` of a source text: what TypeScript reads as its dependencies. */
function specifiersIn(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** The specifiers of a file (specifiersIn of its text). */
function specifiersOf(path: string): string[] {
  return specifiersIn(readFileSync(path, 'utf8'));
}

/** Why a migration may not import `specifier`, or null when it may. */
function refusal(file: string, specifier: string): string | null {
  if (specifier.startsWith('node:') || isBuiltin(specifier)) return null;
  if (specifier.startsWith('@mikro-orm/')) return null;
  if (!specifier.startsWith('.')) return 'a package other than @mikro-orm';
  const target = resolve(dirname(file), specifier);
  const inside = relative(MIGRATIONS, target);
  return inside.startsWith('..') ? 'live code outside schema/migrations/' : null;
}

t.test('migrations import only built-ins, @mikro-orm and their own folder', async (t) => {
  const files = sourceFiles(MIGRATIONS);
  t.ok(files.some((f) => f.endsWith('0010-knowledge-chunks.ts')), 'the migrations are found');
  const refused: string[] = [];
  for (const file of files) {
    for (const specifier of specifiersOf(file)) {
      const why = refusal(file, specifier);
      if (why) refused.push(`${relative(MIGRATIONS, file)} imports ${specifier} (${why})`);
    }
  }
  t.same(refused, [], 'a migration that needs live code gets a frozen copy of it in schema/migrations/frozen/');
});

t.test('the check sees every kind of import', async (t) => {
  const file = join(MIGRATIONS, '0099-example.ts');
  const source = [
    `import { Migration } from '@mikro-orm/migrations';`,
    `import { createHash } from 'node:crypto';`,
    `import { chunkContent } from './frozen/chunker-0010.js';`,
    `import type { Orm } from '../../lib/db.js';`,
    `export { storable } from '../../lib/text.js';`,
    `const m = await import('../conversation.js');`,
    `import pg from 'pg';`,
  ].join('\n');
  const found = specifiersIn(source);
  t.same(found.map((s) => [s, refusal(file, s)]), [
    ['@mikro-orm/migrations', null],
    ['node:crypto', null],
    ['./frozen/chunker-0010.js', null],
    ['../../lib/db.js', 'live code outside schema/migrations/'],
    ['../../lib/text.js', 'live code outside schema/migrations/'],
    ['../conversation.js', 'live code outside schema/migrations/'],
    ['pg', 'a package other than @mikro-orm'],
  ]);
});
