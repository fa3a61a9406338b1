import type { DeviceState } from './api';
import { ApiError } from './errors';

/**
 * A device's state in the console (fleet-state.md §3): desired, reported and the delta side by
 * side, the desired keys edited as JSON values and sent as one versioned PATCH of the differences,
 * and a 409 (someone changed the desired state meanwhile) shown as a conflict, never overwritten.
 */

/** The API's rules of a state document (lambdas/schemas/state.ts): the form says what the API would. */
export const STATE_DOCUMENT_MAX_BYTES = 16 * 1024;
export const STATE_DEPTH_MAX = 8;
export const STATE_KEY_PATTERN = /^[A-Za-z0-9-][A-Za-z0-9_-]{0,63}$/;
export const STATE_KEY_HINT = 'A key is 1 to 64 letters, digits, _ or -, not starting with _ (nor @ or #).';

/** What is wrong with a state key, or undefined. */
export const checkStateKey = (key: string): string | undefined => (STATE_KEY_PATTERN.test(key) ? undefined : STATE_KEY_HINT);

/** Deep equality of two JSON values (the order of an object's keys does not matter), as the API's delta compares. */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => jsonEqual(v, (b as unknown[])[i]));
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return (
    ka.length === kb.length && ka.every((k) => Object.hasOwn(b as object, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
};

/** How deep a JSON value nests: a scalar 0, an object or array one more than its deepest member. */
export const depthOf = (value: unknown): number =>
  value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value as object).map(depthOf)) : 0;

const bytesOf = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

const byKey = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true });

/** Where one key stands: set on both sides and equal (`applied`), desired and not reported as such (`pending`), or only reported. */
export type KeyStanding = 'applied' | 'pending' | 'reported_only';

/** One key of the side-by-side view. */
export interface StateRow {
  key: string;
  /** Absent: the key is not desired. */
  desired?: { value: unknown; at?: string };
  /** Absent: the device reports no such key. */
  reported?: { value: unknown; at?: string };
  standing: KeyStanding;
}

/** Every key of either side, by key, with where it stands (the delta's keys are `pending`, as the API computed them). */
export const stateRows = (state: DeviceState): StateRow[] =>
  [...new Set([...Object.keys(state.desired), ...Object.keys(state.reported)])].sort(byKey).map((key) => {
    const desired = Object.hasOwn(state.desired, key) ? { value: state.desired[key], at: state.desired_at[key] } : undefined;
    const reported = Object.hasOwn(state.reported, key) ? { value: state.reported[key], at: state.reported_at[key] } : undefined;
    const standing: KeyStanding = !desired ? 'reported_only' : Object.hasOwn(state.delta, key) ? 'pending' : 'applied';
    return { key, ...(desired ? { desired } : {}), ...(reported ? { reported } : {}), standing };
  });

/** A JSON value in a line, cut at `max` characters. */
export const jsonText = (value: unknown, max = 120) => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** A desired key as edited: its key and value (JSON text) as typed, and the key it had when loaded ('' for a new one). */
export interface DesiredRow {
  key: string;
  text: string;
  was: string;
}

/** The desired document as rows, by key, each value as JSON text. */
export const desiredRows = (desired: Record<string, unknown>): DesiredRow[] =>
  Object.keys(desired)
    .sort(byKey)
    .map((key) => ({ key, text: JSON.stringify(desired[key]), was: key }));

export type ValueInput = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Reads a desired value typed by a person: any JSON value (`60`, `"eco"`, `true`, `{"a": 1}`,
 * `[1, 2]`). Not `null` (which removes a key: the row's Remove does), not empty; a bare word is
 * said to need quotes.
 */
export const parseJsonValue = (text: string): ValueInput => {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, error: 'Give a value: a number, "text" in quotes, true or false, an object or an array.' };
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return {
      ok: false,
      error: /^[A-Za-z_][\w.-]*$/.test(trimmed) ? `Not JSON: text goes in quotes, "${trimmed}".` : `Not valid JSON: ${jsonText(trimmed, 40)}.`,
    };
  }
  if (value === null) return { ok: false, error: 'null removes a key: use Remove instead.' };
  if (1 + depthOf(value) > STATE_DEPTH_MAX)
    return { ok: false, error: `Nested too deep: the state nests at most ${STATE_DEPTH_MAX} levels (the document is the first).` };
  return { ok: true, value };
};

/** What is wrong with each row (by index), and with the whole (its size), as the API would say it. */
export const checkDesiredRows = (rows: readonly DesiredRow[]): { rows: Record<number, string>; whole?: string } => {
  const errors: Record<number, string> = {};
  const seen = new Set<string>();
  const document: Record<string, unknown> = {};
  rows.forEach((row, i) => {
    const key = row.key.trim();
    const parsed = parseJsonValue(row.text);
    const keyError = checkStateKey(key);
    if (keyError) errors[i] = keyError;
    else if (seen.has(key)) errors[i] = `The key ${key} is there twice.`;
    else if (!parsed.ok) errors[i] = parsed.error;
    else document[key] = parsed.value;
    seen.add(key);
  });
  const bytes = bytesOf(document);
  return {
    rows: errors,
    ...(bytes > STATE_DOCUMENT_MAX_BYTES ? { whole: `The desired state is ${bytes} bytes as JSON; at most ${STATE_DOCUMENT_MAX_BYTES} are allowed.` } : {}),
  };
};

/**
 * The PATCH body's `desired` that turns `original` into the rows: each new or changed value (by
 * deep equality), and `null` for each key no row keeps (removed, or renamed). Rows that do not
 * parse are left out (the form sends nothing while one is wrong). Empty: nothing to send.
 */
