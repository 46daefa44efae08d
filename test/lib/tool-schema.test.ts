import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import t from 'tap';
import { checkArguments, parseToolArguments } from '../../lib/agents/tools/arguments-check.js';
import { toolSchemaProblem } from '../../lib/agents/tools/tool-schema.js';
import { SchemaMaker } from '../support/json-schemas.js';
import { seededRandom } from '../support/random.js';

/**
 * The one schema policy of the company's tools and the argument check that runs them
 * (contract.md § Tools that cannot be turned against us): what a schema may be, that a hostile
 * schema or hostile arguments cost the thread milliseconds, and that the check answers as the
 * validator it replaced (ajv) did. Times are the best of a few runs: a promise about the code,
 * not about what else the machine is doing.
 */
const n = (k: number) => Array.from({ length: k }, (_, i) => i);

/** The best of `runs` times of `work`, in ms. */
function bestMs(work: () => unknown, runs = 10): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

t.test('uniqueItems: 16 KiB of objects are checked in milliseconds; larger arguments are refused before anything looks at them', async (t) => {
  const parameters = { type: 'object', properties: { items: { type: 'array', uniqueItems: true, items: { type: 'object' } } } };
  t.equal(toolSchemaProblem(parameters), null, 'the schema is accepted');
  const distinct = { items: n(1300).map((i) => ({ sku: i })) };
  const ms = bestMs(() => t.ok(checkArguments(parameters, distinct).ok));
  t.ok(ms < 5, `1,300 distinct objects (${JSON.stringify(distinct).length} bytes) checked in ${ms.toFixed(2)} ms (ajv compared them pairwise: 390 ms for 5,000)`);
  const duplicated = { items: [...n(600).map((i) => ({ sku: i, tags: ['a'] })), { tags: ['a'], sku: 3 }] };
  t.match(checkArguments(parameters, duplicated), { ok: false, error: /arguments\.items must NOT have duplicate items \(items ## 3 and 600 are identical\)/ }, 'equal objects in another key order are duplicates');
  const huge = { items: n(16_000).map(() => ({ a: 1 })) };
  const hugeMs = bestMs(() => t.match(checkArguments(parameters, huge), { ok: false, error: 'arguments must be at most 16 KiB', field: 'arguments' }), 3);
  t.ok(hugeMs < 50, `16,000 objects (181 KB) are refused in ${hugeMs.toFixed(1)} ms (they held a gateway 21 s)`);
  t.match(parseToolArguments(JSON.stringify(huge)), { ok: false, error: 'arguments must be at most 16 KiB' }, 'a model\'s arguments text too, before it is parsed');
});

t.test('patterns run on RE2: ^(a+)+$ costs what ^a+$ costs, a plain pattern is accepted, JavaScript-only syntax is refused by name', async (t) => {
  const catastrophic = { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } } };
  t.equal(toolSchemaProblem(catastrophic), null);
  for (const length of [28, 30, 1000]) {
    const args = { code: `${'a'.repeat(length)}!` };
    const ms = bestMs(() => t.match(checkArguments(catastrophic, args), { ok: false, error: 'arguments.code must match pattern "^(a+)+$"' }), 3);
    t.ok(ms < 5, `${length} a's and a "!" checked in ${ms.toFixed(2)} ms (JavaScript's engine took 3.7–4.6 s at 28)`);
  }
  t.ok(checkArguments(catastrophic, { code: 'aaa' }).ok);
  const digits = { type: 'object', properties: { orderId: { type: 'string', pattern: '^[0-9]+$' } }, patternProperties: { '^x-': { type: 'string' } }, additionalProperties: false };
  t.equal(toolSchemaProblem(digits), null, 'a plain pattern is accepted (it was refused with 400)');
  t.ok(checkArguments(digits, { orderId: '4411', 'x-note': 'hi' }).ok);
  t.match(checkArguments(digits, { orderId: 'A1' }), { ok: false, field: 'arguments.orderId' });
  t.match(checkArguments(digits, { 'x-note': 3 }), { ok: false, error: 'arguments.x-note must be string' }, 'patternProperties apply to the keys they match');
  t.match(checkArguments(digits, { other: 1 }), { ok: false, error: 'arguments.other is not a known argument' });
  t.match(checkArguments(digits, { orderId: '1'.repeat(9000) }), { ok: false, error: /must be at most \d+ characters to be checked against pattern/ }, 'a string too long for its pattern is refused, not tested');
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { type: 'string', pattern: '\\d+(?=€)' } } }), /^"pattern" at \/properties\/a .*lookahead or lookbehind/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } }), /^"pattern" at \/properties\/a .*backreference/);
  t.match(toolSchemaProblem({ type: 'object', patternProperties: { '(?!x)': {} } }), /^"patternProperties" .*lookahead/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { type: 'string', pattern: '(?:a?){600}a{600}' } } }), /"pattern" .* is too large \(\d+ RE2 instructions/);
  const many = { type: 'object', properties: Object.fromEntries(n(40).map((i) => [`p${i}`, { type: 'string', pattern: `^x${i}$` }])) };
  t.match(toolSchemaProblem(many), /"pattern" at \/properties\/p32 is one pattern too many: at most 32/);
  t.equal(toolSchemaProblem({ type: 'object', properties: { pattern: { type: 'string', enum: ['pattern'] } } }), null, 'a parameter named "pattern" is a parameter');
});

