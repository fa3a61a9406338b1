/** Small helpers shared by the benchmarks: medians, timing, and a readable table. */

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Milliseconds `fn` takes. */
export const timeMs = async (fn: () => unknown | Promise<unknown>) => {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
};

/** Prints rows as an aligned table. */
export const printTable = (title: string, rows: Array<Record<string, string | number>>) => {
  if (!rows.length) return;
  const columns = Object.keys(rows[0]);
  const cell = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i])).join('  ');
  console.log(`\n${title}`);
  console.log(line(columns));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(line(columns.map((c) => cell(row[c]))));
};
