import { FIRMWARE_INDEX_KEY } from '../../../stores/device-tag-index';
import type { Clause, Query } from './ast';

/**
 * How a search reads: every device of the workspace once (`scan`, each checked against the query),
 * or the index's entries of one clause (`index`: the devices whose tag or firmware version `key`
 * is one of `values`, each then checked against the whole query).
 */
export type SearchPlan = { kind: 'scan' } | { kind: 'index'; key: string; values: string[] };

/** The index key of a clause's field: a tag's key, or the firmware version's own (stores/device-tag-index.ts). */
const indexKeyOf = (field: string) => (field.startsWith('tags.') ? field.slice('tags.'.length) : field === 'firmware_version' ? FIRMWARE_INDEX_KEY : undefined);

/** The index answers `f = "v"` and `f IN ("v", …)` with string values only (a number matches "3" and "3.0": not one key). */
const indexValues = (clause: Clause): string[] | undefined => {
  if (indexKeyOf(clause.field) === undefined) return undefined;
  const values = clause.kind === 'compare' && clause.op === '=' ? [clause.value] : clause.kind === 'in' ? clause.values : [];
  return values.length && values.every((v) => typeof v === 'string') ? [...new Set(values as string[])] : undefined;
};

/**
 * The planner: the indexed clause (a tag's, or `firmware_version`'s) with the fewest values (an `=`
 * before an `IN`; the first in the query's order among equals) when the query has one, else one
 * pass. It keeps no statistics: a page of an indexed query measures instead, reading a probe of
 * devices in one pass and going on from the index only once under half of those read match
 * (search.ts; docs/api.md, "How a search is answered"). Fields that change often (`connected` on
 * every connection, `last_seen_at` once a minute) are never indexed, so they cost no index write.
 */
export const planSearch = (query: Query | undefined): SearchPlan => {
  let best: { key: string; values: string[] } | undefined;
  for (const clause of query?.clauses ?? []) {
    const values = indexValues(clause);
    if (values && (!best || values.length < best.values.length)) best = { key: indexKeyOf(clause.field)!, values };
  }
  return best ? { kind: 'index', ...best } : { kind: 'scan' };
};
