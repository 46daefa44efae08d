/** A lookup of expiringLookups: call it with a key and how to load it. */
export interface ExpiringLookups<K, V> {
  (key: K, load: () => Promise<V>): Promise<V>;
  /**
   * Drops the kept values of the keys `matches` accepts (every key without it). A load of
   * such a key already under way is not kept either, and the next caller loads again: it may
   * have read what the change replaced.
   */
  forget: (matches?: (key: K) => boolean) => void;
}

/**
 * Values loaded at most once per `ttlMs` per key: callers that ask while a load runs share it
 * (lanes of one integration, a crowd of visitors of one widget, ask at once), and at most
 * `maxEntries` keys are kept (the oldest written goes first). A load that fails is not kept:
 * the next caller loads again.
 */
export function expiringLookups<K, V>(ttlMs: number, maxEntries: number, now: () => number): ExpiringLookups<K, V> {
  const values = new Map<K, { value: V; expires: number }>();
  const loading = new Map<K, Promise<V>>();
  const lookup = (key: K, load: () => Promise<V>): Promise<V> => {
    const hit = values.get(key);
    if (hit && hit.expires > now()) return Promise.resolve(hit.value);
    let pending = loading.get(key);
    if (!pending) {
      const started: Promise<V> = load()
        .then((value) => {
          // Forgotten while it ran (loading no longer holds it): its value may be the old one.
          if (loading.get(key) !== started) return value;
          values.delete(key);
          if (values.size >= maxEntries) values.delete(values.keys().next().value!);
          values.set(key, { value, expires: now() + ttlMs });
          return value;
        })
        .finally(() => {
          if (loading.get(key) === started) loading.delete(key);
        });
      pending = started;
      loading.set(key, pending);
    }
    return pending;
  };
  const forget = (matches?: (key: K) => boolean): void => {
    for (const map of [values, loading]) {
      if (!matches) map.clear();
      else for (const key of [...map.keys()]) if (matches(key)) map.delete(key);
    }
  };
  return Object.assign(lookup, { forget });
}
