import { linearPattern, PatternError, type LinearPattern } from './linear-pattern.js';

/**
 * The one schema policy of the company's tools (contract.md § Tools that cannot be turned
 * against us): an action's `parameters` and an MCP tool's `inputSchema` are held to it when
 * they are stored or listed, and again when a process loads them. A schema passes when:
 * - it is a JSON Schema of an object, at most MAX_SCHEMA_BYTES, nested at most MAX_SCHEMA_DEPTH;
 * - each keyword the argument check applies (lib/agents/tools/arguments-check.ts) has a value of
 *   its kind, `$ref`s point inside the schema, and no `$ref` leads back to where it started
 *   without going into a property or an item (it would never end);
 * - its patterns run on RE2 (lib/agents/tools/linear-pattern.ts);
 * - the checks that arguments of at most MAX_ARGUMENT_BYTES can cost stay under
 *   MAX_SCHEMA_CHECKS (estimateChecks), which keeps one argument check under a millisecond.
 * A refusal names the keyword and where it is. Nothing here runs a company's pattern.
 */

export type Schema = boolean | SchemaObject;
export type SchemaObject = { readonly [keyword: string]: unknown };

export const MAX_SCHEMA_BYTES = 16 * 1024;
export const MAX_SCHEMA_DEPTH = 10;
/** Tool arguments, serialised, at most (contract.md). */
export const MAX_ARGUMENT_BYTES = 16 * 1024;
/** The most JSON values MAX_ARGUMENT_BYTES can hold (`[0,0,…]`): how many times one subschema can apply. */
export const MAX_ARGUMENT_VALUES = MAX_ARGUMENT_BYTES / 2;
/** The most keys MAX_ARGUMENT_BYTES can hold (`"a":0,` is 6 bytes). */
const MAX_ARGUMENT_KEYS = Math.floor(MAX_ARGUMENT_BYTES / 6);
/** The most subschema checks a schema may cost on the worst arguments; about 1 ms of the argument check. */
export const MAX_SCHEMA_CHECKS = 40_000;
/** Compiling a pattern costs ~50 µs and ~0.7 µs per RE2 instruction: these bound what one schema's patterns cost. */
const MAX_SCHEMA_PATTERNS = 32;
const MAX_SCHEMA_PATTERN_PROGRAM = 1000;
/** Positions (paths into the arguments) looked at while estimating; more only comes of `$ref`s multiplying. */
const MAX_POSITIONS = 2000;
const MAX_ESTIMATE_WORK = 200_000;

/** A schema the policy refuses: `keyword` at `at` (a JSON pointer into the schema), and why. */
export class SchemaRefusal extends Error {
  constructor(readonly keyword: string, readonly at: string, readonly reason: string) {
    super(`"${keyword}"${at ? ` at ${at}` : ''} ${reason}`);
    this.name = 'SchemaRefusal';
  }
}

/** A schema that passed: what the argument check needs besides the schema itself. */
export interface PreparedSchema {
  readonly root: Schema;
  /** Each `$ref` of the schema → the subschema it points to. */
  readonly refs: ReadonlyMap<string, Schema>;
  /** Each pattern (`pattern`, `patternProperties` names) → its RE2 program. */
  readonly patterns: ReadonlyMap<string, LinearPattern>;
}

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const ONE_SCHEMA = ['additionalProperties', 'additionalItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const COUNTS = ['maxLength', 'minLength', 'maxItems', 'minItems', 'maxProperties', 'minProperties', 'minContains', 'maxContains'];
const BOUNDS = ['maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum'];
/** Applied to the same value as the schema they are in (not to a property or an item of it). */
const IN_PLACE = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else'];

const escapeToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isSchema = (v: unknown): v is Schema => typeof v === 'boolean' || isObject(v);
const isCount = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
const isStringList = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === 'string');

interface Node {
  schema: Schema;
  at: string;
  /** Checks the node costs on one value besides its subschemas: 1, plus what `enum` and `const` compare value by value. */
  weight: number;
  inPlace: number[];
  properties: Map<string, number>;
  /** patternProperties' schemas: any key may match them. */
  patterned: number[];
  additional: number[];
  /** propertyNames: checked on every key. */
  keys: number[];
  tuple: number[];
  /** Items after the tuple (items, or additionalItems after a list of items). */
  rest: number[];
  /** contains: checked on every item. */
  everyItem: number[];
  maxItems: number;
  maxProperties: number;
}

