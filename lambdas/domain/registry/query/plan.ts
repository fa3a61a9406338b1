import type { Clause, Query } from './ast';

/**
 * How a search reads: every device of the workspace once (`scan`, each checked against the query),
 * or the tag index's entries of one tag clause (`tag`: the devices holding `key` = one of
 * `values`, each then checked against the whole query).
 */
export type SearchPlan = { kind: 'scan' } | { kind: 'tag'; key: string; values: string[] };

/** The tag index answers `tags.k = "v"` and `tags.k IN ("v", …)` with string values only (a number matches "3" and "3.0": not one key). */
const tagValues = (clause: Clause): string[] | undefined => {
  if (!clause.field.startsWith('tags.')) return undefined;
  const values = clause.kind === 'compare' && clause.op === '=' ? [clause.value] : clause.kind === 'in' ? clause.values : [];
  return values.length && values.every((v) => typeof v === 'string') ? [...new Set(values as string[])] : undefined;
};

/**
 * The planner: the tag clause with the fewest values (an `=` before an `IN`; the first in the
 * query's order among equals) when the query has one, else one pass. It keeps no statistics: a tag
 * clause is taken to be the selective part of a query (docs/api.md, "How a search is answered").
 * Fields that change often (`connected` on every connection, `last_seen_at` once a minute) are
 * never indexed, so they cost no index write.
 */
export const planSearch = (query: Query | undefined): SearchPlan => {
  let best: { key: string; values: string[] } | undefined;
  for (const clause of query?.clauses ?? []) {
    const values = tagValues(clause);
    if (values && (!best || values.length < best.values.length)) best = { key: clause.field.slice('tags.'.length), values };
  }
  return best ? { kind: 'tag', ...best } : { kind: 'scan' };
};
