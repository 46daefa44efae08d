import { fullFormats } from 'ajv-formats/dist/formats.js';
import { Run, TooCostly, type Check, type Path } from './check-run.js';
import type { LinearPattern } from './linear-pattern.js';
import { isObject, MAX_ARGUMENT_BYTES, nestedDeeperThan, preparedToolSchema, SchemaRefusal, type PreparedSchema, type Schema } from './tool-schema.js';

/**
 * A model's arguments checked against a tool's schema (one that passed lib/agents/tools/
 * tool-schema.ts), within a budget: no schema and no arguments hold the thread more than a
 * few milliseconds (contract.md § Tools that cannot be turned against us).
 *
 * Each schema becomes a tree of closures, one per subschema with only its own keywords, in a
 * walk of the schema: nothing is generated and evaluated (ajv's code generation alone took
 * 50–700 ms of a thread for a 16 KiB schema). JSON Schema's validation keywords apply in their
 * draft-07 and 2020-12 spellings, `properties` defaults are filled as ajv's `useDefaults` did,
 * and annotations and unknown keywords are ignored, as ajv's `strict: false` did. Costs are
 * counted: each subschema applied to a value is a check (at most MAX_CHECKS); a pattern test is
 * bounded beforehand by the string's length (lib/agents/tools/linear-pattern.ts) and the tests
 * of one check together by MAX_PATTERN_UNITS; a string's length, format and pattern results are
 * worked out once per check however many subschemas ask; `uniqueItems` compares canonical
 * JSON in a map (linear: ajv's pairwise comparison took 390 ms for 5,000 objects).
 */

/** How deep arguments may nest (the check follows them through recursive `$ref`s). */
export const MAX_ARGUMENT_DEPTH = 32;

declare const checked: unique symbol;
/** Arguments that passed checkArguments, their defaults filled in: what a call may be made with. */
export type CheckedArguments = Record<string, unknown> & { readonly [checked]: true };
export type ArgumentsCheck = { ok: true; args: CheckedArguments } | { ok: false; error: string; field: string };


type FormatCheck = (value: string | number) => boolean;
/** ajv-formats' full formats; "password" marks a secret (redactArgs) and accepts any string. */
const FORMATS: ReadonlyMap<string, { type: 'string' | 'number'; check: FormatCheck }> = new Map(
  Object.entries(fullFormats).map(([name, def]) => {
    const d = def as unknown;
    if (d === true) return [name, { type: 'string' as const, check: () => true }];
    if (d instanceof RegExp) return [name, { type: 'string' as const, check: (s) => d.test(String(s)) }];
    if (typeof d === 'function') return [name, { type: 'string' as const, check: d as FormatCheck }];
    const o = d as { type?: string; validate: RegExp | FormatCheck };
    const check: FormatCheck = o.validate instanceof RegExp ? (s) => (o.validate as RegExp).test(String(s)) : (o.validate as FormatCheck);
    return [name, { type: o.type === 'number' ? ('number' as const) : ('string' as const), check }];
  }),
);

const TYPE_TESTS: Readonly<Record<string, (v: unknown) => boolean>> = {
  string: (v) => typeof v === 'string',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => Number.isInteger(v),
  boolean: (v) => typeof v === 'boolean',
  null: (v) => v === null,
  array: Array.isArray,
  object: isObject,
};

const every = (checks: readonly Check[]): Check =>
  checks.length === 1 ? checks[0]! : (data, run) => {
    for (let i = 0; i < checks.length; i++) if (!checks[i]!(data, run)) return false;
    return true;
  };
const PASS: Check = () => true;

/** Turns a prepared schema's subschemas into checks; one compiler per prepared schema, its checks shared by every run. */
class CheckCompiler {
  readonly #compiled = [new Map<Schema, Check>(), new Map<Schema, Check>()];

  constructor(readonly prepared: PreparedSchema) {}

  /** The check of `schema`; `defaults`: it fills `properties` defaults (not under anyOf, oneOf, not, if, contains). */
  compile(schema: Schema, defaults: boolean): Check {
    const memo = this.#compiled[defaults ? 1 : 0]!;
    const known = memo.get(schema);
    if (known) return known;
    // A `$ref` back to a subschema being compiled finds this forwarder until its check exists.
    let built: Check | undefined;
    memo.set(schema, (data, run) => built!(data, run));
    built = this.#build(schema, defaults);
    memo.set(schema, built);
    return built;
  }

