/** Where one device stands on a job or FOTA scheduled on fleets. */
export type DeviceStatus = { deviceId: string; status: string } | { deviceId: string; error: string };

/** Counts per status (`pending`, `done`, …, and `error` for devices that could not be read). */
export const countStatuses = (statuses: readonly DeviceStatus[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const s of statuses) {
    const key = 'status' in s ? s.status : 'error';
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

/**
 * Runs `fn` over `items` with at most `limit` calls at once, in order of the answers' places,
 * telling `onProgress` how many are done: reading the status of 10,000 devices neither floods the
 * API nor takes 10,000 round trips one after another.
 */
export const mapLimit = async <T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>, onProgress?: (done: number) => void): Promise<R[]> => {
  const results = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]);
      onProgress?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
};
