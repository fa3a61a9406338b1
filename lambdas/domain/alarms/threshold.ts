import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import type { AlarmRule } from '../../schemas/alarms';
import type { AlarmRuleRecord } from '../../stores/alarm-rule-store';
import { deleteTimer, putTimerIfAbsent, readThresholdStates, STATES_PER_READ, timerStillThere, type ThresholdState } from '../../stores/alarm-timer-store';
import type { DetectedPlace, DetectionDeps } from './detection';

/**
 * A `threshold` rule's evaluation, point by point, on one device (DESIGN §16): what the container
 * knows of the rule's alarm on the device (its "side"), and the transitions a point makes. The
 * batch's part (which rules, which points, the reads of what is not known) is threshold-ingest.ts.
 */

/** A threshold rule as the evaluation reads it: the stored rule (its `field`, `op` and `value` set). */
export type ThresholdRule = AlarmRuleRecord;

/**
 * What a container knows of a rule's alarm on a device: none open and no timer (`good`), a timer
 * running since the first breaching point (`pending`, `for_seconds` > 0), or an alarm not closed
 * (`open`); and `after`, the arrival (ms) of the newest point evaluated or of what the stored state
 * began with: a point that arrived before it (a retried message, after newer ones) is not evaluated
 * again.
 */
export type Side = { after?: number } & (
  | { side: 'good' }
  | { side: 'pending'; since: string; dueAt: number; details: Record<string, unknown> }
  | { side: 'open' }
);

/** A point's value on a rule's field, with when it was taken and when it arrived. */
export interface ValuedPoint {
  value: number;
  tag: string;
  /** The point's time (its `timestamp_device`). */
  timestamp: string;
  /** Its arrival (the message's `timestamp_in`), in ms and as it reads. */
  arrived: number;
  arrivedAt: string;
}

/** Whether `value` `op` `bound` (`>`, `>=`, `<`, `<=`). */
export const holds = (value: number, op: NonNullable<AlarmRule['op']>, bound: number) =>
  op === '>' ? value > bound : op === '>=' ? value >= bound : op === '<' ? value < bound : value <= bound;

/** Whether a point breaches the rule (`field` `op` `value`). */
export const breaches = (rule: ThresholdRule, value: number) => holds(value, rule.op!, rule.value!);

/** Whether a point ends the rule's open alarm: on the other side of `clear_value` (default `value`). */
export const clears = (rule: ThresholdRule, value: number) => !holds(value, rule.op!, rule.clear_value ?? rule.value!);

/** The transition ID of a threshold alarm's open: once per crossing (the point that started it: its arrival and its time). */
export const thresholdOpenId = (ruleId: string, deviceId: string, since: string, timestamp: unknown) =>
  `threshold:${ruleId}:${deviceId}:${since}:${String(timestamp)}`;

/** The transition ID of a threshold alarm's close: the point that cleared it. */
export const thresholdCloseId = (ruleId: string, deviceId: string, point: ValuedPoint) =>
  `threshold-closed:${ruleId}:${deviceId}:${point.arrivedAt}:${point.timestamp}`;

/** The side stored state tells (an alarm not closed first: its guard is the truth). */
export const sideOfState = (state: ThresholdState): Side => {
  if (state.open) return { side: 'open', ...(state.opened_at ? { after: Date.parse(state.opened_at) } : {}) };
  if (state.timer) {
    const since = Date.parse(state.timer.since);
    return { side: 'pending', since: state.timer.since, dueAt: Date.parse(state.timer.due_at), details: state.timer.details ?? {}, after: since };
  }
  return { side: 'good' };
};

/** What opening, closing and timing need: the detection's transitions and the registry. */
export type ThresholdDeps = Pick<DetectionDeps<ThresholdRule>, 'db' | 'open' | 'close'>;

/** The rule and the device a point is evaluated on. */
export interface Evaluated {
  rule: ThresholdRule;
  place: DetectedPlace & { account_id: string };
}

/** What the alarm's details say of a point that opened it. */
const detailsOf = (rule: ThresholdRule, point: ValuedPoint) => ({
  field: rule.field,
  value: point.value,
  tag: point.tag,
  timestamp: point.timestamp,
  arrived_at: point.arrivedAt,
});

/** Opens a pending alarm whose `for_seconds` has passed (the sweep may have: the same transition), while its timer is there; then ends the timer. */
const openPending = async (deps: ThresholdDeps, { rule, place }: Evaluated, side: Extract<Side, { side: 'pending' }>) => {
  const timer = { since: side.since };
  await deps.open(rule, place, {
    details: side.details,
    transitionId: thresholdOpenId(rule.id, place.device_id, side.since, side.details.timestamp),
    requires: [timerStillThere(deps.db, place.device_id, rule.id, timer)],
  });
  await deleteTimer(deps.db, place.device_id, rule.id, timer);
};

