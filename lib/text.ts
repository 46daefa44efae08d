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

/** Why a string was refused: said the same way wherever API input is checked (gateway/http/validate.ts). */
export const UNSTORABLE_MESSAGE = 'must not contain U+0000 or an unpaired surrogate';

const isStorable = (s: string): boolean => !s.includes('\u0000') && s.isWellFormed();

/** A key as JSON escapes it (`na\\u0000me`): it names the bad key, yet is storable itself. */
const escapedKey = (k: string): string => (isStorable(k) ? k : JSON.stringify(k).slice(1, -1));

interface Visit {
  value: unknown;
  key: string | null;
  parent: Visit | null;
}

/** A field path is shown to this depth (a 1 MB body may nest 500,000 deep). */
const MAX_PATH_SEGMENTS = 32;

function pathOf(node: Visit): string {
  const keys: string[] = [];
  for (let n: Visit | null = node; n?.key != null; n = n.parent) keys.push(escapedKey(n.key));
  keys.reverse();
  if (keys.length === 0) return '(body)';
  return keys.length > MAX_PATH_SEGMENTS ? `${keys.slice(0, MAX_PATH_SEGMENTS).join('.')}.…` : keys.join('.');
}

/**
 * Where a value holds a string (or a key) that is not storable, as dotted field paths
 * (`name`, `cases.0.question`), at most `max` of them, in document order. What the API
 * refuses, where the customers' channels clean (storable above): a 400 tells the API's
 * caller what to mend. A loop with parent links, not recursion nor a path per value: deep
 * nesting costs neither the stack nor quadratic time.
 */
export function unstorableFields(value: unknown, max = 10): string[] {
  const out: string[] = [];
  const stack: Visit[] = [{ value, key: null, parent: null }];
  while (stack.length > 0 && out.length < max) {
    const node = stack.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (!isStorable(v)) out.push(pathOf(node));
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    const entries = Array.isArray(v) ? v.map((item, i) => [String(i), item] as const) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i]!;
      // A bad key is reported as soon as its object is reached (its value is not looked into).
      stack.push({ value: isStorable(key) ? item : key, key, parent: node });
    }
  }
  return out;
}

/**
 * True when a JSON text may hold a string that is not storable: only `\u0000` and surrogate
 * escapes (`\ud800`…`\udfff`) can produce one (raw bytes decode to well-formed text). The
 * cheap test before walking the parsed value.
 */
export function mayNeedStorable(json: Buffer): boolean {
  return json.indexOf('\\u0000') !== -1 || json.indexOf('\\ud') !== -1 || json.indexOf('\\uD') !== -1;
}