export const desiredPatch = (original: Record<string, unknown>, rows: readonly DesiredRow[]): Record<string, unknown> => {
  const patch: Record<string, unknown> = {};
  const keys = new Set(rows.map((r) => r.key.trim()));
  for (const key of Object.keys(original)) if (!keys.has(key)) patch[key] = null;
  for (const row of rows) {
    const key = row.key.trim();
    const parsed = parseJsonValue(row.text);
    if (parsed.ok && !(Object.hasOwn(original, key) && jsonEqual(original[key], parsed.value))) patch[key] = parsed.value;
  }
  return patch;
};

/** Whether the rows say something else than `original` (typed text that does not parse counts as a change). */
export const rowsChanged = (original: Record<string, unknown>, rows: readonly DesiredRow[]) =>
  Object.keys(desiredPatch(original, rows)).length > 0 || rows.some((r) => !parseJsonValue(r.text).ok);

/** A merge as the API does it: each key set, `null` removing it. */
export const mergeDesired = (desired: Record<string, unknown>, patch: Record<string, unknown>) => {
  const merged = { ...desired };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
};

/**
 * A 400 of a desired PATCH, by row: a detail naming `body.desired.<key>` (or `desired.<key>`) goes
 * next to the row of that key (a removed key has none: it goes to the whole); any other detail, or
 * the message without details, to the whole form.
 */
export const desiredErrorsOf = (error: unknown, rows: readonly DesiredRow[]): { rows: Record<number, string>; whole: string[] } => {
  const out = { rows: {} as Record<number, string>, whole: [] as string[] };
  if (!(error instanceof ApiError) || error.status !== 400) return out;
  for (const detail of error.details) {
    const key = /^(?:body\.)?desired\.([^.]+)/.exec(detail.field)?.[1];
    const row = key === undefined ? -1 : rows.findIndex((r) => r.key.trim() === key);
    if (row >= 0) out.rows[row] = out.rows[row] ? `${out.rows[row]} ${detail.message}` : detail.message;
    else out.whole.push(detail.field ? `${detail.field.replace(/^body\./, '')}: ${detail.message}` : detail.message);
  }
  if (!error.details.length) out.whole.push(error.message);
  return out;
};

/** One key of a conflict: what it was when the edit began, what the person made it (null: removed), and what it is now. */
export interface ConflictKey {
  key: string;
  /** Undefined: absent. */
  base: unknown;
  yours: unknown;
  /** Undefined: absent now. */
  now: unknown;
  /** Someone else changed this key meanwhile. */
  theirs: boolean;
}

/** A save refused with a 409: the state the edit began from, the changes it would have sent, and the state now. */
export interface Conflict {
  fromVersion: number;
  toVersion: number;
  keys: ConflictKey[];
  /** Keys someone else changed meanwhile that the person did not touch (kept as they are now). */
  others: string[];
}

/** What a 409 means, key by key: the person's changes beside the desired state the page has read again. */
export const conflictOf = (base: DeviceState, patch: Record<string, unknown>, now: DeviceState): Conflict => {
  const changedByOthers = [...new Set([...Object.keys(base.desired), ...Object.keys(now.desired)])]
    .filter((key) => !jsonEqual(base.desired[key], now.desired[key]))
    .sort(byKey);
  return {
    fromVersion: base.version,
    toVersion: now.version,
    keys: Object.keys(patch)
      .sort(byKey)
      .map((key) => ({ key, base: base.desired[key], yours: patch[key], now: now.desired[key], theirs: changedByOthers.includes(key) })),
    others: changedByOthers.filter((key) => !Object.hasOwn(patch, key)),
  };
};

/** The rows of the desired state now with the person's changes on top (sent only when they save again, over the new version). */
export const rebasedRows = (now: Record<string, unknown>, patch: Record<string, unknown>): DesiredRow[] => {
  const rows = desiredRows(mergeDesired(now, patch));
  // a key kept from the state now keeps its `was`; a new one has none
  return rows.map((row) => ({ ...row, was: Object.hasOwn(now, row.key) ? row.key : '' }));
};

/**
 * Checks a fleet-wide desired document (already a JSON object): at least one key, each key by the
 * rules, `null` allowed (it removes the key), its nesting and size. Answers the problems as
 * `<key>: what is wrong`, empty when it may be sent.
 */
export const checkFleetDesired = (desired: Record<string, unknown>): string[] => {
  const problems: string[] = [];
  if (!Object.keys(desired).length) problems.push('Give at least one key.');
  for (const [key, value] of Object.entries(desired)) {
    const keyError = checkStateKey(key);
    if (keyError) problems.push(`${key || '(empty key)'}: ${keyError}`);
    else if (1 + depthOf(value) > STATE_DEPTH_MAX) problems.push(`${key}: nested too deep (at most ${STATE_DEPTH_MAX} levels, the document the first).`);
  }
  const bytes = bytesOf(desired);
  if (bytes > STATE_DOCUMENT_MAX_BYTES) problems.push(`The desired keys are ${bytes} bytes as JSON; at most ${STATE_DOCUMENT_MAX_BYTES} are allowed.`);
  return problems;
};

/** The desired keys of a state rollout in a line: "interval, mode" (a removed key with its "(removed)"). */
export const desiredKeysText = (desired: Record<string, unknown> | undefined) =>
  Object.keys(desired ?? {})
    .sort(byKey)
    .map((key) => (desired![key] === null ? `${key} (removed)` : key))
    .join(', ');