/** A breaching point where none was: opens at once (`for_seconds` 0), or starts the timer (its start: this point's arrival). */
const startBreach = async (deps: ThresholdDeps, { rule, place }: Evaluated, point: ValuedPoint): Promise<Side | undefined> => {
  const details = detailsOf(rule, point);
  if (rule.for_seconds === 0) {
    await deps.open(rule, place, { details, transitionId: thresholdOpenId(rule.id, place.device_id, point.arrivedAt, point.timestamp) });
    return { side: 'open' };
  }
  const dueAt = point.arrived + rule.for_seconds * 1000;
  const timer = { workspace_id: place.workspace_id, account_id: place.account_id, device_id: place.device_id, rule_id: rule.id, since: point.arrivedAt };
  const started = await putTimerIfAbsent(deps.db, { ...timer, kind: 'threshold', details }, dueAt);
  // Another's timer (another container's point): not known, read again at the next point.
  return started ? { side: 'pending', since: point.arrivedAt, dueAt, details } : undefined;
};

/**
 * One point of a rule on a device: the transitions it makes from what is known (`side`), written
 * before the new side is answered (undefined: not known any more, to be read again). Writes only
 * at a crossing:
 * - `pending` and the point arrived `for_seconds` after the timer's start → the alarm opens (every
 *   point since breached), and the point goes on as `open`;
 * - `good` and the point breaches → opens (`for_seconds` 0) or starts a timer;
 * - `pending` and the point does not breach (before `for_seconds`) → the timer is deleted;
 * - `open` and the point is past `clear_value` → closes.
 * @throws when a transition fails: the point's message is retried, and the transition IDs keep
 * the retry from writing anything twice.
 */
const step = async (deps: ThresholdDeps, evaluated: Evaluated, side: Side, point: ValuedPoint): Promise<Side | undefined> => {
  const { rule, place } = evaluated;
  let now = side;
  if (now.side === 'pending' && point.arrived >= now.dueAt) {
    await openPending(deps, evaluated, now);
    now = { side: 'open' };
  }
  if (now.side === 'good') return breaches(rule, point.value) ? startBreach(deps, evaluated, point) : now;
  if (now.side === 'pending') {
    if (breaches(rule, point.value)) return now;
    // Deleted: no alarm will open. Not there: the sweep took it (opened): read it again.
    return (await deleteTimer(deps.db, place.device_id, rule.id, { since: now.since })) ? { side: 'good' } : undefined;
  }
  if (!clears(rule, point.value)) return now;
  await deps.close(rule.id, place.device_id, {
    transitionId: thresholdCloseId(rule.id, place.device_id, point),
    details: { closed_value: point.value, closed_timestamp: point.timestamp, closed_arrived_at: point.arrivedAt },
  });
  return { side: 'good' };
};

/**
 * One point of a rule on a device, unless it arrived before the newest one evaluated (see
 * {@link Side}): {@link step}, its side then `after` the point.
 */
export const evaluatePoint = async (deps: ThresholdDeps, evaluated: Evaluated, side: Side, point: ValuedPoint): Promise<Side | undefined> => {
  if (side.after !== undefined && point.arrived < side.after) return side;
  const next = await step(deps, evaluated, side, point);
  return next && { ...next, after: Math.max(point.arrived, next.after ?? point.arrived) };
};

/** How long a container relies on the side it knows of a rule on a device: another container's transitions are seen within this. */
export const THRESHOLD_SIDE_MS = 60_000;

/** Rules on devices whose side a container remembers at most (about 300 bytes each). */
const SIDES_MAX = 100_000;

/**
 * A container's memory of sides, by rule (as changed last: a change of the rule forgets them) and
 * device, each for `ttlMs`: a device it does not know (its first point here, or a minute later)
 * costs one read of its stored state, shared by 50 in a batch ({@link readSides}).
 */
export const thresholdSides = ({ ttlMs = THRESHOLD_SIDE_MS, max = SIDES_MAX, now }: { ttlMs?: number; max?: number; now?: () => number } = {}) => {
  const sides = new LRUCache<string, Side>({ max, ttl: ttlMs, ...(now ? { perf: { now }, ttlResolution: 0 } : {}) });
  const keyOf = (rule: ThresholdRule, deviceId: string) => `${rule.id}@${rule.updated_at}\n${deviceId}`;
  return {
    get: (rule: ThresholdRule, deviceId: string) => sides.get(keyOf(rule, deviceId)),
    set: (rule: ThresholdRule, deviceId: string, side: Side | undefined) =>
      side ? void sides.set(keyOf(rule, deviceId), side) : void sides.delete(keyOf(rule, deviceId)),
  };
};

/** What `thresholdSides` returns. */
export type ThresholdSides = ReturnType<typeof thresholdSides>;

/** Pairs read at once by a batch ({@link readSides}). */
const READ_CONCURRENCY = 4;

/**
 * The sides of rules on devices the container does not know, read from their stored state (guard
 * and timer) {@link STATES_PER_READ} a request, and remembered.
 */
export const readSides = async (db: Db, sides: ThresholdSides, pairs: Array<{ rule: ThresholdRule; deviceId: string }>) => {
  const chunks: (typeof pairs)[] = [];
  for (let i = 0; i < pairs.length; i += STATES_PER_READ) chunks.push(pairs.slice(i, i + STATES_PER_READ));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < chunks.length; i = next++) {
      const chunk = chunks[i];
      const states = await readThresholdStates(
        db,
        chunk.map((p) => ({ ruleId: p.rule.id, deviceId: p.deviceId })),
      );
      for (const [k, p] of chunk.entries()) sides.set(p.rule, p.deviceId, sideOfState(states[k]));
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, chunks.length) }, worker));
};