  #build(schema: Schema, defaults: boolean): Check {
    if (schema === true) return (_, run) => (run.spend(1), true);
    if (schema === false) return (_, run) => (run.spend(1), run.fail('is not allowed'));
    const s = schema;
    const parts: Check[] = [];
    if (typeof s.$ref === 'string') parts.push(this.compile(this.prepared.refs.get(s.$ref)!, defaults));
    if (s.type !== undefined) {
      const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
      const tests = types.map((t) => TYPE_TESTS[t]!);
      const message = `must be ${types.join(',')}`;
      parts.push((data, run) => tests.some((test) => test(data)) || run.fail(message));
    }
    if (Array.isArray(s.enum)) parts.push(enumCheck(s.enum));
    if ('const' in s) parts.push((data, run) => run.equal(s.const, data) || run.fail('must be equal to constant'));
    const typed: [(v: unknown) => boolean, Check[]][] = [
      [(v) => typeof v === 'number', this.#number(s)],
      [(v) => typeof v === 'string', this.#string(s)],
      [Array.isArray, this.#array(s, defaults)],
      [isObject, this.#object(s, defaults)],
    ];
    for (const [applies, checks] of typed) if (checks.length) parts.push(((check) => (data: unknown, run: Run) => !applies(data) || check(data, run))(every(checks)));
    parts.push(...this.#combined(s, defaults));
    const all = parts.length ? every(parts) : PASS;
    return (data, run) => {
      run.spend(1);
      return all(data, run);
    };
  }

  #number(s: Record<string, unknown>): Check[] {
    const checks: Check[] = [];
    const bound = (keyword: string, ok: (n: number, limit: number) => boolean, words: string) => {
      const limit = s[keyword];
      if (typeof limit === 'number') checks.push((n, run) => ok(n as number, limit) || run.fail(`must be ${words} ${limit}`));
    };
    bound('maximum', (n, l) => n <= l, '<=');
    bound('minimum', (n, l) => n >= l, '>=');
    bound('exclusiveMaximum', (n, l) => n < l, '<');
    bound('exclusiveMinimum', (n, l) => n > l, '>');
    bound('multipleOf', (n, l) => Number.isInteger(n / l), 'multiple of');
    const format = typeof s.format === 'string' ? FORMATS.get(s.format) : undefined;
    if (format?.type === 'number') checks.push((n, run) => format.check(n as number) || run.fail(`must match format "${s.format}"`));
    return checks;
  }

  #string(s: Record<string, unknown>): Check[] {
    const checks: Check[] = [];
    const { maxLength, minLength } = s;
    // A string's code points are between half its UTF-16 length and all of it: most need no counting.
    if (typeof maxLength === 'number') checks.push((t, run) => (t as string).length <= maxLength || run.length(t as string) <= maxLength || run.fail(`must NOT have more than ${maxLength} characters`));
    if (typeof minLength === 'number') checks.push((t, run) => (t as string).length >= 2 * minLength || run.length(t as string) >= minLength || run.fail(`must NOT have fewer than ${minLength} characters`));
    if (typeof s.pattern === 'string') {
      const pattern = this.prepared.patterns.get(s.pattern)!;
      checks.push((t, run) => {
        if ((t as string).length > pattern.maxChars) return run.fail(`must be at most ${pattern.maxChars} characters to be checked against pattern "${pattern.source}"`);
        return run.test(pattern, t as string) || run.fail(`must match pattern "${pattern.source}"`);
      });
    }
    const name = s.format;
    const format = typeof name === 'string' ? FORMATS.get(name) : undefined;
    if (format?.type === 'string') checks.push((t, run) => run.format(name as string, format.check, t as string) || run.fail(`must match format "${name}"`));
    return checks;
  }

  #array(s: Record<string, unknown>, defaults: boolean): Check[] {
    const checks: Check[] = [];
    const { maxItems, minItems } = s;
    if (typeof maxItems === 'number') checks.push((list, run) => (list as unknown[]).length <= maxItems || run.fail(`must NOT have more than ${maxItems} items`));
    if (typeof minItems === 'number') checks.push((list, run) => (list as unknown[]).length >= minItems || run.fail(`must NOT have fewer than ${minItems} items`));
    if (s.uniqueItems === true) checks.push(uniqueItems);
    const tupleSchemas = (Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : []) as Schema[];
    const restSchema = (Array.isArray(s.items) ? s.additionalItems : s.items) as Schema | undefined;
    const fills = defaults ? tupleSchemas.flatMap((sub, i) => (isObject(sub) && sub.default !== undefined ? [[i, JSON.stringify(sub.default)] as const] : [])) : [];
    if (fills.length) checks.push((list, run) => fillDefaults(list as unknown[], fills, run));
    if (tupleSchemas.length || restSchema !== undefined) {
      const tuple = tupleSchemas.map((sub) => this.compile(sub, defaults));
      const rest = restSchema === undefined ? null : restSchema === false ? false : this.compile(restSchema, defaults);
      checks.push((data, run) => {
        const list = data as unknown[];
        run.spend(list.length);
        if (rest === false && list.length > tuple.length) return run.fail(`must NOT have more than ${tuple.length} items`);
        const end = rest === null ? Math.min(list.length, tuple.length) : list.length;
        for (let i = 0; i < end; i++) {
          run.path.push(i);
          const ok = (i < tuple.length ? tuple[i]! : (rest as Check))(list[i], run);
          run.path.pop();
          if (!ok) return false;
        }
        return true;
      });
    }
    if (s.contains !== undefined) {
      const contains = this.compile(s.contains as Schema, false);
      const min = typeof s.minContains === 'number' ? s.minContains : 1;
      const max = typeof s.maxContains === 'number' ? s.maxContains : Infinity;
      checks.push((data, run) => {
        let matching = 0;
        for (const item of data as unknown[]) if (run.passes(contains, item)) matching++;
        if (matching < min) return run.fail(`must contain at least ${min} valid item(s)`);
        return matching <= max || run.fail(`must contain at most ${max} valid item(s)`);
      });
    }
    return checks;
  }

  #object(s: Record<string, unknown>, defaults: boolean): Check[] {
    const checks: Check[] = [];
    const properties = new Map(Object.entries(isObject(s.properties) ? (s.properties as Record<string, Schema>) : {}).map(([k, sub]) => [k, this.compile(sub, defaults)]));
    const fills = defaults && isObject(s.properties) ? Object.entries(s.properties).flatMap(([k, sub]) => (isObject(sub) && sub.default !== undefined ? [[k, JSON.stringify(sub.default)] as const] : [])) : [];
    if (fills.length) checks.push((o, run) => fillDefaults(o as Record<string, unknown>, fills, run));
    const { maxProperties, minProperties } = s;
    if (typeof maxProperties === 'number') checks.push((o, run) => Object.keys(o as object).length <= maxProperties || run.fail(`must NOT have more than ${maxProperties} properties`));
    if (typeof minProperties === 'number') checks.push((o, run) => Object.keys(o as object).length >= minProperties || run.fail(`must NOT have fewer than ${minProperties} properties`));
    const required = (Array.isArray(s.required) ? s.required : []) as string[];
    if (required.length) checks.push((o, run) => required.every((name) => Object.hasOwn(o as object, name) || run.fail('is required', name)));
    const needs = Object.entries({ ...(isObject(s.dependencies) ? s.dependencies : {}), ...(isObject(s.dependentRequired) ? s.dependentRequired : {}) }).filter((e): e is [string, string[]] => Array.isArray(e[1]));
    if (needs.length) {
      checks.push((o, run) => needs.every(([name, wanted]) => !Object.hasOwn(o as object, name) || wanted.every((w) => Object.hasOwn(o as object, w) || run.fail(`is required when ${name} is given`, w))));
    }
    const patterned = Object.entries(isObject(s.patternProperties) ? (s.patternProperties as Record<string, Schema>) : {}).map(([source, sub]) => [this.prepared.patterns.get(source)!, this.compile(sub, defaults)] as const);
    const additional = s.additionalProperties === undefined ? null : s.additionalProperties === false ? false : this.compile(s.additionalProperties as Schema, defaults);
    const names = s.propertyNames === undefined ? null : this.compile(s.propertyNames as Schema, false);
    if (properties.size || patterned.length || additional !== null || names) {
      checks.push((data, run) => {
        const o = data as Record<string, unknown>;
        const keys = Object.keys(o);
        run.spend(keys.length);
        for (const key of keys) {
          if (names && !run.passes(names, key)) return run.fail('is not an allowed name', key);
          run.path.push(key);
          const ok = checkProperty(o[key], key, properties.get(key), patterned, additional, run);
          run.path.pop();
          if (!ok) return false;
        }
        return true;
      });
    }
    const dependent = Object.entries({ ...(isObject(s.dependencies) ? s.dependencies : {}), ...(isObject(s.dependentSchemas) ? s.dependentSchemas : {}) })
      .filter(([, sub]) => !Array.isArray(sub))
      .map(([name, sub]) => [name, this.compile(sub as Schema, defaults)] as const);
    if (dependent.length) checks.push((o, run) => dependent.every(([name, check]) => !Object.hasOwn(o as object, name) || check(o, run)));
    return checks;
  }

