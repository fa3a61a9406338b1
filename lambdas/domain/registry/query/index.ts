export type { Clause, CompareOp, Query, QueryValue } from './ast';
export { QUERY_CLAUSES_MAX, QUERY_IN_VALUES_MAX } from './ast';
export { parseQuery } from './parse';
export { printQuery } from './print';
export { matchesQuery, type SearchableDevice } from './match';
export { isTagKey } from './fields';
export { planSearch, type SearchPlan } from './plan';
