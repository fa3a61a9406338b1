/** A value of the query language: a quoted string, a number, true, false or null. */
export type QueryValue = string | number | boolean | null;

/** The comparison operators. */
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

/**
 * One clause of a query. `field` is the field's canonical name (`name`, `tags.site`,
 * `state.reported.a.b`).
 */
export type Clause =
  | { kind: 'compare'; field: string; op: CompareOp; value: QueryValue }
  | { kind: 'in'; field: string; values: QueryValue[] }
  | { kind: 'exists'; field: string; negated: boolean };

/** A parsed query: its clauses, ANDed (the language has no OR, so every query is one index read or one pass). */
export interface Query {
  clauses: Clause[];
}

/** Most clauses of one query. */
export const QUERY_CLAUSES_MAX = 50;
/** Most values of one `IN (…)`. */
export const QUERY_IN_VALUES_MAX = 100;
