import type { Fleet } from './api';
import { ApiError, type ErrorDetail } from './errors';

/** The API's tag rules (fleet-state.md §1): the form says what the API would. */
export const TAG_KEY_RULE = /^[A-Za-z0-9_.-]{1,64}$/;
export const TAG_VALUE_MAX = 256;
export const TAGS_MAX = 50;

/** A tag as edited: its key and value as typed, and the key it had when loaded ('' for a new one). */
export interface TagRow {
  key: string;
  value: string;
  was: string;
}

const byKey = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true });

/** A device's tags as rows, by key. */
export const tagRows = (tags: Record<string, string> = {}): TagRow[] =>
  Object.keys(tags)
    .sort(byKey)
    .map((key) => ({ key, value: tags[key], was: key }));

/** What is wrong with each row (by index), and with the whole (too many tags), as the API would say it. */
export const checkTagRows = (rows: readonly TagRow[]): { rows: Record<number, string>; whole?: string } => {
  const errors: Record<number, string> = {};
  const seen = new Map<string, number>();
  rows.forEach((row, i) => {
    const key = row.key.trim();
    if (!TAG_KEY_RULE.test(key)) errors[i] = 'A key is 1 to 64 letters, digits, _ . or - (no spaces).';
    else if (seen.has(key)) errors[i] = `The key ${key} is there twice.`;
    else if (row.value.length > TAG_VALUE_MAX) errors[i] = `A value is at most ${TAG_VALUE_MAX} characters.`;
    seen.set(key, i);
  });
  const kept = new Set(rows.map((r) => r.key.trim())).size;
  return { rows: errors, ...(kept > TAGS_MAX ? { whole: `A device has at most ${TAGS_MAX} tags (${kept} here).` } : {}) };
};

/**
 * The PATCH body's `tags` that turns `original` into the rows: each new or changed value, and
 * `null` for each key no row keeps (removed, or renamed). Empty: nothing to send.
 */
export const tagPatch = (original: Record<string, string> = {}, rows: readonly TagRow[]): Record<string, string | null> => {
  const patch: Record<string, string | null> = {};
  const keys = new Set(rows.map((r) => r.key.trim()));
  for (const key of Object.keys(original)) if (!keys.has(key)) patch[key] = null;
  for (const row of rows) {
    const key = row.key.trim();
    if (original[key] !== row.value) patch[key] = row.value;
  }
  return patch;
};

/**
 * A 400 of a tags PATCH, by row: a detail that names `tags.<key>` (with or without `body.`) goes
 * next to the row of that key; any other detail, or the message without details, to the whole form.
 */
export const tagErrorsOf = (error: unknown, rows: readonly TagRow[]): { rows: Record<number, string>; whole: string[] } => {
  const out = { rows: {} as Record<number, string>, whole: [] as string[] };
  if (!(error instanceof ApiError) || error.status !== 400) return out;
  for (const detail of error.details) {
    const key = /^(?:body\.)?tags\.(.+)$/.exec(detail.field)?.[1];
    const row = key === undefined ? -1 : rows.findIndex((r) => r.key.trim() === key);
    if (row >= 0) out.rows[row] = detail.message;
    else out.whole.push(detail.field ? `${detail.field.replace(/^body\./, '')}: ${detail.message}` : detail.message);
  }
  if (!error.details.length) out.whole.push(error.message);
  return out;
};

/** A string as the query language's quoted value. */
export const quoteValue = (value: string) => JSON.stringify(value);

/** The query that finds the devices with a tag (`tags.site = "milan"`). */
export const tagClause = (key: string, value: string) => `tags.${key} = ${quoteValue(value)}`;

/** A device's tags as one line (`site=milan, model=v2`), by key. */
export const tagsText = (tags: Record<string, string> | undefined) =>
  Object.keys(tags ?? {})
    .sort(byKey)
    .map((k) => `${k}=${tags![k]}`)
    .join(', ');

/** Where a query is wrong and what was expected, from the API's 400; `index`: the 0-based character, when the message says it. */
export interface QueryProblem {
  message: string;
  index?: number;
}

/** The fields a query's 400 names: the search's `q`, a group's `query`, a target's `q`. */
const QUERY_FIELDS = /^(?:query\.q|body\.query|query\.query|q|query)$/;

/**
 * The character position a message names (`at position 12`, `character 12`, `column 12`), as a
 * 0-based index: the API counts from 1, as people do.
 */
export const positionOf = (message: string): number | undefined => {
  const found = /\b(?:position|character|column|char|offset)\s*:?\s*(\d+)/i.exec(message);
  return found ? Math.max(0, Number(found[1]) - 1) : undefined;
};

/** The problem of a query, when the error is a 400 about one (else undefined: another error). */
export const queryProblem = (error: unknown): QueryProblem | undefined => {
  if (!(error instanceof ApiError) || error.status !== 400) return undefined;
  const detail: ErrorDetail | undefined = error.details.find((d) => QUERY_FIELDS.test(d.field));
  if (!detail) return undefined;
  const index = positionOf(detail.message);
  return index === undefined ? { message: detail.message } : { message: detail.message, index };
};

/** A query cut around a position: before, the character there (a space past the end), after. */
export const markAt = (query: string, index: number): [string, string, string] => {
  const at = Math.min(Math.max(0, index), query.length);
  return [query.slice(0, at), query.slice(at, at + 1) || ' ', query.slice(at + 1)];
};

/** The workspace's default fleet: said by the API (`default`), or else the first created (it can never be deleted). */
export const defaultFleetId = (fleets: readonly (Fleet & { default?: boolean })[]): string | undefined => {
  const said = fleets.find((f) => f.default === true);
  if (said) return said.id;
  return [...fleets].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))[0]?.id;
};

/** Queries to start from, with what each finds (the help under the search box). */
export const QUERY_EXAMPLES: ReadonlyArray<[string, string]> = [
  ['tags.site = "milan"', 'devices tagged site=milan'],
  ['tags.site = "milan" AND tags.model IN ("v2", "v3")', 'in Milan, models v2 or v3'],
  ['firmware_version != "1.2.0"', 'not on firmware 1.2.0 (or not known)'],
  ['connected = false AND last_seen_at < "2026-11-01T00:00:00Z"', 'offline, no data since 1 November'],
  ['NOT EXISTS tags.site', 'without a site tag'],
  ['name >= "pump-" AND name < "pump-~"', 'names starting with pump-'],
];
