import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import {
  DUE_TIMERS_PER_READ,
  deleteTimer,
  dueTimerOf,
  moveTimer,
  openConditionStart,
  readDueTimers,
  timerStillThere,
  type AlarmTimer,
  type DueTimer,
  type TimedDevice,
} from '../../stores/alarm-timer-store';
import { ALARM_TIMER_PARTITIONS } from '../../stores/keys';
import { dueBackfillOf, isBackfillEntry } from '../../stores/alarm-backfill-store';
import { listDueEntries, type SweepEntry } from '../../stores/sweep-store';
import { runBackfill } from './backfill';
import { conditionOpenId, type DetectedRule, type DetectionDeps } from './detection';

export { conditionOpenId } from './detection';
import { silentSince } from './silent-tags';
import { thresholdOpenId } from './threshold';

/** What one run of the alarm sweep did. */
export interface AlarmSweepSummary {
  /** Due timers read. */
  due: number;
  /** Alarms it asked to open (an alarm already open, or a retried run, opens nothing more). */
  opened: number;
  /** Alarms it asked to close (a `silent` rule's, at the device's next point). */
  closed: number;
  /** Timers moved on (a `silent` rule's device that published meanwhile). */
  moved: number;
  /** Devices read by rules' backfills (domain/alarms/backfill.ts). */
  backfilled: number;
}

/**
 * How long a `silent` rule's open alarm waits between looks at its device: less than the sweep's
 * minute, so that each run looks (EventBridge starts runs about a minute apart, not to the
 * millisecond), and the alarm closes at the first run after the device's next point (within 60 s).
 */
export const SILENT_WATCH_MS = 45_000;

// Partitions read at once, and due timers handled at once in each (writes in flight: their product).
const PARTITION_CONCURRENCY = 8;
const TIMER_CONCURRENCY = 8;

const ms = (iso: string) => Date.parse(iso);

/** A due timer, read: its timer, its device, and the rule it serves. */
interface Visit<R extends DetectedRule> {
  due: DueTimer;
  timer: AlarmTimer;
  device: TimedDevice;
  rule: R;
}

const placeOf = ({ due, device }: Visit<DetectedRule>) => ({ workspace_id: due.workspaceId, fleet_id: device.fleet_id, device_id: due.deviceId });

/**
 * An `offline` rule's due timer: a device still disconnected `for_seconds` after it disconnected
 * (its `last_disconnected_at`, so a timer that lagged a later disconnection waits for that one)
 * opens its alarm, once per disconnection (the transition ID names it); one that reconnected ends
 * the timer. A reconnection while it opened (the timer deleted meanwhile by the stream's
 * `connected` change) is read again and closes what it opened.
 */
const visitOffline = async <R extends DetectedRule>(deps: DetectionDeps<R>, visit: Visit<R>, now: number, summary: AlarmSweepSummary) => {
  const { due, device, rule } = visit;
  if (device.connected !== false) {
    await deleteTimer(deps.db, due.deviceId, due.ruleId, { seen: due.seen });
    return;
  }
  const since = device.last_disconnected_at ?? visit.timer.since;
  const dueAt = ms(since) + rule.for_seconds * 1000;
  if (dueAt > now) {
    if (await moveTimer(deps.db, due, dueAt, { since })) summary.moved += 1;
    return;
  }
  await deps.open(rule, placeOf(visit), { details: { disconnected_at: since }, transitionId: `offline:${rule.id}:${due.deviceId}:${since}` });
  summary.opened += 1;
  if (await deleteTimer(deps.db, due.deviceId, due.ruleId, { seen: due.seen })) return;
  // The stream's reconnection took the timer meanwhile: its close may have come before this open.
  const [again] = await readDueTimers(deps.db, [due]);
  if (again.device?.connected && again.device.last_connected_at)
    await deps.close(rule.id, due.deviceId, {
      transitionId: offlineCloseId(rule.id, due.deviceId, again.device.last_connected_at),
      details: { connected_at: again.device.last_connected_at },
    });
};

/** The transition ID of an offline alarm's close at a reconnection (the stream's and the sweep's are the same). */
export const offlineCloseId = (ruleId: string, deviceId: string, connectedAt: string) => `offline-closed:${ruleId}:${deviceId}:${connectedAt}`;