  /** allOf, anyOf, oneOf, not, if / then / else. Defaults are filled under allOf and then / else only, as ajv did. */
  #combined(s: Record<string, unknown>, defaults: boolean): Check[] {
    const checks: Check[] = [];
    const list = (keyword: string, fill: boolean) => (Array.isArray(s[keyword]) ? (s[keyword] as Schema[]).map((sub) => this.compile(sub, fill)) : []);
    checks.push(...list('allOf', defaults));
    const anyOf = list('anyOf', false);
    if (anyOf.length) checks.push((data, run) => anyOf.some((check) => run.passes(check, data)) || run.fail('must match a schema in anyOf'));
    const oneOf = list('oneOf', false);
    if (oneOf.length) {
      checks.push((data, run) => {
        let passing = 0;
        for (const check of oneOf) if (run.passes(check, data) && ++passing > 1) break;
        return passing === 1 || run.fail('must match exactly one schema in oneOf');
      });
    }
    if (s.not !== undefined) {
      const not = this.compile(s.not as Schema, false);
      checks.push((data, run) => !run.passes(not, data) || run.fail('must NOT be valid'));
    }
    if (s.if !== undefined) {
      const test = this.compile(s.if as Schema, false);
      const [then, otherwise] = (['then', 'else'] as const).map((k) => (s[k] === undefined ? null : this.compile(s[k] as Schema, defaults)));
      checks.push((data, run) => {
        const branch = run.passes(test, data) ? then : otherwise;
        return !branch || branch(data, run) || run.fail(`must match "${branch === then ? 'then' : 'else'}" schema`);
      });
    }
    return checks;
  }
}

