import { RE2JS, RE2JSException } from 're2js';

/**
 * The regular expressions of a company's tool schemas (`pattern`, `patternProperties`), on
 * RE2 (the `re2js` port): no backtracking, so `^(a+)+$` costs what `^a+$` costs. JavaScript's
 * own engine took 4.6 s of a gateway's thread on 28 a's and a "!" for that pattern.
 *
 * Linear is not yet cheap: in the worst case (a pattern whose automaton keeps growing) RE2 does
 * about `programSize` steps per character, ~80 ns per step measured on re2js 2.10. So one test
 * of a string is refused beforehand when `programSize × length` passes MAX_TEST_UNITS (a few ms
 * at that rate); an ordinary pattern runs on RE2's cached automaton at a few ns a character.
 */

/** The largest compiled program a pattern may have (RE2 instructions; `^[0-9]+$` has 6, a strict e-mail pattern ~60). */
export const MAX_PATTERN_PROGRAM = 1000;
/** The most `programSize × characters` one test may cost. */
export const MAX_TEST_UNITS = 20_000;

export interface LinearPattern {
  readonly source: string;
  /** RE2 instructions: what a character may cost, at worst. */
  readonly size: number;
  /** The longest string this pattern tests within MAX_TEST_UNITS. */
  readonly maxChars: number;
  test(text: string): boolean;
}

/** A pattern RE2 cannot run, or one too large: `message` says which, in words. */
export class PatternError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PatternError';
  }
}

const compiled = new Map<string, LinearPattern>();
const CACHE_SIZE = 2000;

/** Why RE2 refused `source`, for the company: JavaScript-only syntax is named. */
function refusal(source: string, err: unknown): PatternError {
  if (/\(\?<?[=!]/.test(source)) return new PatternError('uses a lookahead or lookbehind ((?=, (?!, (?<=, (?<!), which a linear-time engine does not run', { cause: err });
  if (/\\[1-9]|\\k</.test(source)) return new PatternError('uses a backreference (\\1, \\k<name>), which a linear-time engine does not run', { cause: err });
  const detail = err instanceof RE2JSException ? err.message.replace(/^error parsing regexp: /, '') : 'not a regular expression';
  return new PatternError(`is not a regular expression RE2 runs (${detail.slice(0, 120)})`, { cause: err });
}

/**
 * `source` (ECMAScript syntax, as JSON Schema writes it, with the `u` flag ajv gives it)
 * compiled for RE2, cached by its text. Throws PatternError when RE2 cannot run it or its
 * program passes MAX_PATTERN_PROGRAM.
 */
export function linearPattern(source: string): LinearPattern {
  const hit = compiled.get(source);
  if (hit) return hit;
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source));
  } catch (err) {
    throw refusal(source, err);
  }
  const size = re.programSize();
  if (size > MAX_PATTERN_PROGRAM) throw new PatternError(`is too large (${size} RE2 instructions, at most ${MAX_PATTERN_PROGRAM}): repeat counts such as {1000} multiply it`);
  const pattern: LinearPattern = { source, size, maxChars: Math.floor(MAX_TEST_UNITS / size), test: (text) => re.test(text) };
  if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  compiled.set(source, pattern);
  return pattern;
}
