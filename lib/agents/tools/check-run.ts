import { MAX_TEST_UNITS, type LinearPattern } from './linear-pattern.js';
import { MAX_SCHEMA_CHECKS } from './tool-schema.js';

/**
 * One argument check's state (lib/agents/tools/arguments-check.ts): its budgets, where it is in
 * the arguments, its first failure, and what it worked out once for every subschema that asks
 * (a string's length, a format's or a pattern's verdict on it).
 */

/** Checks one argument check may make: twice what the policy lets a schema cost at worst. */
const MAX_CHECKS = 2 * MAX_SCHEMA_CHECKS;
/** What the pattern tests of one argument check may cost together (`programSize × characters`: lib/agents/tools/linear-pattern.ts). */
const MAX_PATTERN_UNITS = 2 * MAX_TEST_UNITS;

export type Path = readonly (string | number)[];

/** A subschema as a closure: whether `data` passes (the run records the first failure). */
export type Check = (data: unknown, run: Run) => boolean;

/** Thrown through the walk when a budget is spent: the check ends at once. */
export class TooCostly extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'TooCostly';
  }
}

/** One argument check's state: budgets, where it is in the arguments, its first failure, what was worked out once. */
export class Run {
  checks = 0;
  patternUnits = 0;
  defaultBytes = 0;
  readonly path: (string | number)[] = [];
  /** Inside anyOf, oneOf, not, if, contains, propertyNames: a failure there is not the answer's. */
  quiet = 0;
  failure: { path: Path; message: string } | null = null;
  readonly lengths = new Map<string, number>();
  readonly formats = new Map<string, Map<string, boolean>>();
  readonly matches = new Map<LinearPattern, Map<string, boolean>>();

  spend(checks: number): void {
    this.checks += checks;
    if (this.checks > MAX_CHECKS) throw new TooCostly(`more than ${MAX_CHECKS} checks`);
  }

  /** Records the failure (the first, outside quiet parts) at the current path, or below it at `key`; false. */
  fail(message: string, key?: string): false {
    if (this.quiet === 0 && this.failure === null) this.failure = { path: key === undefined ? [...this.path] : [...this.path, key], message };
    return false;
  }

  /** `check` on a value whose failure is not reported (a branch of anyOf…): whether it passed. */
  passes(check: Check, data: unknown): boolean {
    this.quiet++;
    try {
      return check(data, this);
    } finally {
      this.quiet--;
    }
  }

  equal(a: unknown, b: unknown): boolean {
    this.spend(1);
    if (a === b) return true;
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => this.equal(v, (b as unknown[])[i]));
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((k) => Object.hasOwn(b, k) && this.equal((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }

  /** The JSON of a value with its objects' keys sorted: equal values, equal texts. */
  canonical(v: unknown): string {
    this.spend(1);
    // Built by concatenation, without a list per value: uniqueItems makes one for each item of up to 16 KiB.
    if (typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
    if (typeof v !== 'object' || v === null) return String(v);
    let text: string;
    if (Array.isArray(v)) {
      text = '[';
      for (let i = 0; i < v.length; i++) text += (i > 0 ? ',' : '') + this.canonical(v[i]);
      return `${text}]`;
    }
    const keys = Object.keys(v);
    if (keys.length > 1) keys.sort();
    text = '{';
    for (let i = 0; i < keys.length; i++) text += `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:${this.canonical((v as Record<string, unknown>)[keys[i]!])}`;
    return `${text}}`;
  }

  /** Characters (code points, as JSON Schema counts them), counted once per check. */
  length(text: string): number {
    let n = this.lengths.get(text);
    if (n === undefined) {
      this.spend(Math.ceil(text.length / 64));
      n = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c < 0xd800 || c > 0xdbff || i + 1 >= text.length) n++;
      }
      this.lengths.set(text, n);
    }
    return n;
  }

  test(pattern: LinearPattern, text: string): boolean {
    let results = this.matches.get(pattern);
    if (!results) this.matches.set(pattern, (results = new Map()));
    let ok = results.get(text);
    if (ok === undefined) {
      this.patternUnits += pattern.size * text.length;
      if (this.patternUnits > MAX_PATTERN_UNITS) throw new TooCostly('its strings are too long for the patterns they are checked against');
      ok = pattern.test(text);
      results.set(text, ok);
    }
    return ok;
  }

  format(name: string, check: (s: string) => boolean, text: string): boolean {
    let results = this.formats.get(name);
    if (!results) this.formats.set(name, (results = new Map()));
    let ok = results.get(text);
    if (ok === undefined) {
      this.spend(1 + Math.ceil(text.length / 64));
      results.set(text, (ok = check(text)));
    }
    return ok;
  }
}
