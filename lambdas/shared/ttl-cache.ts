/** How a {@link ttlCache} keeps what it read. */
export interface TtlCacheOptions {
  /** How long an answer is used, in milliseconds: the staleness bound of what it caches. */
  ttlMs: number;
  /** Answers remembered at most; the longest unused forgotten first. */
  max: number;
  now?: () => number;
}

/**
 * A lookup that remembers each answer (undefined ones too) for `ttlMs`, per container: reads of
 * one key at once share one read, and a failed read is remembered by nobody.
 *
 * @example const placeOf = ttlCache((id: string) => findDeviceLocator(db, id), { ttlMs: 600_000, max: 100_000 });
 */
export const ttlCache = <K, V>(read: (key: K) => Promise<V>, { ttlMs, max, now = Date.now }: TtlCacheOptions) => {
  const known = new Map<K, { value: V; until: number }>();
  const reading = new Map<K, Promise<V>>();
  return (key: K): Promise<V> => {
    const hit = known.get(key);
    if (hit && hit.until > now()) return Promise.resolve(hit.value);
    const inFlight = reading.get(key);
    if (inFlight) return inFlight;
    const lookup = read(key)
      .then((value) => {
        known.delete(key);
        known.set(key, { value, until: now() + ttlMs });
        if (known.size > max) known.delete(known.keys().next().value as K);
        return value;
      })
      .finally(() => reading.delete(key));
    reading.set(key, lookup);
    return lookup;
  };
};
