/**
 * Values loaded at most once per `ttlMs` per key: callers that ask while a load runs share it
 * (lanes of one integration, a crowd of visitors of one widget, ask at once), and at most
 * `maxEntries` keys are kept (the oldest written goes first). A load that fails is not kept:
 * the next caller loads again.
 */
export function expiringLookups<K, V>(ttlMs: number, maxEntries: number, now: () => number): (key: K, load: () => Promise<V>) => Promise<V> {
  const values = new Map<K, { value: V; expires: number }>();
  const loading = new Map<K, Promise<V>>();
  return (key, load) => {
    const hit = values.get(key);
    if (hit && hit.expires > now()) return Promise.resolve(hit.value);
    let pending = loading.get(key);
    if (!pending) {
      pending = load()
        .then((value) => {
          values.delete(key);
          if (values.size >= maxEntries) values.delete(values.keys().next().value!);
          values.set(key, { value, expires: now() + ttlMs });
          return value;
        })
        .finally(() => loading.delete(key));
      loading.set(key, pending);
    }
    return pending;
  };
}
