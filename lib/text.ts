/**
 * PostgreSQL text and jsonb cannot hold U+0000 (`\u0000 cannot be converted to text`) nor a
 * lone UTF-16 surrogate (`Unicode low surrogate must follow a high surrogate`), so a string
 * carrying one would make every transaction that stores it fail, again at each redelivery.
 * Outside input is made storable at the door: U+0000 is dropped, a lone surrogate becomes
 * U+FFFD. Neither ever means anything in a chat message.
 */
const NUL = /\u0000/g;

function storableString(s: string): string {
  const clean = s.includes('\u0000') ? s.replace(NUL, '') : s;
  return clean.isWellFormed() ? clean : clean.toWellFormed();
}

/** The value with every string (keys included) made storable; other values as they are. */
export function storable<T>(value: T): T {
  if (typeof value === 'string') return storableString(value) as T;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => storable(v)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[storableString(k)] = storable(v);
  return out as T;
}

/**
 * True when a JSON text may hold a string that is not storable: only `\u0000` and surrogate
 * escapes (`\ud800`…`\udfff`) can produce one (raw bytes decode to well-formed text). The
 * cheap test before walking the parsed value.
 */
export function mayNeedStorable(json: Buffer): boolean {
  return json.indexOf('\\u0000') !== -1 || json.indexOf('\\ud') !== -1 || json.indexOf('\\uD') !== -1;
}
