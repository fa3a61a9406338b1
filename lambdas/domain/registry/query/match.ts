import type { Clause, Query, QueryValue } from './ast';
import { resolveField, typeOf, type FieldRef, type FieldType } from './fields';

/**
 * A device as a query reads it: the stored device record's fields of the query language. Missing
 * and null fields are the same to a query. `state` may be absent (issue 35 adds it).
 */
export interface SearchableDevice {
  name: string;
  fleet_id: string;
  connected?: boolean;
  firmware_version?: string | null;
  last_seen_at?: string | null;
  last_connected_at?: string | null;
  created_at: string;
  tags?: Record<string, string>;
  state?: { reported?: Record<string, unknown>; desired?: Record<string, unknown> };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field's value on a device; undefined when it has none (missing or null). */
const read = (device: SearchableDevice, field: FieldRef): unknown => {
  let value: unknown;
  if (field.kind === 'base') value = field.name === 'connected' ? (device.connected ?? false) : (device as unknown as Record<string, unknown>)[field.name];
  else if (field.kind === 'tag') value = device.tags && Object.hasOwn(device.tags, field.key) ? device.tags[field.key] : undefined;
  else {
    value = device.state?.[field.side];
    for (const key of field.path) value = isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
  }
  return value ?? undefined;
};

/**
 * A number a text stands for, when it is one written as JSON writes numbers (`"3"`, `"-2.5"`,
 * `"1e3"`; not `""`, `" 3"`, `"0x10"`): how a tag, always a string, compares with a number.
 */
const numberIn = (text: string) => {
  const n = Number(text);
  return text.trim() === text && text !== '' && Number.isFinite(n) && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(text) ? n : undefined;
};

/**
 * How a field's value compares with a query's value: negative, zero or positive, or undefined when
 * they do not compare (another type, or no value). Dates compare as instants; a number compares
 * with a number, or with a string field holding one; strings compare by UTF-16 code units, as
 * JavaScript's `<` does.
 */
const compare = (type: FieldType, actual: unknown, wanted: Exclude<QueryValue, null>): number | undefined => {
  if (type === 'date') {
    if (typeof actual !== 'string' || typeof wanted !== 'string') return undefined;
    const a = Date.parse(actual);
    const b = Date.parse(wanted);
    return Number.isNaN(a) || Number.isNaN(b) ? undefined : a - b;
  }
  if (typeof wanted === 'number') {
    const n = typeof actual === 'number' ? actual : typeof actual === 'string' && type === 'string' ? numberIn(actual) : undefined;
    return n === undefined ? undefined : n - wanted;
  }
  if (typeof wanted === 'string') return typeof actual === 'string' ? (actual < wanted ? -1 : actual > wanted ? 1 : 0) : undefined;
  return typeof actual === 'boolean' && actual === wanted ? 0 : undefined;
};

/** Whether the field's value equals the wanted one (null: the field has none). */
const equals = (type: FieldType, actual: unknown, wanted: QueryValue) => (wanted === null ? actual === undefined : compare(type, actual, wanted) === 0);

const matchesClause = (clause: Clause, device: SearchableDevice) => {
  const field = resolveField(clause.field);
  if ('error' in field) return false; // parseQuery never makes such a clause
  const type = typeOf(field);
  const actual = read(device, field);
  switch (clause.kind) {
    case 'exists':
      return (actual !== undefined) !== clause.negated;
    case 'in':
      return clause.values.some((value) => equals(type, actual, value));
    case 'compare': {
      if (clause.op === '=') return equals(type, actual, clause.value);
      if (clause.op === '!=') return !equals(type, actual, clause.value);
      if (clause.value === null) return false;
      const order = compare(type, actual, clause.value);
      if (order === undefined) return false;
      return clause.op === '<' ? order < 0 : clause.op === '<=' ? order <= 0 : clause.op === '>' ? order > 0 : order >= 0;
    }
  }
};

/**
 * Whether a device matches a query: every clause holds. A field the device does not have (a tag it
 * lacks, a null date, a state key it never reported) matches only `= null`, `!= <value>`,
 * `IN (…, null)` and `NOT EXISTS`; `!=` is exactly "not `=`". Ordering (`<`, `>`…) holds only
 * between values of one kind: two dates (as instants), two numbers (a tag holding a number counts
 * as one), two strings.
 */
export const matchesQuery = (query: Query, device: SearchableDevice) => query.clauses.every((clause) => matchesClause(clause, device));
