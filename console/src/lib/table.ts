/** Sort direction of a column. */
export type SortDirection = 'asc' | 'desc';

export interface SortSpec<K extends string> {
  key: K;
  direction: SortDirection;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** Compares two cell values: numbers and booleans by value, text by a natural, case-insensitive order; empty last. */
export const compareValues = (a: unknown, b: unknown): number => {
  const emptyA = a === null || a === undefined || a === '';
  const emptyB = b === null || b === undefined || b === '';
  if (emptyA || emptyB) return emptyA === emptyB ? 0 : emptyA ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return collator.compare(String(a), String(b));
};

/**
 * Sorts rows by one column (a new array; ties keep their order, as Array.prototype.sort is stable).
 * Empty values stay last in either direction.
 */
export const sortRows = <T, K extends string>(rows: readonly T[], spec: SortSpec<K> | undefined, value: (row: T, key: K) => unknown): T[] => {
  if (!spec) return [...rows];
  const sign = spec.direction === 'asc' ? 1 : -1;
  // read each key once: 10,000 rows sort in ~130,000 comparisons
  const keyed = rows.map((row, index) => ({ row, index, key: value(row, spec.key) }));
  keyed.sort((x, y) => {
    const emptyX = x.key === null || x.key === undefined || x.key === '';
    const emptyY = y.key === null || y.key === undefined || y.key === '';
    if (emptyX || emptyY) return emptyX === emptyY ? x.index - y.index : emptyX ? 1 : -1;
    return sign * compareValues(x.key, y.key) || x.index - y.index;
  });
  return keyed.map((k) => k.row);
};

/** The next sort when a column header is activated: ascending, then descending, then ascending again. */
export const toggleSort = <K extends string>(current: SortSpec<K> | undefined, key: K): SortSpec<K> =>
  current?.key === key && current.direction === 'asc' ? { key, direction: 'desc' } : { key, direction: 'asc' };

/**
 * Keeps the rows where every word of the search appears (case-insensitive) in one of the row's
 * searchable texts.
 */
export const filterRows = <T>(rows: readonly T[], search: string, texts: (row: T) => readonly (string | null | undefined)[]): T[] => {
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [...rows];
  return rows.filter((row) => {
    const haystack = texts(row).filter(Boolean).join('\u0000').toLowerCase();
    return words.every((word) => haystack.includes(word));
  });
};

/** The rows a virtualised list draws: `[start, end)`, with `overscan` extra rows on each side. */
export const visibleRange = (scrollTop: number, viewportHeight: number, rowHeight: number, count: number, overscan = 8): { start: number; end: number } => {
  if (count <= 0 || rowHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const shown = Math.ceil(Math.max(0, viewportHeight) / rowHeight) + 1;
  const start = Math.min(count, Math.max(0, first - overscan));
  const end = Math.min(count, first + shown + overscan);
  return { start, end };
};
