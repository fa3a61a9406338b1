import { LRUCache } from 'lru-cache';

/** How a {@link ttlCache} keeps what it read. */
export interface TtlCacheOptions {
  /** How long an answer is used, in milliseconds: the staleness bound of what it caches (0: never kept). */
  ttlMs: number;
  /** Answers remembered at most; the longest unused forgotten first. */
  max: number;
  now?: () => number;
}

/** A cached lookup, and a way to keep an answer read elsewhere as if it had been looked up now. */
export type TtlCache<K, V> = ((key: K) => Promise<V>) & { remember: (key: K, value: V) => void };

/**
 * A lookup that remembers each answer (undefined ones too) for `ttlMs`, per container (lru-cache):
 * reads of one key at once share one read, and a failed read is remembered by nobody.
 *
 * @example const placeOf = ttlCache((id: string) => findDeviceLocator(db, id), { ttlMs: 600_000, max: 100_000 });
 */
export const ttlCache = <K extends {}, V>(read: (key: K) => Promise<V>, { ttlMs, max, now }: TtlCacheOptions): TtlCache<K, V> => {
  if (ttlMs <= 0) return Object.assign((key: K) => read(key), { remember: () => {} });
  // Answers are boxed: lru-cache keeps no undefined value, and "no such device" is an answer too.
  const cache = new LRUCache<K, { value: V }>({
    max,
    ttl: ttlMs,
    // With a clock of its own (tests), read it at every check rather than once a millisecond.
    ...(now ? { perf: { now }, ttlResolution: 0 } : {}),
    fetchMethod: async (key) => ({ value: await read(key) }),
  });
  return Object.assign(async (key: K) => (await cache.fetch(key))!.value, { remember: (key: K, value: V) => void cache.set(key, { value }) });
};