/** JSON values a `const` or an `enum` entry holds: what comparing a value with it may cost. */
function valuesIn(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + valuesIn(x), 1);
  if (isObject(v)) return Object.values(v).reduce((n: number, x) => n + valuesIn(x), 1);
  return 1;
}

/** Whether a JSON value holds objects or lists more than `levels` deep (it stops looking there). */
export function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (levels === 0) return true;
  for (const v of Object.values(value)) if (nestedDeeperThan(v, levels - 1)) return true;
  return false;
}

/** Reads a schema's nodes, checking each keyword's value; `$ref`s are resolved once all nodes are known. */
class SchemaReader {
  readonly nodes: Node[] = [];
  readonly byPointer = new Map<string, number>();
  readonly patterns = new Map<string, LinearPattern>();
  patternProgram = 0;
  readonly refs: { node: number; ref: string; at: string }[] = [];

  read(schema: unknown, at: string): number {
    if (!isSchema(schema)) throw new SchemaRefusal('schema', at, 'must be a JSON Schema (an object or true / false)');
    const id = this.nodes.length;
    const node: Node = {
      schema, at, weight: 1, inPlace: [], properties: new Map(), patterned: [], additional: [], keys: [], tuple: [], rest: [], everyItem: [], maxItems: Infinity, maxProperties: Infinity,
    };
    this.nodes.push(node);
    this.byPointer.set(at, id);
    if (typeof schema === 'boolean') return id;
    const fail = (keyword: string, reason: string): never => {
      throw new SchemaRefusal(keyword, at, reason);
    };
    const sub = (keyword: string, ...path: string[]) => this.read(path.reduce((v: unknown, k) => (v as Record<string, unknown>)[k], schema[keyword]), `${at}/${[keyword, ...path].map(escapeToken).join('/')}`);
    for (const [keyword, value] of Object.entries(schema)) {
      if (keyword === 'type') {
        const types = Array.isArray(value) ? value : [value];
        if (types.length === 0 || !types.every((t) => typeof t === 'string' && TYPES.has(t)) || new Set(types).size !== types.length) fail(keyword, `must be one of ${[...TYPES].join(', ')}, or a list of them`);
      } else if (keyword === 'enum') {
        if (!Array.isArray(value)) fail(keyword, 'must be a list');
        // Scalars are one look-up in a set; objects and lists are compared value by value.
        node.weight += (value as unknown[]).reduce((n: number, v) => n + (v !== null && typeof v === 'object' ? valuesIn(v) : 0), 1);
      } else if (keyword === 'const') node.weight += valuesIn(value);
      else if (keyword === 'multipleOf') {
        if (typeof value !== 'number' || !(value > 0)) fail(keyword, 'must be a number greater than 0');
      } else if (BOUNDS.includes(keyword)) {
        if (typeof value !== 'number') fail(keyword, 'must be a number');
      } else if (COUNTS.includes(keyword)) {
        if (!isCount(value)) fail(keyword, 'must be a whole number, 0 or more');
      } else if (keyword === 'uniqueItems') {
        if (typeof value !== 'boolean') fail(keyword, 'must be true or false');
      } else if (keyword === 'required') {
        if (!isStringList(value)) fail(keyword, 'must be a list of property names');
      } else if (keyword === 'format') {
        if (typeof value !== 'string') fail(keyword, 'must be a string');
      } else if (keyword === 'pattern') {
        if (typeof value !== 'string') fail(keyword, 'must be a string');
        this.pattern(value as string, keyword, at);
      } else if (keyword === '$ref') {
        if (typeof value !== 'string' || !value.startsWith('#')) fail(keyword, 'must point inside this schema ("#/$defs/…"): nothing is fetched from elsewhere');
        this.refs.push({ node: id, ref: value as string, at });
      } else if (keyword === '$dynamicRef' || keyword === '$recursiveRef') fail(keyword, 'is not supported: use "$ref"');
      else if (keyword === 'dependentRequired') {
        if (!isObject(value) || !Object.values(value).every(isStringList)) fail(keyword, 'must map property names to lists of property names');
      } else if (keyword === 'dependencies') {
        if (!isObject(value)) fail(keyword, 'must map property names to lists of property names or to schemas');
        for (const [name, dep] of Object.entries(value as object)) if (!isStringList(dep)) node.inPlace.push(sub(keyword, name));
      } else if (keyword === 'items') {
        if (Array.isArray(value)) node.tuple = value.map((_, i) => sub(keyword, String(i)));
        else node.rest.push(sub(keyword));
      } else if (ONE_SCHEMA.includes(keyword)) {
        const child = sub(keyword);
        if (IN_PLACE.includes(keyword)) node.inPlace.push(child);
        else if (keyword === 'additionalProperties') node.additional.push(child);
        else if (keyword === 'propertyNames') node.keys.push(child);
        else if (keyword === 'contains') node.everyItem.push(child);
        else if (Array.isArray(schema.items)) node.rest.push(child);
      } else if (SCHEMA_LISTS.includes(keyword)) {
        if (!Array.isArray(value) || (keyword !== 'prefixItems' && value.length === 0)) fail(keyword, 'must be a non-empty list of schemas');
        const children = (value as unknown[]).map((_, i) => sub(keyword, String(i)));
        if (keyword === 'prefixItems') node.tuple = children;
        else node.inPlace.push(...children);
      } else if (SCHEMA_MAPS.includes(keyword)) {
        if (!isObject(value)) fail(keyword, 'must map names to schemas');
        for (const name of Object.keys(value as object)) {
          const child = sub(keyword, name);
          if (keyword === 'properties') node.properties.set(name, child);
          else if (keyword === 'patternProperties') {
            this.pattern(name, keyword, at);
            node.patterned.push(child);
          } else if (keyword === 'dependentSchemas') node.inPlace.push(child);
        }
      }
    }
    if (isCount(schema.maxItems)) node.maxItems = schema.maxItems as number;
    if (isCount(schema.maxProperties)) node.maxProperties = schema.maxProperties as number;
    return id;
  }