/**
 * A `silent` rule's due timer. Waiting: the device's `last_seen_at` moved past the timer's start
 * (it published meanwhile) → the timer moves to `last_seen_at + for_seconds` (so points cost no
 * write: the ingest's `last_seen_at` is written at most once a minute, and the timer moves once per
 * `for_seconds`); else the alarm opens and the timer watches, a minute ahead at a time. Watching:
 * a point since → the alarm closes and the timer waits again from that point.
 */
const visitSilent = async <R extends DetectedRule>(deps: DetectionDeps<R>, visit: Visit<R>, now: number, summary: AlarmSweepSummary) => {
  const { due, device, rule, timer } = visit;
  // On the rule's tag when it names one (a tag never published on: from the timer's start).
  const last = silentSince(rule, device) ?? timer.since;
  const wait = ms(last) + rule.for_seconds * 1000;
  if (timer.watching === 'close') {
    if (ms(last) > ms(timer.since)) {
      await deps.close(rule.id, due.deviceId, { transitionId: `silent-closed:${rule.id}:${due.deviceId}:${last}`, details: { seen_at: last } });
      summary.closed += 1;
      if (await moveTimer(deps.db, due, wait, { since: last })) summary.moved += 1;
    } else await moveTimer(deps.db, due, now + SILENT_WATCH_MS, { since: timer.since, watching: 'close' });
    return;
  }
  if (wait > now) {
    if (await moveTimer(deps.db, due, wait, { since: last })) summary.moved += 1;
    return;
  }
  await deps.open(rule, placeOf(visit), { details: { last_seen_at: last }, transitionId: `silent:${rule.id}:${due.deviceId}:${last}` });
  summary.opened += 1;
  await moveTimer(deps.db, due, now + SILENT_WATCH_MS, { since: last, watching: 'close' });
};

/** A `condition` rule's due timer: the condition still open (its device's pointer by uuid) opens the alarm, once per condition. */
const visitCondition = async <R extends DetectedRule>(deps: DetectionDeps<R>, visit: Visit<R>, summary: AlarmSweepSummary) => {
  const { due, rule, timer } = visit;
  const uuid = timer.condition_uuid!;
  // Open still, and the same opening (a uuid opened again starts another timer).
  if ((await openConditionStart(deps.db, due.deviceId, uuid)) === timer.since) {
    await deps.open(rule, placeOf(visit), {
      details: { condition_uuid: uuid, start: timer.since },
      transitionId: conditionOpenId(rule.id, due.deviceId, uuid, timer.since),
    });
    summary.opened += 1;
  }
  await deleteTimer(deps.db, due.deviceId, due.ruleId, { seen: due.seen });
};

/**
 * A `threshold` rule's due timer: no point back on the good side deleted it for `for_seconds`
 * (every point since its start breached), so the alarm opens, once per crossing (the transition ID
 * names the point that started it), in a transaction that holds the timer to be still the one read
 * (a point that deleted it meanwhile wins); then the timer ends. The ingest may open it first, at
 * a later point: the same transition.
 */
const visitThreshold = async <R extends DetectedRule>(deps: DetectionDeps<R>, visit: Visit<R>, summary: AlarmSweepSummary) => {
  const { due, rule, timer } = visit;
  const details = timer.details ?? {};
  await deps.open(rule, placeOf(visit), {
    details,
    transitionId: thresholdOpenId(rule.id, due.deviceId, timer.since, details.timestamp),
    requires: [timerStillThere(deps.db, due.deviceId, due.ruleId, { seen: due.seen })],
  });
  summary.opened += 1;
  await deleteTimer(deps.db, due.deviceId, due.ruleId, { seen: due.seen });
};