function enumCheck(values: readonly unknown[]): Check {
  // Scalars are looked up in a set; objects and lists compared one by one.
  const scalars = new Set(values.filter((v) => v === null || typeof v !== 'object'));
  const others = values.filter((v) => v !== null && typeof v === 'object');
  return (data, run) => scalars.has(data) || others.some((v) => run.equal(v, data)) || run.fail('must be equal to one of the allowed values');
}

function uniqueItems(data: unknown, run: Run): boolean {
  const seen = new Map<string, number>();
  const list = data as unknown[];
  for (let i = 0; i < list.length; i++) {
    const key = run.canonical(list[i]);
    const first = seen.get(key);
    if (first !== undefined) return run.fail(`must NOT have duplicate items (items ## ${first} and ${i} are identical)`);
    seen.set(key, i);
  }
  return true;
}

function checkProperty(value: unknown, key: string, own: Check | undefined, patterned: readonly (readonly [LinearPattern, Check])[], additional: Check | false | null, run: Run): boolean {
  if (own && !own(value, run)) return false;
  let matched = false;
  for (const [pattern, check] of patterned) {
    if (key.length > pattern.maxChars || !run.test(pattern, key)) continue;
    matched = true;
    if (!check(value, run)) return false;
  }
  if (own || matched || additional === null) return true;
  return additional === false ? run.fail('is not a known argument') : additional(value, run);
}

