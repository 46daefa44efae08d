// JSON typed by a person (a JSON Schema, sample arguments) and JSON shown to one.

/**
 * `{ ok: true, value }`, or `{ ok: false, error }` with where the text goes wrong (line and
 * column) and why, in words: the browser's own message says "at position 57", which nobody
 * can find in a textarea.
 */
export function parseJsonText(text) {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    const message = String(err?.message ?? err);
    const at = /position (\d+)/.exec(message);
    let where = '';
    if (at) {
      const before = text.slice(0, Number(at[1]));
      where = ` at line ${before.split('\n').length}, column ${before.length - before.lastIndexOf('\n')}`;
    } else if (/end of JSON input/i.test(message)) where = ': it ends too early (a missing } or ] or ")';
    const why = message
      .replace(/^Unexpected non-whitespace character after JSON.*$/s, 'something follows the end')
      .replace(/\s*in JSON at position \d+.*$/s, '')
      .replace(/^Unexpected token '(.+?)', .*$/s, 'unexpected “$1”')
      .replace(/^Unexpected end of JSON input$/, '')
      .replace(/^./, (c) => c.toLowerCase());
    return { ok: false, error: `is not valid JSON${where}${why ? ` (${why})` : ''}` };
  }
}

/** A value as indented JSON text. */
export const prettyJson = (value) => JSON.stringify(value ?? null, null, 2);