  pattern(source: string, keyword: string, at: string): void {
    if (this.patterns.has(source)) return;
    if (this.patterns.size >= MAX_SCHEMA_PATTERNS) throw new SchemaRefusal(keyword, at, `is one pattern too many: at most ${MAX_SCHEMA_PATTERNS} different patterns in a schema`);
    let pattern: LinearPattern;
    try {
      pattern = linearPattern(source);
    } catch (err) {
      if (err instanceof PatternError) throw new SchemaRefusal(keyword, at, `${JSON.stringify(source.slice(0, 60))} ${err.message}`);
      throw err;
    }
    this.patternProgram += pattern.size;
    if (this.patternProgram > MAX_SCHEMA_PATTERN_PROGRAM) throw new SchemaRefusal(keyword, at, `makes the schema's patterns too large together (more than ${MAX_SCHEMA_PATTERN_PROGRAM} RE2 instructions)`);
    this.patterns.set(source, pattern);
  }

  /** `#/a/b` (URI fragment, percent-encoded) → the node it names. */
  resolve(ref: string, at: string): number {
    let pointer: string;
    try {
      pointer = decodeURIComponent(ref.slice(1));
    } catch {
      throw new SchemaRefusal('$ref', at, `${JSON.stringify(ref)} is not a valid reference`);
    }
    const node = this.byPointer.get(pointer);
    if (node === undefined) throw new SchemaRefusal('$ref', at, `${JSON.stringify(ref.slice(0, 100))} points to no schema in this schema ("#/$defs/name", "#/definitions/name", "#/properties/name" or "#")`);
    return node;
  }
}

/** Saturating: counts that multiply through `$ref`s stop at a number far past any limit. */
const CAP = 1e15;
const add = (a: number, b: number) => Math.min(CAP, a + b);
const times = (a: number, b: number) => Math.min(CAP, a * b);

/**
 * An upper bound of the subschema checks one argument check can cost: each value of the
 * arguments (at most MAX_ARGUMENT_VALUES of them) is checked against the schemas that apply
 * where it sits, each costing its weight. Walks the positions of the arguments the schema
 * describes (a property, an item, any other key); a property is one value per object, an item
 * or another key as many as `maxItems` / `maxProperties` allow. Throws SchemaRefusal naming the
 * keyword that lets one position cost too much.
 */
