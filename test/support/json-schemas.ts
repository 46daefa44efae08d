/**
 * Random JSON Schemas built from JSON Schema's validation keywords, and arguments made for
 * them (mostly close to valid, sometimes wrong, sometimes as large and as costly as the
 * arguments limit allows): what a company or an MCP server may write, and what a model may
 * send. Seeded (test/support/random.ts): a failing case replays with its seed.
 */
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, Json> | boolean;

export interface SchemaOptions {
  /** Keywords a comparison with another validator may use (draft-07 only, no `format`, patterns both engines read alike). */
  comparable?: boolean;
}

const NAMES = ['id', 'name', 'orderId', 'qty', 'tags', 'note', 'a', 'b', 'x-y', 'é', '__proto__'];
/** ajv reads an own `__proto__` property as missing and an absent one as present (`data.__proto__ !== undefined`): not compared. */
const COMPARABLE_NAMES = NAMES.filter((n) => n !== '__proto__');
const PATTERNS = ['^[0-9]+$', '^[A-Z]{2}-[0-9]{3,}$', 'ab', '^(a+)+$', '(x+x+)+y', '^[a-z]*$', '[0-9]', '^(?:a|aa)+$', '(.*a){12}', '^(\\w+\\s?)*$'];
const FORMATS = ['email', 'date', 'date-time', 'uri', 'uuid', 'hostname', 'ipv4', 'ipv6', 'uri-reference', 'url', 'byte', 'int32', 'password', 'duration', 'regex', 'json-pointer'];
const TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];

export class SchemaMaker {
  constructor(private readonly random: () => number, private readonly o: SchemaOptions = {}) {}

  private int(max: number): number {
    return Math.floor(this.random() * (max + 1));
  }
  private pick<T>(list: readonly T[]): T {
    return list[this.int(list.length - 1)]!;
  }
  private chance(p: number): boolean {
    return this.random() < p;
  }

  /** A schema of the arguments: `type: "object"` with properties. */
  parameters(): Record<string, Json> {
    const root = this.object(3);
    root.type = 'object';
    if (this.chance(0.3)) {
      root.$defs = { d: this.schema(2) as Json } as Json;
      (root.properties as Record<string, Json>).viaRef = { $ref: '#/$defs/d' };
    }
    return root;
  }

  schema(depth: number): Schema {
    if (depth <= 0 || this.chance(0.1)) return this.chance(0.5) ? { type: this.pick(TYPES) } : this.chance(0.9);
    const kind = this.pick(['string', 'number', 'integer', 'array', 'object', 'combined', 'enum', 'any']);
    if (kind === 'string') return this.string();
    if (kind === 'number' || kind === 'integer') return this.number(kind);
    if (kind === 'array') return this.array(depth);
    if (kind === 'object') return this.object(depth);
    if (kind === 'enum') return this.chance(0.5) ? { enum: [1, 'a', null, { k: 1 }, [1, 2]].slice(0, 1 + this.int(4)) } : { const: this.pick([1, 'a', { k: [1] }, null]) };
    if (kind === 'any') return {};
    const branches = () => Array.from({ length: 1 + this.int(2) }, () => this.schema(depth - 1));
    return this.pick([
      () => ({ anyOf: branches() }),
      () => ({ oneOf: branches() }),
      () => ({ allOf: branches() }),
      () => ({ not: this.schema(depth - 1) }),
      () => ({ if: this.schema(depth - 1), then: this.schema(depth - 1), else: this.schema(depth - 1) }),
    ])() as Schema;
  }

  private string(): Record<string, Json> {
    const s: Record<string, Json> = { type: 'string' };
    if (this.chance(0.3)) s.maxLength = this.int(20);
    if (this.chance(0.3)) s.minLength = this.int(5);
    if (this.chance(0.4)) s.pattern = this.o.comparable ? this.pick(['^[0-9]+$', '^[A-Z]{2}-[0-9]{3,}$', 'ab', '^[a-z]*$', '[0-9]']) : this.pick(PATTERNS);
    if (!this.o.comparable && this.chance(0.3)) s.format = this.pick(FORMATS);
    if (this.chance(0.2)) s.default = 'dflt';
    return s;
  }

  private number(type: string): Record<string, Json> {
    const s: Record<string, Json> = { type };
    if (this.chance(0.3)) s.minimum = this.int(10) - 5;
    if (this.chance(0.3)) s.maximum = this.int(100);
    if (this.chance(0.2)) s.exclusiveMinimum = this.int(3);
    if (this.chance(0.2)) s.exclusiveMaximum = 50 + this.int(50);
    if (this.chance(0.2)) s.multipleOf = 1 + this.int(4);
    if (this.chance(0.2)) s.default = 7;
    return s;
  }

  private array(depth: number): Record<string, Json> {
    const s: Record<string, Json> = { type: 'array' };
    if (this.chance(0.7)) s.items = this.schema(depth - 1) as Json;
    else if (this.chance(0.5)) {
      s.items = [this.schema(depth - 1), this.schema(depth - 1)] as Json;
      if (this.chance(0.5)) s.additionalItems = this.schema(depth - 1) as Json;
    }
    if (this.chance(0.3)) s.maxItems = this.int(6);
    if (this.chance(0.2)) s.minItems = this.int(2);
    if (this.chance(0.3)) s.uniqueItems = true;
    // ajv passes an empty array with `contains` when `items` is a list: not compared.
    if (this.chance(0.2) && !(this.o.comparable && Array.isArray(s.items))) s.contains = this.schema(depth - 1) as Json;
    return s;
  }

