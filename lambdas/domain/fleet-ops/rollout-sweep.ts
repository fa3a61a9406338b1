import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import type { JobStatus } from '../../schemas/job';
import { transitionItem } from '../../stores/job-store';
import { DEADLINE_PARTITIONS, ROLLOUT_DUE_PARTITION, ROLLOUT_SORT_KEY_PREFIX } from '../../stores/keys';
import { ROLLOUT_DEVICE_SHARDS, readRolloutDevicesShard, type RolloutDeviceRow } from '../../stores/rollout-device-store';
import { getRollout, type RolloutRecord } from '../../stores/rollout-store';
import { claimOwedRelease, claimRelease, closeQueue, moveNextDeadline, moveSweepEntry, oweRelease } from '../../stores/rollout-update-store';
import { listDueEntries, type SweepEntry } from '../../stores/sweep-store';
import type { Keyed } from '../../stores/items';
import { eventTimestamp } from '../webhooks/events';
import { deadlineOf } from './executions';
import { mergeKeyed } from '../registry/lists';
import { RELEASE_WINDOW_MS, SEAL_AFTER_MS, endContinuous, hasEnded, isReleasing, nextDueOf, sealAndSettle } from './rollouts';
import { releaseDesired } from './state-rollouts';

/** What the minute sweep works with. */
export interface SweepDeps {
  db: Db;
  /** The time (ms since the epoch): `Date.now`, or a test's clock a minute ahead to see releases at once. */
  now?: () => number;
}

/** What one run of the sweep did. */
export interface SweepSummary {
  /** Queued devices released (made `pending`). */
  released: number;
  /** Overdue jobs and FOTA ended as `timed_out`. */
  timedOut: number;
  /** Devices of canceled or aborted rollouts ended as `canceled`. */
  canceled: number;
}

/** The bounds of one run: its start, and when it stops starting work. */
export interface SweepBudget {
  now: number;
  deadline: number;
}

/**
 * How far ahead a run looks for releases, and waits for them: EventBridge starts a rate rule's runs
 * about a minute apart, not to the millisecond, so a release due a second after a run starts would
 * otherwise wait a whole minute more (halving the rate). A run waits for a release due within this,
 * if its budget allows.
 */
export const RELEASE_LOOKAHEAD_MS = 15_000;

/**
 * How long a release may still be writing after its claim (the sweep's timeout): a canceled
 * rollout's devices are looked for again until then, so that none a late release made pending stays so.
 */
const RELEASE_RUNS_MS = 70_000;

// Writes in flight: one item each (conditional updates), so that a run ends each within its budget.
export const DEVICE_CONCURRENCY = 32;
// A continuous rollout without a rate releases what it queued while paused, this many per run at most.
const CONTINUOUS_RELEASE_MAX = 10_000;
const ROLLOUT_CONCURRENCY = 4;
const PARTITION_CONCURRENCY = 4;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `task` on each item of `source` until it ends, `limit` items were taken, or `deadline`
 * passes, `concurrency` at once; resolves with how many tasks answered true.
 */
