import { isDeepStrictEqual } from 'node:util';
import { ValidationError, type ErrorDetail } from '../../shared/errors';
import { valueNesting } from '../../shared/json';
import { STATE_DEPTH_MAX, STATE_DOCUMENT_MAX_BYTES, STATE_KEY_PATTERN, STATE_KEY_RULE } from '../../schemas/state';

/** One side of a device's state (desired or reported): key → any JSON. */
export type StateDocument = Record<string, unknown>;
/** A change of one side: each value sets its key, each null removes it. */
export type StateChanges = Record<string, unknown>;

// DynamoDB's number range (1E-130 to 9.9999999999999999999999999999999999999E+125 in magnitude,
// and 0): the state is stored as maps on the device item, so a number past it could not be.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html#HowItWorks.DataTypes.Number
const NUMBER_MIN = 1e-130;
const NUMBER_MAX = 9.99e125;
const NUMBER_RULE = 'Numbers must be 0 or within 1e-130 and 9.99e125 in magnitude (what the store keeps).';

/** The first thing inside a key's value that the store could not keep (a number past its range, an empty key), or undefined. */
const valueProblem = (value: unknown): string | undefined => {
  if (typeof value === 'number') {
    const magnitude = Math.abs(value);
    return magnitude !== 0 && (magnitude < NUMBER_MIN || magnitude > NUMBER_MAX) ? NUMBER_RULE : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    if (!Array.isArray(value) && key === '') return 'Keys inside a value must not be empty.';
    const problem = valueProblem(child);
    if (problem) return problem;
  }
  return undefined;
};

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

const fail = (field: string, message: string): never => {
  const details: ErrorDetail[] = [{ field, message }];
  throw new ValidationError(`Invalid state: ${field}.`, { details });
};

/**
 * Checks a change of one side of a device's state (spec/fleet-state.md §3): a JSON object of at
 * most 16 KB, nesting at most 8 deep (the object itself is level 1), each key 1–64 of
 * `[A-Za-z0-9_-]` not starting with `_`, each value a JSON value the store keeps (null removes).
 * `field` names the side as the caller sent it (`body.desired`, `value.reported`).
 * @throws ValidationError naming `<field>.<key>` (or `<field>` for the whole document's size).
 */
export const validateChanges = (changes: unknown, field: string): StateChanges => {
  if (changes === null || typeof changes !== 'object' || Array.isArray(changes)) return fail(field, 'Must be a JSON object of keys to set (null removes one).');
  for (const [key, value] of Object.entries(changes)) {
    if (!STATE_KEY_PATTERN.test(key)) fail(`${field}.${key}`, `${STATE_KEY_RULE}.`);
    // The key's value is level 2 of the document.
    if (valueNesting(value, STATE_DEPTH_MAX) > STATE_DEPTH_MAX - 1) fail(`${field}.${key}`, `A state document nests at most ${STATE_DEPTH_MAX} levels deep.`);
    const problem = valueProblem(value);
    if (problem) fail(`${field}.${key}`, problem);
  }
  const bytes = bytesOf(changes);
  if (bytes > STATE_DOCUMENT_MAX_BYTES) fail(field, `A state document is at most ${STATE_DOCUMENT_MAX_BYTES} bytes of JSON; this one is ${bytes}.`);
  return changes as StateChanges;
};

/**
 * A side after a change (a top-level merge: null removes a key, any other value sets it), with the
 * time each key was set. Checked as a whole: at most 16 KB of JSON.
 * @throws ValidationError naming `field` when the merge would leave more than 16 KB.
 */
export const mergeChanges = (current: StateDocument, times: Record<string, string>, changes: StateChanges, at: string, field: string) => {
  const document: StateDocument = { ...current };
  const at_: Record<string, string> = { ...times };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) {
      delete document[key];
      delete at_[key];
    } else if (!isDeepStrictEqual(document[key], value) || !(key in at_)) {
      document[key] = value;
      at_[key] = at;
    }
  }
  const bytes = bytesOf(document);
  if (bytes > STATE_DOCUMENT_MAX_BYTES) fail(field, `A state document is at most ${STATE_DOCUMENT_MAX_BYTES} bytes of JSON; the change would leave ${bytes}.`);
  return { document, times: at_ };
};

/** How many state rollouts a key names at most (the oldest drops first): one value set again by rollout after rollout. */
const ROLLOUTS_PER_KEY = 8;

/**
 * The state rollouts behind each desired key after a change: a key given another value (or removed
 * where it was set) is held by `by` alone, or by none for a per-device change; a key given the value
 * it holds (or removed where it was absent) keeps its rollouts, and gains `by`. Pure.
 */
export const desiredByAfter = (desired: StateDocument, desiredBy: Record<string, string[]> = {}, changes: StateChanges, by?: string) => {
  const next = { ...desiredBy };
  for (const [key, value] of Object.entries(changes)) {
    const same = value === null ? !(key in desired) : isDeepStrictEqual(desired[key], value);
    const kept = same ? (next[key] ?? []) : [];
    const held = by ? [...kept.filter((id) => id !== by), by].slice(-ROLLOUTS_PER_KEY) : kept;
    if (held.length) next[key] = held;
    else delete next[key];
  }
  return next;
};

/** The keys whose value differs between two versions of a side: each with its new value, null for one removed. */
export const changedKeys = (before: StateDocument = {}, after: StateDocument = {}): StateChanges => {
  const changed: StateChanges = {};
  for (const [key, value] of Object.entries(after)) if (!isDeepStrictEqual(before[key], value)) changed[key] = value;
  for (const key of Object.keys(before)) if (!(key in after)) changed[key] = null;
  return changed;
};

/** The delta: every desired key whose value is not deep-equal to the reported one (a key never reported included). */
export const deltaOf = (desired: StateDocument = {}, reported: StateDocument = {}): StateDocument =>
  Object.fromEntries(Object.entries(desired).filter(([key, value]) => !(key in reported) || !isDeepStrictEqual(value, reported[key])));