  private object(depth: number): Record<string, Json> {
    const s: Record<string, Json> = { type: 'object' };
    const properties: Record<string, Json> = {};
    for (let i = this.int(4); i > 0; i--) properties[this.pick(this.o.comparable ? COMPARABLE_NAMES : NAMES)] = this.schema(depth - 1) as Json;
    s.properties = properties;
    const names = Object.keys(properties);
    if (names.length && this.chance(0.5)) s.required = names.filter(() => this.chance(0.5));
    if (this.chance(0.3)) s.additionalProperties = this.chance(0.5) ? false : (this.schema(depth - 1) as Json);
    if (this.chance(0.2)) s.patternProperties = { '^x': this.schema(depth - 1) as Json };
    if (this.chance(0.15)) s.maxProperties = this.int(5);
    if (this.chance(0.15)) s.minProperties = this.int(2);
    if (!this.o.comparable && this.chance(0.15)) s.propertyNames = { maxLength: 8 };
    if (names.length && this.chance(0.15)) s.dependencies = { [names[0]!]: this.chance(0.5) ? [this.pick(this.o.comparable ? COMPARABLE_NAMES : NAMES)] : (this.schema(depth - 1) as Json) };
    return s;
  }

  /** A value for `schema`: mostly one that may pass, sometimes anything. */
  value(schema: unknown, depth = 4): Json {
    if (depth <= 0 || this.chance(0.08) || typeof schema !== 'object' || schema === null) return this.anything(2);
    const s = schema as Record<string, unknown>;
    if (Array.isArray(s.enum) && s.enum.length) return this.pick(s.enum as Json[]);
    if ('const' in s) return s.const as Json;
    for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(s[k])) return this.value(this.pick(s[k] as unknown[]), depth - 1);
    const type = Array.isArray(s.type) ? this.pick(s.type as string[]) : (s.type as string | undefined);
    if (type === 'string') return this.stringValue(s);
    if (type === 'number') return this.chance(0.5) ? this.int(120) - 10 : (this.int(2000) - 1000) / 7;
    if (type === 'integer') return this.int(120) - 10;
    if (type === 'boolean') return this.chance(0.5);
    if (type === 'null') return null;
    if (type === 'array' || s.items !== undefined) {
      const n = this.int(typeof s.maxItems === 'number' ? s.maxItems + 1 : 5);
      return Array.from({ length: n }, (_, i) => this.value(Array.isArray(s.items) ? s.items[i] : s.items, depth - 1));
    }
    if (type === 'object' || s.properties !== undefined) {
      const out: Record<string, Json> = {};
      for (const [k, sub] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) if (this.chance(0.8)) Object.defineProperty(out, k, { value: this.value(sub, depth - 1), enumerable: true, writable: true, configurable: true });
      if (this.chance(0.2)) out[this.chance(0.5) ? 'xtra' : 'other'] = this.anything(1);
      return out;
    }
    return this.anything(2);
  }

  private stringValue(s: Record<string, unknown>): string {
    const pattern = s.pattern as string | undefined;
    const samples = ['123', 'AB-1234', 'xaby', 'abc', 'a'.repeat(20) + '!', 'x'.repeat(12) + 'z', 'hello world ', 'ann@example.com', '2024-02-29', 'http://a.example/x', '', 'é😀', '3f2a1e0c-1b2c-4d5e-8f90-a1b2c3d4e5f6'];
    if (pattern === '^[0-9]+$') return String(this.int(99999));
    return this.pick(samples);
  }

  anything(depth: number): Json {
    const kind = this.int(depth > 0 ? 6 : 3);
    if (kind === 0) return null;
    if (kind === 1) return this.chance(0.5);
    if (kind === 2) return this.chance(0.5) ? this.int(100) : 'str' + this.int(9);
    if (kind === 3) return this.int(1000) / 10;
    if (kind === 4) return Array.from({ length: this.int(3) }, () => this.anything(depth - 1));
    return { [this.pick(NAMES)]: this.anything(depth - 1) };
  }

  /**
   * Arguments as costly as 16 KiB allows for `schema`: a long array of small objects or
   * numbers under each array property, long strings under string ones.
   */
  heavy(schema: Record<string, unknown>, bytes: number): Record<string, Json> {
    const base = this.value(schema) as Record<string, Json>;
    const out: Record<string, Json> = base !== null && typeof base === 'object' && !Array.isArray(base) ? base : {};
    const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    const names = Object.keys(properties);
    if (names.length === 0) return out;
    const share = Math.floor(bytes / names.length);
    for (const name of names) {
      const sub = properties[name];
      const type = typeof sub === 'object' && sub ? sub.type : undefined;
      const filler = this.pick([{}, 0, 'a', [], { k: 1 }]) as Json;
      const item = JSON.stringify(filler).length + 1;
      if (type === 'string') out[name] = this.pick(['a', '1', 'ab', 'x ']).repeat(Math.floor(share / 2)) + '!';
      else if (type === 'object') out[name] = Object.fromEntries(Array.from({ length: Math.floor(share / 8) }, (_, i) => [`k${i}`, 0]));
      else out[name] = Array.from({ length: Math.max(1, Math.floor(share / item)) }, () => filler);
    }
    return out;
  }
}