/** Handles up to {@link DUE_TIMERS_PER_READ} due timers: one read of their timers and devices, then each. */
const visitChunk = async <R extends DetectedRule>(deps: DetectionDeps<R>, chunk: DueTimer[], summary: AlarmSweepSummary, clock: () => number) => {
  const read = await readDueTimers(deps.db, chunk);
  summary.due += chunk.length;
  const results = await settleAll(read, TIMER_CONCURRENCY, async ({ due, timer, device }) => {
    // Deleted or moved since the index showed it (its new entry comes on its own).
    if (!timer || timer.sweep_sk !== due.seen) return;
    const rules = device ? await deps.rules({ account_id: timer.account_id, workspace_id: due.workspaceId }) : [];
    const rule = rules.find((r) => r.id === due.ruleId);
    // A device or rule gone, or a rule disabled or changed: the timer has nothing to wait for.
    if (!device || !rule?.enabled || rule.kind !== timer.kind) {
      await deleteTimer(deps.db, due.deviceId, due.ruleId, { seen: due.seen });
      return;
    }
    const visit = { due, timer, device, rule };
    const now = clock();
    if (rule.kind === 'offline') await visitOffline(deps, visit, now, summary);
    else if (rule.kind === 'silent') await visitSilent(deps, visit, now, summary);
    else if (rule.kind === 'condition') await visitCondition(deps, visit, summary);
    else if (rule.kind === 'threshold') await visitThreshold(deps, visit, summary);
  });
  results.forEach((result, i) => {
    if (result.status === 'rejected')
      logger.error('an alarm timer could not be handled; the next run goes on', {
        error: result.reason as Error,
        device: chunk[i].deviceId,
        rule: chunk[i].ruleId,
      });
  });
};

/** An index entry as one run knows it: its item and when it was due (a moved timer is a new entry). */
const entryKey = (entry: SweepEntry) => `${entry.pk}|${entry.sk}|${entry.due}`;

/**
 * Reads one partition's due timers a page at a time (a page per BatchGetItem), until read or the
 * deadline, leaving out the entries this run has already handled (`handled`, which it adds to).
 */
const sweepPartition = async <R extends DetectedRule>(
  deps: DetectionDeps<R>,
  partition: string,
  budget: { now: number; deadline: number },
  run: { summary: AlarmSweepSummary; handled: Set<string>; clock: () => number },
) => {
  const { summary, handled, clock } = run;
  for await (const page of listDueEntries(deps.db, { partition, before: budget.now, pageSize: DUE_TIMERS_PER_READ })) {
    const fresh = page.filter((entry) => !handled.has(entryKey(entry)));
    for (const entry of fresh) handled.add(entryKey(entry));
    const timers = fresh.filter((entry) => !isBackfillEntry(entry));
    if (timers.length) await visitChunk(deps, timers.map(dueTimerOf), summary, clock);
    for (const entry of fresh.filter(isBackfillEntry)) {
      if (clock() >= budget.deadline) return;
      try {
        summary.backfilled += (await runBackfill(deps, dueBackfillOf(entry), budget.deadline)).devices;
      } catch (error) {
        logger.error('an alarm rule’s backfill failed a page; the next run does it again', { error: error as Error, entry: entry.sk });
      }
    }
    if (clock() >= budget.deadline) return;
  }
};

/**
 * One run of the alarm sweep (DESIGN §16), within `budget` (the minute sweep's): reads the alarm
 * timers due before `budget.now` from the sweep index's timer partitions (never the devices that
 * have none), 50 at a time with their devices in one strongly consistent BatchGetItem, and for each
 * opens, closes, moves or ends it by its kind. Transitions are written once per transition ID and
 * timer changes only over the entry the index showed, so a retried or overlapping run changes
 * nothing twice; a failed timer stays due for the next run.
 *
 * A pass that handled timers is followed by another, of the timers due by then, while time is
 * left: a burst (10,000 devices that disconnected within seconds) is handled as it comes due
 * rather than a minute later, at one Query per partition a pass; a run with nothing new to handle
 * (an idle minute, or only timers that failed already in this run) makes no second pass.
 */
export const sweepAlarmTimers = async <R extends DetectedRule>(deps: DetectionDeps<R>, budget: { now: number; deadline: number }) => {
  const run = { summary: { due: 0, opened: 0, closed: 0, moved: 0, backfilled: 0 }, handled: new Set<string>(), clock: deps.now ?? Date.now };
  for (let before = budget.now; ; before = run.clock()) {
    const handledBefore = run.handled.size;
    const results = await settleAll([...ALARM_TIMER_PARTITIONS], PARTITION_CONCURRENCY, (partition) =>
      sweepPartition(deps, partition, { now: before, deadline: budget.deadline }, run),
    );
    for (const result of results)
      if (result.status === 'rejected') logger.error('reading due alarm timers failed; the next run goes on', { error: result.reason as Error });
    if (run.handled.size === handledBefore || run.clock() >= budget.deadline) return run.summary;
  }
};