function estimateChecks(nodes: readonly Node[], root: number): void {
  const closures = new Map<number, Map<number, number>>();
  const visiting = new Set<number>();
  let work = 0;
  let positions = 0;
  const closure = (id: number): Map<number, number> => {
    const known = closures.get(id);
    if (known) return known;
    if (visiting.has(id)) {
      const n = nodes[id]!;
      throw new SchemaRefusal('$ref', n.at, 'leads back to this schema without going into a property or an item: checking would never end');
    }
    visiting.add(id);
    const all = new Map<number, number>([[id, 1]]);
    for (const child of nodes[id]!.inPlace) for (const [n, count] of closure(child)) all.set(n, add(all.get(n) ?? 0, count));
    visiting.delete(id);
    work += all.size;
    closures.set(id, all);
    return all;
  };
  /** Each position: how many values it can hold, the checks each costs, and what to name when it costs too much. */
  const seen: { values: number; width: number; keyword: string; at: string }[] = [];
  const onPath = new Set<string>();
  const visit = (base: Map<number, number>, values: number, via: { keyword: string; at: string }): void => {
    if (++positions > MAX_POSITIONS || work > MAX_ESTIMATE_WORK) throw new SchemaRefusal('$ref', via.at, `makes the schema too large once its references are followed (more than ${MAX_POSITIONS} places to check)`);
    const all = new Map<number, number>();
    for (const [id, count] of base) for (const [n, c] of closure(id)) all.set(n, add(all.get(n) ?? 0, times(count, c)));
    work += all.size;
    let width = 0;
    for (const [n, c] of all) width = add(width, times(c, nodes[n]!.weight));
    const key = [...base].map(([n, c]) => `${n}x${c}`).sort().join(',');
    // Back where a `$ref` started, one level deeper in the arguments: as many values as they hold.
    if (onPath.has(key)) values = MAX_ARGUMENT_VALUES;
    seen.push({ values, width, ...via });
    if (times(values, width) > MAX_SCHEMA_CHECKS) throw tooCostly(nodes, [...all.keys()], values, width, via);
    if (onPath.has(key)) return;
    onPath.add(key);
    const members = [...all.keys()].map((n) => nodes[n]!);
    const counted = (pick: (n: Node) => readonly number[]): Map<number, number> => {
      const into = new Map<number, number>();
      for (const [n, c] of all) for (const child of pick(nodes[n]!)) into.set(child, add(into.get(child) ?? 0, c));
      return into;
    };
    const bounded = (most: number, limit: (n: Node) => number) => Math.min(most, times(values, Math.min(...[...base.keys()].map((n) => limit(nodes[n]!)))));
    const where = (keyword: string, has: (n: Node) => boolean) => ({ keyword, at: members.find(has)?.at ?? '' });
    // Objects: a named property is one value per object; any other key as many as maxProperties allows.
    for (const name of new Set(members.flatMap((n) => [...n.properties.keys()]))) {
      const child = counted((n) => {
        const own = n.properties.get(name);
        return own === undefined ? [...n.patterned, ...n.additional, ...n.keys] : [own, ...n.patterned, ...n.keys];
      });
      visit(child, values, { keyword: 'properties', at: `${members.find((n) => n.properties.has(name))!.at}/properties/${escapeToken(name)}` });
    }
    const others = counted((n) => [...n.patterned, ...n.additional, ...n.keys]);
    if (others.size) visit(others, bounded(MAX_ARGUMENT_KEYS, (n) => n.maxProperties), where('additionalProperties', (n) => n.patterned.length + n.additional.length + n.keys.length > 0));
    // Arrays: a tuple place is one value per array; the other items as many as maxItems allows.
    const places = Math.max(0, ...members.map((n) => n.tuple.length));
    for (let i = 0; i < places; i++) {
      visit(counted((n) => [...(i < n.tuple.length ? [n.tuple[i]!] : n.rest), ...n.everyItem]), values, where('prefixItems', (n) => n.tuple.length > i));
    }
    const items = counted((n) => [...n.rest, ...n.everyItem]);
    if (items.size) visit(items, bounded(MAX_ARGUMENT_VALUES, (n) => n.maxItems), where('items', (n) => n.rest.length + n.everyItem.length > 0));
    onPath.delete(key);
  };
  visit(new Map([[root, 1]]), 1, { keyword: 'type', at: '' });
  // The worst arguments put their values where checking costs most, as many as each place holds.
  let left = MAX_ARGUMENT_VALUES;
  let checks = 0;
  let costliest = { checks: 0, keyword: 'type', at: '' };
  for (const place of seen.sort((a, b) => b.width - a.width)) {
    const taken = Math.min(left, place.values);
    const cost = times(taken, place.width);
    if (cost > costliest.checks) costliest = { checks: cost, keyword: place.keyword, at: place.at };
    checks = add(checks, cost);
    left -= taken;
    if (left <= 0) break;
  }
  if (checks > MAX_SCHEMA_CHECKS) {
    throw new SchemaRefusal(costliest.keyword, costliest.at, `makes checking too costly: the worst arguments of ${MAX_ARGUMENT_BYTES / 1024} KiB would take about ${checks} checks (at most ${MAX_SCHEMA_CHECKS}); bound arrays with "maxItems" and objects with "maxProperties", or use fewer alternatives`);
  }
}