const eachUntil = async <T>(
  source: AsyncIterable<T>,
  task: (item: T) => Promise<boolean>,
  { concurrency, deadline, limit = Infinity, now }: { concurrency: number; deadline: number; limit?: number; now: () => number },
) => {
  const iterator = source[Symbol.asyncIterator]();
  let taken = 0;
  let done = 0;
  let exhausted = false;
  // One reader at a time: the workers share the iterator.
  let reading: Promise<unknown> = Promise.resolve();
  const next = () => {
    const read = reading.then(() => (exhausted || taken >= limit || now() >= deadline ? ({ done: true, value: undefined } as const) : iterator.next()));
    reading = read.catch(() => undefined);
    return read;
  };
  const worker = async () => {
    for (;;) {
      const item = await next();
      if (item.done) {
        exhausted = true;
        return;
      }
      taken += 1;
      if (await task(item.value)) done += 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await iterator.return?.();
  }
  return done;
};

async function* entriesOf(pages: AsyncIterable<SweepEntry[]>): AsyncGenerator<SweepEntry> {
  for await (const page of pages) yield* page;
}

/** The device ID of an item key `DEV#<id>`. */
const deviceOfKey = (pk: string) => pk.slice('DEV#'.length);

/**
 * Ends every job and FOTA of no rollout whose deadline has passed (before `now`) as `timed_out`,
 * from the sweep index's deadline partitions: each only if it is still open and its deadline is
 * still the one the index showed (rescheduled, it has another), so a retried or overlapping run
 * changes nothing twice. (A rollout's devices time out by their rollout: `timeOutDevices`.)
 */
const timeOutOverdue = async (db: Db, budget: SweepBudget, now: () => number) => {
  const counts = await settleAll([...DEADLINE_PARTITIONS], PARTITION_CONCURRENCY, (partition) =>
    eachUntil(
      entriesOf(listDueEntries(db, { partition, before: budget.now })),
      async (entry) =>
        (await transitionItem(db, { pk: entry.pk, sk: entry.sk }, deviceOfKey(entry.pk), {
          from: ['pending', 'in_progress'],
          to: 'timed_out',
          at: new Date(now()).toISOString(),
          set: { event_ts: eventTimestamp() },
          // The deadline the index showed, not a later scheduling's; an item of no rollout.
          expect: { sweep_sk: entry.due },
          known: {},
        })) !== undefined,
      { concurrency: DEVICE_CONCURRENCY / PARTITION_CONCURRENCY, deadline: budget.deadline, now },
    ),
  );
  return counts.reduce((sum, r) => {
    if (r.status === 'fulfilled') return sum + r.value;
    logger.error('timing out a deadline partition failed; the next run goes on', { error: r.reason as Error });
    return sum;
  }, 0);
};

/** A rollout's devices in one state (below `before`, when given), every shard merged (snapshot order for queued ones). */
const devicesIn = (
  db: Db,
  rolloutId: string,
  status: JobStatus,
  { pageSize, before }: { pageSize?: number; before?: string } = {},
): AsyncIterable<Keyed<RolloutDeviceRow>> =>
  mergeKeyed(ROLLOUT_DEVICE_SHARDS.map((shard) => readRolloutDevicesShard(db, rolloutId, shard, { status, pageSize, before })));

async function* rowsOf(source: AsyncIterable<Keyed<RolloutDeviceRow>>): AsyncGenerator<RolloutDeviceRow> {
  for await (const { value } of source) yield value;
}

/**
 * Releases the next `count` queued devices of a rollout in snapshot order, at `at`: each becomes
 * pending if it is still queued there. A device that is not (canceled alone, or released already
 * while the index lags) is passed over for the next one, in rounds, so that a release makes `count`
 * devices pending when it can, and never more.
 * @returns how many it released, and whether it found no more queued devices (otherwise, with
 * fewer than `count` released, the run's deadline stopped it short).
 */
const release = async (db: Db, record: RolloutRecord, count: number, at: string, deadline: string | undefined, budget: SweepBudget, now: () => number) => {
  const pageSize = Math.min(1000, Math.ceil(count / ROLLOUT_DEVICE_SHARDS.length) + 16);
  const queued = rowsOf(devicesIn(db, record.id, 'queued', { pageSize }))[Symbol.asyncIterator]();
  const releaseOne = async (row: RolloutDeviceRow) => {
    if (now() >= budget.deadline) return false;
    const released =
      (await transitionItem(db, row.key, row.device_id, {
        from: ['queued'],
        to: 'pending',
        at,
        // Connection states are not read here: a released device is published to, and one that is not connected gets it with its next #status.
        set: { event_ts: eventTimestamp(), deliver_live: true, deadline_at: deadline },
        known: { rollout_id: record.id },
      })) !== undefined;
    // A state rollout's device is pending once released; then its desired keys are set (and it may be done at once).
    if (released && record.kind === 'state')
      await releaseDesired(db, { workspaceId: record.workspace_id, deviceId: row.device_id, rolloutId: record.id, desired: record.value ?? {} });
    return released;
  };
  let released = 0;
  let exhausted = false;
  try {
    while (!exhausted && released < count && now() < budget.deadline) {
      const round: RolloutDeviceRow[] = [];
      while (round.length < count - released) {
        const next = await queued.next();
        if (next.done) {
          exhausted = true;
          break;
        }
        round.push(next.value);
      }
      const results = await settleAll(round, DEVICE_CONCURRENCY, releaseOne);
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      released += results.filter((r) => r.status === 'fulfilled' && r.value).length;
    }
  } finally {
    await queued.return(undefined);
  }
  return { released, exhausted };
};

/** Ends the devices of a rollout in one state (a key range at a time) with `to`, if still in `from` there; how many were. */
const endDevices = (
  db: Db,
  record: RolloutRecord,
  rows: AsyncIterable<RolloutDeviceRow>,
  from: JobStatus[],
  to: JobStatus,
  budget: SweepBudget,
  now: () => number,
  released = false,
) =>
  eachUntil(
    rows,
    async (row) =>
      (await transitionItem(db, row.key, row.device_id, {
        from,
        to,
        at: new Date(now()).toISOString(),
        set: { event_ts: eventTimestamp() },
        known: { rollout_id: record.id },
        // A timeout ends the release the index showed, not a later one.
        ...(released ? { expect: { released_at: row.time } } : {}),
      })) !== undefined,
    { concurrency: DEVICE_CONCURRENCY, deadline: budget.deadline, now },
  );

/**
 * Cancels a canceled or aborted rollout's queued and pending devices (in-progress ones go on); a
 * state rollout's queued ones only (fleet-state.md §3: a released device keeps its desired state,
 * and stays pending until it reports it or times out).
 */
const cancelDevices = async (db: Db, record: RolloutRecord, budget: SweepBudget, now: () => number) => {
  let canceled = 0;
  for (const status of record.kind === 'state' ? (['queued'] as const) : (['queued', 'pending'] as const))
    canceled += await endDevices(db, record, rowsOf(devicesIn(db, record.id, status)), ['queued', 'pending'], 'canceled', budget, now);
  return canceled;
};

/**
 * Times out a rollout's devices released more than its timeout ago and still pending or in
 * progress (their index entries order them by release), then moves the rollout's next deadline to
 * the earliest release left open plus the timeout (none when none is), unless the run stopped
 * short or another run moved it meanwhile.
 */
const timeOutDevices = async (db: Db, record: RolloutRecord, budget: SweepBudget, now: () => number) => {
  const timeout = record.settings.timeout_seconds!;
  const releasedBefore = new Date(now() - timeout * 1000).toISOString();
  let timedOut = 0;
  for (const status of ['pending', 'in_progress'] as const) {
    const overdue = rowsOf(devicesIn(db, record.id, status, { before: `${status}#${releasedBefore}` }));
    timedOut += await endDevices(db, record, overdue, ['pending', 'in_progress'], 'timed_out', budget, now, true);
  }
  if (now() >= budget.deadline) return timedOut;
  const earliest = await Promise.all(
    (['pending', 'in_progress'] as const).flatMap((status) =>
      ROLLOUT_DEVICE_SHARDS.map(async (shard) => {
        for await (const { value } of readRolloutDevicesShard(db, record.id, shard, { status, pageSize: 1 })) return value.time;
        return undefined;
      }),
    ),
  );
  const first = earliest.filter((t): t is string => t !== undefined).sort()[0];
  const next = first === undefined ? undefined : deadlineOf(first, timeout);
  if (await moveNextDeadline(db, record.workspace_id, record.id, record.next_deadline_at, next)) record.next_deadline_at = next;
  return timedOut;
};

/**
 * Does a rollout's due work, from what its item says now (the index may lag): seals it if its
 * scheduling died; cancels the devices of a canceled or aborted one; times out its devices past
 * their deadline; goes on with a release an earlier run stopped short; releases the next minute's
 * devices of one in progress (waiting for that minute when it comes within the lookahead); then
 * moves its sweep entry to its next due work, or removes it, unless something moved it meanwhile.
 */
const visitRollout = async (db: Db, entry: SweepEntry, budget: SweepBudget, summary: SweepSummary, clock: () => number) => {
  const workspaceId = entry.pk.slice('WKS#'.length);
  const rolloutId = entry.sk.slice(ROLLOUT_SORT_KEY_PREFIX.length);
  const view = await getRollout(db, workspaceId, rolloutId);
  if (!view?.record.sweep_due) return;
  let { record } = view;
  const seen = record.sweep_due!;
  const now = clock();
  if (record.sealed_total === undefined && now >= Date.parse(record.created_at) + SEAL_AFTER_MS) {
    // Its scheduling died before sealing it: its counts hold every item it wrote.
    await sealAndSettle(db, workspaceId, rolloutId, now);
    return;
  }
  let cancelMore = false;
  if (hasEnded(record) && record.outcome !== 'completed' && Date.parse(seen) <= now) {
    // Again, in case the request that ended it stopped before: no device joins it any more.
    await endContinuous(db, record);
    const canceled = await cancelDevices(db, record, budget, clock);
    summary.canceled += canceled;
    // A release claimed before the cancel may still be writing, and so may a scheduling not sealed yet.
    const writing = record.sealed_total === undefined || (record.last_release_at !== undefined && now - Date.parse(record.last_release_at) < RELEASE_RUNS_MS);
    cancelMore = canceled > 0 || writing;
  }
  if (record.settings.timeout_seconds && record.next_deadline_at && record.outcome !== 'completed' && Date.parse(record.next_deadline_at) <= now) {
    summary.timedOut += await timeOutDevices(db, record, budget, clock);
  }
  const rate = record.settings.max_per_minute;
  // A release a run stopped short at its deadline: this run goes on with it, at that release's time
  // (its devices are of that minute), while the rollout releases and the minute lasts; else it is dropped.
  if (record.release_owed) {
    const at = record.last_release_at!;
    const owed = record.release_owed;
    const claimed = await claimOwedRelease(db, workspaceId, rolloutId, at, owed);
    if (claimed) {
      record = claimed;
      if (isReleasing(claimed) && clock() < Date.parse(at) + RELEASE_WINDOW_MS) {
        const deadline = record.settings.timeout_seconds ? deadlineOf(at, record.settings.timeout_seconds) : undefined;
        const { released, exhausted } = await release(db, claimed, owed, at, deadline, budget, clock);
        summary.released += released;
        if (!exhausted && released < owed) record = (await oweRelease(db, workspaceId, rolloutId, at, owed - released, Date.parse(at))) ?? record;
      }
    }
  }
  if (rate && isReleasing(record)) {
    const releaseAt = Date.parse(record.next_release_at!);
    // Not yet: wait for it if it comes soon enough to release within this run.
    const waited = releaseAt > now && releaseAt - now <= RELEASE_LOOKAHEAD_MS && releaseAt < budget.deadline - 5_000;
    if (waited) await pause(releaseAt - now);
    if (releaseAt <= now || waited) {
      const at = new Date(Math.max(clock(), releaseAt));
      const deadline = record.settings.timeout_seconds ? deadlineOf(at.toISOString(), record.settings.timeout_seconds) : undefined;
      const claimed = await claimRelease(
        db,
        workspaceId,
        rolloutId,
        record.next_release_at!,
        at.toISOString(),
        new Date(at.getTime() + RELEASE_WINDOW_MS).toISOString(),
        deadline,
      );
      if (claimed) {
        const { released, exhausted } = await release(db, claimed, rate, at.toISOString(), deadline, budget, clock);
        summary.released += released;
        record = claimed;
        if (!exhausted && released < rate) {
          // Stopped short at the run's deadline: the next run goes on with this release.
          record = (await oweRelease(db, workspaceId, rolloutId, at.toISOString(), rate - released, at.getTime())) ?? record;
        } else if (released === 0 && claimed.sealed_total !== undefined && !claimed.settings.continuous) {
          // Nothing left to release, and nothing more will be written: the queue is closed (a
          // continuous rollout's stays open: late devices join its queue).
          record = (await closeQueue(db, workspaceId, rolloutId)) ?? record;
        }
      }
    }
  }
  if (!rate && record.settings.continuous && record.state === 'in_progress' && !record.outcome) {
    // Resumed: the late devices it queued while paused are released at once (it has no rate).
    summary.released += (await release(db, record, CONTINUOUS_RELEASE_MAX, new Date(clock()).toISOString(), undefined, budget, clock)).released;
  }
  const next = cancelMore ? clock() : nextDueOf(record);
  if (next === undefined || new Date(next).toISOString() !== seen) await moveSweepEntry(db, workspaceId, rolloutId, seen, next);
};

/**
 * One run of the minute sweep (DESIGN §11), within `budget`: ends overdue jobs and FOTA of no
 * rollout as `timed_out` (the sweep index's deadline partitions), and does each due rollout's work
 * (its partition): cancellations, timeouts, releases, seals. Nothing is scanned; each write is
 * conditional, so a retried or overlapping run changes nothing twice, and a run that stops at its
 * deadline leaves the rest to the next one.
 */
export const sweepRollouts = async (deps: SweepDeps, budget: SweepBudget): Promise<SweepSummary> => {
  const clock = deps.now ?? Date.now;
  const summary: SweepSummary = { released: 0, timedOut: 0, canceled: 0 };
  const rollouts = async () => {
    try {
      await eachUntil(
        entriesOf(listDueEntries(deps.db, { partition: ROLLOUT_DUE_PARTITION, before: budget.now + RELEASE_LOOKAHEAD_MS })),
        async (entry) => {
          await visitRollout(deps.db, entry, budget, summary, clock).catch((error: unknown) => {
            logger.error('a rollout’s sweep failed; the next run goes on', { error: error as Error, rollout: entry.sk });
          });
          return true;
        },
        { concurrency: ROLLOUT_CONCURRENCY, deadline: budget.deadline, now: clock },
      );
    } catch (error) {
      logger.error('reading due rollouts failed; the next run goes on', { error: error as Error });
    }
  };
  const [timedOut] = await Promise.all([timeOutOverdue(deps.db, budget, clock), rollouts()]);
  summary.timedOut += timedOut;
  return summary;
};
