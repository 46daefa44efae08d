/**
 * Whole-word phrase patterns over a normalised message: lowercase, and nothing but letters,
 * digits, apostrophes and single spaces (lib/agents/builtin.ts wantsHuman, lib/agents/promises.ts).
 *
 * Patterns are written with `\p{L}` and `\p{N}`, and compiled with the classes they mean in
 * that alphabet: a letter is what is not a space, an apostrophe or a digit. V8 compiles each
 * `\p{L}` under the `u` flag, and more so under `iu`, into hundreds of ranges: the patterns of
 * those two modules held the event loop ~60 ms at their first use in a process, ~45 ms more at
 * the second (the regexp tier-up), and ~50 ms again whenever a garbage collection had dropped
 * the compiled code, in the gateway that serves every company. With these classes all of them
 * compile in a few milliseconds. The input being lowercase, no `i` flag is needed either.
 */

/** A letter or a digit: what the normalised text holds besides spaces and apostrophes. */
const WORD_CHAR = "[^ '’]";
const LETTER = "[^ '’0-9]";

/** `\p{…}` forms, in the order they are replaced (a class before its members). */
const IN_NORMALISED_TEXT: readonly (readonly [string, string])[] = [
  ['[\\p{L}\\p{N}]', WORD_CHAR],
  ['[\\p{L} ]', "[^'’0-9]"],
  ['[\\p{L}]', LETTER],
  ['\\p{L}', LETTER],
  ['\\p{N}', '[0-9]'],
];

/** Not inside a word: JS `\b` only knows ASCII. */
const START = `(?<!${WORD_CHAR})`;
const END = `(?!${WORD_CHAR})`;

/** `body` as a whole-word pattern over a normalised message; `flags` besides `u`. */
export function phrasePattern(body: string, flags = ''): RegExp {
  let source = body;
  for (const [written, compiled] of IN_NORMALISED_TEXT) source = source.replaceAll(written, compiled);
  if (/\\[pP]\{/.test(source)) throw new Error(`phrasePattern: a Unicode property this alphabet does not define in ${body}`);
  return new RegExp(`${START}(?:${source})${END}`, `${flags}u`);
}
