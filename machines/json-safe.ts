// A JSON-safe copy of xstate's machine definition (pure, no imports).

/**
 * JSON-safe copy, following JSON.stringify's rules (toJSON honoured, functions dropped)
 * except that functions carrying a string `type` (e.g. inline xstate actions) become
 * `{ type }` and cycles become "<cycle>" instead of throwing.
 */
export function toJsonSafe(value: unknown, seen: WeakSet<object>, key = ''): unknown {
  // Honour toJSON like JSON.stringify does (xstate's state nodes, transitions and
  // invoke definitions use it to replace state-node references by '#id' strings).
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    if (seen.has(value)) return '<cycle>';
    seen.add(value);
    const replaced = (value as { toJSON: (key: string) => unknown }).toJSON(key);
    // Like JSON.stringify: the replacement's own toJSON is not called again.
    const out = toJsonSafePlain(replaced, seen);
    seen.delete(value);
    return out;
  }
  return toJsonSafePlain(value, seen);
}

function toJsonSafePlain(value: unknown, seen: WeakSet<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'function') {
    const type = (value as { type?: unknown }).type;
    return typeof type === 'string' ? { type } : undefined;
  }
  if (typeof value !== 'object') return undefined; // undefined, symbol, bigint
  if (seen.has(value)) return '<cycle>';
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v, i) => {
      const safe = toJsonSafe(v, seen, String(i));
      return safe === undefined ? null : safe;
    });
  } else {
    const obj: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const safe = toJsonSafe(v, seen, k);
      if (safe !== undefined) obj[k] = safe;
    }
    out = obj;
  }
  seen.delete(value); // shared (non-cyclic) references are copied, only true cycles are cut
  return out;
}