t.test('schemas whose checking would cost too much are refused, naming the keyword; bounded, they pass', async (t) => {
  const wide = (bound: object) => ({ type: 'object', properties: { lines: { type: 'array', ...bound, items: { allOf: n(500).map(() => ({ type: 'object' })) } } } });
  t.match(toolSchemaProblem(wide({})), /^"items" at \/properties\/lines makes checking too costly: each of up to 8192 values is checked against 501 schemas .* give it "maxItems" \(at most 79\)/);
  t.equal(toolSchemaProblem(wide({ maxItems: 50 })), null, 'with maxItems it is accepted');
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < 20; i++) defs[`d${i}`] = i === 19 ? { type: 'string' } : { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  t.match(toolSchemaProblem({ type: 'object', $defs: defs, properties: { a: { $ref: '#/$defs/d0' } } }), /^"allOf" at \/\$defs\/d0 makes checking too costly: one value is checked against \d+ schemas/, 'references that double at each level');
  t.match(toolSchemaProblem({ type: 'object', $defs: { a: { anyOf: [{ $ref: '#/$defs/a' }] } }, properties: { a: { $ref: '#/$defs/a' } } }), /^"\$ref" at \/\$defs\/a leads back to this schema without going into a property or an item/);
  const tree = { type: 'object', $defs: { node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } }, properties: { root: { $ref: '#/$defs/node' } } };
  t.equal(toolSchemaProblem(tree), null, 'a reference into a property or an item is fine: a tree');
  t.match(checkArguments(tree, { root: { name: 'a', children: [{ name: 'b', children: [{ name: 3 }] }] } }), { ok: false, error: 'arguments.root.children.0.children.0.name must be string' });
  const deep = JSON.parse(`${'{"root":{"children":['.repeat(20)}{}${']}}'.repeat(20)}`);
  t.match(checkArguments(tree, deep), { ok: false, error: 'arguments must not be nested deeper than 32 levels' });
  const amplifier = { type: 'object', properties: { a: { type: 'array', items: { type: 'object', properties: { x: { default: 'y'.repeat(2000) } } } } } };
  const ms = bestMs(() => t.match(checkArguments(amplifier, { a: n(5000).map(() => ({})) }), { ok: false, error: /too costly to check .*defaults would add more than 16 KiB/ }), 3);
  t.ok(ms < 5, `defaults that would copy 10 MB into 5,000 items stop at 16 KiB, in ${ms.toFixed(2)} ms`);
});

t.test('what a schema may be made of: the old rules, in words that name the keyword', async (t) => {
  t.equal(toolSchemaProblem({ type: 'object', properties: { a: { type: 'string', example: 'x', 'x-ui': 1 } } }), null, 'unknown keywords are fine');
  t.match(toolSchemaProblem({ type: 'array' }), /"type" must be "object"/);
  t.match(toolSchemaProblem([]), /"type" must be "object"/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { type: 'strin' } } }), /^"type" at \/properties\/a must be one of string/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } }), /^"\$ref" at \/properties\/a must point inside this schema/, 'no outside references');
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }), /points to no schema in this schema/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { minLength: -1 } } }), /"minLength" at \/properties\/a must be a whole number/);
  t.match(toolSchemaProblem({ type: 'object', properties: { a: { $dynamicRef: '#x' } } }), /"\$dynamicRef" .* is not supported/);
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 12; i++) deep = { type: 'object', properties: { a: deep } };
  t.match(toolSchemaProblem(deep), /nested deeper/);
  t.match(toolSchemaProblem({ type: 'object', description: 'x'.repeat(17 * 1024) }), /at most 16 KiB/);
  // Two companies' schemas with the same $id do not clash.
  t.equal(toolSchemaProblem({ $id: 'https://example.com/s', type: 'object', properties: { a: { type: 'string' } } }), null);
  t.match(checkArguments({ $id: 'https://example.com/s', type: 'object', properties: { b: { type: 'integer' } } }, { b: 'x' }), { ok: false, error: 'arguments.b must be integer' });
});

t.test('the check answers as ajv did on 2,000 random schemas: same verdicts, same defaults filled in', async (t) => {
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false, addUsedSchema: false, logger: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  let compared = 0;
  const differences: string[] = [];
  for (let seed = 1; seed <= 2000; seed++) {
    const maker = new SchemaMaker(seededRandom(seed), { comparable: true });
    const parameters = maker.parameters();
    if (toolSchemaProblem(parameters) !== null) continue;
    const validate = ajv.compile(structuredClone(parameters));
    for (let i = 0; i < 10; i++) {
      const args = maker.value(parameters);
      if (args === null || typeof args !== 'object' || Array.isArray(args)) continue;
      const theirs = structuredClone(args);
      const valid = validate(theirs);
      const ours = checkArguments(parameters, args);
      compared++;
      if (valid !== ours.ok || (ours.ok && JSON.stringify(ours.args) !== JSON.stringify(theirs))) differences.push(`seed ${seed}: ${JSON.stringify(args)} ajv ${valid} ours ${JSON.stringify(ours)}`);
    }
  }
  t.ok(compared > 15_000, `${compared} arguments compared`);
  t.same(differences.slice(0, 5), [], 'no difference');
});