/** Fills in the defaults of missing properties (or tuple places: ajv's `useDefaults` did both). */
function fillDefaults<K extends string | number>(o: Record<K, unknown>, fills: readonly (readonly [K, string])[], run: Run): true {
  for (const [name, text] of fills) {
    if (Object.hasOwn(o, name) && o[name] !== undefined) continue;
    run.defaultBytes += text.length;
    run.spend(Math.ceil(text.length / 64));
    if (run.defaultBytes > MAX_ARGUMENT_BYTES) throw new TooCostly(`its defaults would add more than ${MAX_ARGUMENT_BYTES / 1024} KiB`);
    // Defined, not assigned: a property named __proto__ stays a property.
    Object.defineProperty(o, name, { value: JSON.parse(text), enumerable: true, writable: true, configurable: true });
  }
  return true;
}

/**
 * A model's arguments (the JSON text of a tool call) as an object: at most MAX_ARGUMENT_BYTES,
 * nested at most MAX_ARGUMENT_DEPTH (measured before anything walks them); empty text is no arguments.
 */
export function parseToolArguments(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string; field: 'arguments' } {
  const refuse = (error: string) => ({ ok: false as const, error, field: 'arguments' as const });
  if (Buffer.byteLength(text) > MAX_ARGUMENT_BYTES) return refuse(`arguments must be at most ${MAX_ARGUMENT_BYTES / 1024} KiB`);
  if (!text.trim()) return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse('the arguments must be a JSON object');
  }
  if (!isObject(value)) return refuse('the arguments must be a JSON object');
  if (nestedDeeperThan(value, MAX_ARGUMENT_DEPTH)) return refuse(`arguments must not be nested deeper than ${MAX_ARGUMENT_DEPTH} levels`);
  return { ok: true, value };
}

const checks = new WeakMap<PreparedSchema, Check>();
const fieldOf = (path: Path) => ['arguments', ...path].join('.');

/**
 * The model's arguments checked against a tool's `parameters` (defaults filled in, on a copy).
 * On failure, `field` names the first wrong one (`arguments.orderId`) and `error` says what is
 * wrong with it, for the model (which may try again) and for a 400; `field` is `parameters`
 * when the schema itself does not pass the policy (one stored before it, or an MCP server's).
 */
export function checkArguments(parameters: Record<string, unknown>, args: unknown): ArgumentsCheck {
  if (!isObject(args)) return { ok: false, error: 'arguments must be an object', field: 'arguments' };
  let prepared: PreparedSchema;
  try {
    prepared = preparedToolSchema(parameters);
  } catch (err) {
    if (!(err instanceof SchemaRefusal)) throw err;
    return { ok: false, error: `the tool's parameters are refused: ${err.message}`, field: 'parameters' };
  }
  const text = JSON.stringify(args);
  if (Buffer.byteLength(text) > MAX_ARGUMENT_BYTES) return { ok: false, error: `arguments must be at most ${MAX_ARGUMENT_BYTES / 1024} KiB`, field: 'arguments' };
  const copy = JSON.parse(text) as Record<string, unknown>;
  if (nestedDeeperThan(copy, MAX_ARGUMENT_DEPTH)) return { ok: false, error: `arguments must not be nested deeper than ${MAX_ARGUMENT_DEPTH} levels`, field: 'arguments' };
  let check = checks.get(prepared);
  if (!check) checks.set(prepared, (check = new CheckCompiler(prepared).compile(prepared.root, true)));
  const run = new Run();
  try {
    if (!check(copy, run)) {
      const failure = run.failure ?? { path: [], message: 'is not valid' };
      return { ok: false, error: `${fieldOf(failure.path)} ${failure.message}`, field: fieldOf(failure.path) };
    }
  } catch (err) {
    if (!(err instanceof TooCostly)) throw err;
    return { ok: false, error: `arguments are too costly to check against the parameters (${err.why}): send fewer or shorter values`, field: 'arguments' };
  }
  return { ok: true, args: copy as CheckedArguments };
}
