import type { Clause, Query, QueryValue } from './ast';

/** A value as the language writes it: strings as JSON strings (quotes and escapes), numbers as JavaScript prints them. */
const printValue = (value: QueryValue) => (typeof value === 'string' ? JSON.stringify(value) : String(value));

const printClause = (clause: Clause) => {
  switch (clause.kind) {
    case 'compare':
      return `${clause.field} ${clause.op} ${printValue(clause.value)}`;
    case 'in':
      return `${clause.field} IN (${clause.values.map(printValue).join(', ')})`;
    case 'exists':
      return `${clause.negated ? 'NOT ' : ''}EXISTS ${clause.field}`;
  }
};

/** A query's canonical text: keywords upper case, one space around operators, strings in JSON quoting; `parseQuery` reads it back the same. */
export const printQuery = (query: Query) => query.clauses.map(printClause).join(' AND ');