/** The keywords that make one value be checked against many schemas. */
const WIDENING = ['anyOf', 'oneOf', 'allOf', '$ref', 'dependentSchemas', 'dependencies', 'if', 'not', 'enum', 'const'];

/** The refusal of one position that costs too much: the keyword that multiplies its values, or the one that widens it. */
function tooCostly(nodes: readonly Node[], members: readonly number[], values: number, width: number, via: { keyword: string; at: string }): SchemaRefusal {
  const cost = `${values > 1 ? `each of up to ${values} values` : 'one value'} is checked against ${width} schemas (at most ${MAX_SCHEMA_CHECKS} checks in all)`;
  if (values > 1 && (via.keyword === 'items' || via.keyword === 'additionalProperties')) {
    const bound = via.keyword === 'items' ? 'maxItems' : 'maxProperties';
    return new SchemaRefusal(via.keyword, via.at, `makes checking too costly: ${cost}; give it "${bound}" (at most ${Math.max(1, Math.floor(MAX_SCHEMA_CHECKS / width))}) or use fewer alternatives`);
  }
  const wide = members.map((n) => nodes[n]!).sort((a, b) => b.inPlace.length + b.weight - (a.inPlace.length + a.weight))[0]!;
  const keyword = WIDENING.find((k) => typeof wide.schema === 'object' && k in wide.schema) ?? via.keyword;
  return new SchemaRefusal(keyword, wide.at, `makes checking too costly: ${cost}`);
}

/**
 * Checks `schema` against the policy and returns what the argument check needs; throws
 * SchemaRefusal. Costs a walk of the schema (at most MAX_SCHEMA_BYTES) and the compilation of
 * its patterns, each once per process (linearPattern caches them).
 */
export function prepareToolSchema(schema: unknown): PreparedSchema {
  if (!isObject(schema)) throw new SchemaRefusal('type', '', 'must be "object": the arguments are a JSON object');
  if (schema.type !== 'object') throw new SchemaRefusal('type', '', 'must be "object": the arguments are a JSON object');
  if (Buffer.byteLength(JSON.stringify(schema)) > MAX_SCHEMA_BYTES) throw new SchemaRefusal('schema', '', `must be at most ${MAX_SCHEMA_BYTES / 1024} KiB`);
  if (nestedDeeperThan(schema, MAX_SCHEMA_DEPTH)) throw new SchemaRefusal('schema', '', `must not be nested deeper than ${MAX_SCHEMA_DEPTH} levels`);
  const reader = new SchemaReader();
  const root = reader.read(schema, '');
  const refs = new Map<string, Schema>();
  for (const { node, ref, at } of reader.refs) {
    const target = reader.resolve(ref, at);
    reader.nodes[node]!.inPlace.push(target);
    refs.set(ref, reader.nodes[target]!.schema);
  }
  estimateChecks(reader.nodes, root);
  return { root: schema, refs, patterns: reader.patterns };
}

const prepared = new WeakMap<object, PreparedSchema | SchemaRefusal>();
const preparedByText = new Map<string, PreparedSchema | SchemaRefusal>();
const CACHE_SIZE = 500;

/**
 * The prepared form of a schema (an action's parameters, an MCP tool's input schema), or its
 * refusal, worked out once and cached by the object (a loaded tool list is reused) and by its
 * text. Throws SchemaRefusal, as prepareToolSchema.
 */
export function preparedToolSchema(schema: Record<string, unknown>): PreparedSchema {
  let found = prepared.get(schema);
  if (!found) {
    const text = JSON.stringify(schema);
    found = preparedByText.get(text);
    if (found) preparedByText.delete(text);
    else {
      try {
        found = prepareToolSchema(JSON.parse(text) as unknown);
      } catch (err) {
        if (!(err instanceof SchemaRefusal)) throw err;
        found = err;
      }
    }
    preparedByText.set(text, found);
    if (preparedByText.size > CACHE_SIZE) preparedByText.delete(preparedByText.keys().next().value!);
    prepared.set(schema, found);
  }
  if (found instanceof SchemaRefusal) throw found;
  return found;
}

/** Null when `schema` passes the policy, else why not (the keyword named). */
export function toolSchemaProblem(schema: unknown): string | null {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return '"type" must be "object": the arguments are a JSON object';
  try {
    preparedToolSchema(schema as Record<string, unknown>);
    return null;
  } catch (err) {
    if (err instanceof SchemaRefusal) return err.message;
    throw err;
  }
}
