import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError, QuotaExceededError, ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import type { JobStatus } from '../../schemas/job';
import type { PageQuery } from '../../schemas/list';
import type { Rollout, RolloutAbortReason, RolloutCounts, RolloutDevice } from '../../schemas/rollout';
import type { RolloutSettings, RolloutSettingsInput } from '../../schemas/rollout-settings';
import type { CountWritten, DeviceTarget, ExecutionTimes } from '../../stores/job-store';
import { collection } from '../../stores/keys';
import { countWritten } from '../../stores/rollout-counter-store';
import {
  ROLLOUT_DEVICE_SHARDS,
  readDeviceDetails,
  readDeviceNames,
  readRolloutDevicesShard,
  type DeviceDetails,
  type RolloutDeviceRow,
} from '../../stores/rollout-device-store';
import {
  createRollout,
  getRollout as readRollout,
  readRolloutsOfWorkspace,
  type RolloutRecord,
  type RolloutState,
  type RolloutView,
} from '../../stores/rollout-store';
import { moveSweepEntry, sealRollout, setRolloutOutcome, setRolloutState } from '../../stores/rollout-update-store';
import type { Keyed } from '../../stores/items';
import { eventTimestamp } from '../webhooks/events';
import { deadlineOf, scheduledState } from './executions';
import { quota } from '../limits/limits';
import { requireTargets, resolveTarget, snapshotTargets, type ResolvedTarget, type TargetQuery } from './fleet-targets';
import { CONTINUOUS_ROLLOUTS_MAX, addContinuousActions, removeContinuous } from '../../stores/continuous-rollout-store';
import { mapKeyed, mergeKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';

/** The window `max_per_minute` counts releases in: at most that many start in any 60 s. */
export const RELEASE_WINDOW_MS = 60_000;

/**
 * How long after its creation a rollout is sealed by the sweep if its scheduling never sealed it
 * (the scheduling's Lambda died): well past the streamed routes' 5-minute timeout, so that nothing
 * of it is still writing.
 */
export const SEAL_AFTER_MS = 15 * 60_000;

/** What a scheduling writes on one device's item besides the job or firmware: its state in the rollout and its event stamp. */
export type DeviceState = { status: JobStatus; scheduled_at: string; event_ts: string; rollout_id?: string; timeout_seconds?: number } & ExecutionTimes;

/** What a fleet-wide scheduling of one kind records and writes (jobs.ts and fota.ts give it). */
export interface FleetScheduling {
  kind: 'job' | 'fota' | 'state';
  /** What the rollout records of what was scheduled: a job's name and value, the firmware, or a state change's desired keys (as `value`). */
  subject: Pick<RolloutRecord, 'job_name' | 'value' | 'firmware_id' | 'firmware_version'>;
  /**
   * Writes one item per device of `pages`, in the state `stateOf` gives it, each chunk of items in
   * one transaction with what `count` makes of it; yields the devices as their items are stored.
   */
  write: (
    pages: AsyncIterable<DeviceTarget[]>,
    stateOf: (device: DeviceTarget, index: number) => DeviceState,
    count: CountWritten,
  ) => AsyncIterable<DeviceTarget[]>;
}

/** The stored settings of a rollout: every setting, null when off. */
const settingsOf = (input: RolloutSettingsInput): RolloutSettings => ({
  max_per_minute: input.max_per_minute ?? null,
  timeout_seconds: input.timeout_seconds ?? null,
  abort: input.abort ?? null,
  continuous: input.continuous ?? false,
});

/** A rollout as the API shows it. */
export const toRollout = ({ record, tally }: RolloutView): Rollout => ({
  id: record.id,
  workspace_id: record.workspace_id,
  kind: record.kind,
  ...(record.kind === 'job'
    ? { job_name: record.job_name, value: record.value }
    : record.kind === 'state'
      ? { desired: record.value }
      : { firmware_id: record.firmware_id, firmware_version: record.firmware_version }),
  fleets: record.fleets,
  group_id: record.group_id ?? null,
  q: record.q ?? null,
  created_at: record.created_at,
  updated_at: tally.updated_at && tally.updated_at > record.updated_at ? tally.updated_at : record.updated_at,
  status: record.outcome ?? record.state,
  // Rollouts recorded before continuous ones existed have no such setting.
  settings: { ...record.settings, continuous: record.settings.continuous ?? false },
  total: tally.total,
  counts: tally.counts,
  next_release_at: isReleasing(record) ? record.next_release_at! : null,
  abort_reason: record.outcome === 'aborted' ? (record.abort_reason ?? null) : null,
});

/** Whether a rollout has ended (completed, canceled or aborted): it takes no pause, resume or cancel. */
export const hasEnded = (record: RolloutRecord) => record.outcome !== undefined || record.state === 'canceled';

/** Whether a rollout still releases queued devices: in progress, rate-limited, its queue not closed. */
export const isReleasing = (record: RolloutRecord) =>
  record.state === 'in_progress' && !record.outcome && !!record.settings.max_per_minute && record.queue_open !== false && !!record.next_release_at;

/**
 * When the sweep is next due at a rollout, from its item: the earliest of a release a run stopped
 * short (at once), its next release (while it releases), its next deadline (devices released with a
 * timeout, not known to have ended) and its seal (while its scheduling has not sealed it);
 * undefined when none is (a canceled or aborted rollout's cancellations are due at once, apart from this).
 */
export const nextDueOf = (record: RolloutRecord): number | undefined => {
  const times = [
    record.release_owed ? Date.parse(record.last_release_at!) : undefined,
    isReleasing(record) ? Date.parse(record.next_release_at!) : undefined,
    record.next_deadline_at && record.outcome !== 'completed' ? Date.parse(record.next_deadline_at) : undefined,
    record.sealed_total === undefined ? Date.parse(record.created_at) + SEAL_AFTER_MS : undefined,
  ].filter((t): t is number => t !== undefined);
  return times.length ? Math.min(...times) : undefined;
};

const counted = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/**
 * Why a rollout aborts: its rule, the ended devices' counts it fired on, their share that failed or
 * timed out, and the same in words ("2 of the 3 devices that had ended failed or timed out …").
 */
export const abortReasonOf = (
  rule: NonNullable<RolloutSettings['abort']>,
  { done, failed, timed_out }: Pick<RolloutCounts, 'done' | 'failed' | 'timed_out'>,
  at: string,
): RolloutAbortReason => {
  const finished = done + failed + timed_out;
  const percentage = finished ? Math.round(((failed + timed_out) * 10_000) / finished) / 100 : 0;
  const bad = failed + timed_out;
  return {
    rule,
    finished,
    failed,
    timed_out,
    failure_percentage: percentage,
    message:
      `${counted.format(bad)} of the ${counted.format(finished)} devices that had ended failed or timed out ` +
      `(${counted.format(failed)} failed, ${counted.format(timed_out)} timed out: ${counted.format(percentage)} %), ` +
      `reaching the abort rule's ${counted.format(rule.failure_percentage)} % once at least ${counted.format(rule.min_finished)} have ended.`,
    at,
  };
};

/**
 * Ends a rollout when its counts say so, once: `aborted` when its abort rule holds (at least
 * `min_finished` devices ended as done, failed or timed_out, and failed + timed_out are at least
 * `failure_percentage` % of them; the sweep then cancels its queued and pending devices),
 * `completed` when it is sealed, every device it wrote is counted, and none is queued, pending or
 * in progress. The registry stream's consumer asks after each batch, the scheduling after it seals.
 */
export const settleRollout = async (db: Db, workspaceId: string, rolloutId: string, now = Date.now()) => {
  const view = await readRollout(db, workspaceId, rolloutId);
  if (!view || hasEnded(view.record)) return;
  const { record, tally } = view;
  const { done, failed, timed_out, queued, pending, in_progress } = tally.counts;
  const finished = done + failed + timed_out;
  const rule = record.settings.abort;
  const at = new Date(now).toISOString();
  if (rule && finished >= rule.min_finished && (failed + timed_out) * 100 >= rule.failure_percentage * finished) {
    const aborted = await setRolloutOutcome(db, workspaceId, rolloutId, 'aborted', at, now, abortReasonOf(rule, { done, failed, timed_out }, at));
    if (aborted) await endContinuous(db, aborted);
    return;
  }
  // A continuous rollout never completes by itself: devices may still join it.
  if (record.settings.continuous) return;
  if (record.sealed_total !== undefined && tally.total >= record.sealed_total && queued + pending + in_progress === 0) {
    await setRolloutOutcome(db, workspaceId, rolloutId, 'completed', at);
  }
};

/**
 * Takes an ended continuous rollout off its workspace's list (no device joins it any more) and out
 * of its group's `used_by` (the group may be deleted then); nothing for another rollout. Idempotent:
 * the sweep does it again when it visits an ended rollout, in case the request that ended it stopped first.
 */
export const endContinuous = async (db: Db, record: RolloutRecord) => {
  if (record.settings.continuous) await removeContinuous(db, record.workspace_id, record.id, record.group_id);
};

/**
 * Records how many device items the scheduling wrote, once (the scheduling when it ends, or the
 * sweep for one that died): its counted total, exact since each chunk of items is counted in the
 * transaction that writes it (writes still in flight when a scheduling fails are settled by then).
 * Then the rollout's sweep entry follows (to its next due work, or away) unless something moved it
 * meanwhile, and it may end at once (all its devices already answered).
 */
export const sealAndSettle = async (db: Db, workspaceId: string, rolloutId: string, now = Date.now()) => {
  const view = await readRollout(db, workspaceId, rolloutId);
  if (!view || view.record.sealed_total !== undefined) return;
  const sealed = await sealRollout(db, workspaceId, rolloutId, view.tally.total);
  // A canceled or aborted one keeps its entry: its cancellations are due.
  if (sealed && !hasEnded(sealed)) await moveSweepEntry(db, workspaceId, rolloutId, sealed.sweep_due, nextDueOf(sealed));
  await settleRollout(db, workspaceId, rolloutId, now);
};

/**
 * The record of a fleet-wide scheduling starting at `at`, before anything is written: in progress,
 * its settings, and (rate-limited) its next release a minute later, the scheduling releasing the
 * first minute's devices itself; with a timeout, their deadline.
 */
export const scheduledRollout = (
  workspaceId: string,
  kind: FleetScheduling['kind'],
  subject: FleetScheduling['subject'],
  fleetIds: string[] | undefined,
  input: RolloutSettingsInput,
  at = nowIso(),
  target: Pick<ResolvedTarget, 'group_id' | 'q'> = {},
): RolloutRecord => {
  const settings = settingsOf(input);
  const rate = settings.max_per_minute;
  return {
    id: newId('rol', at),
    workspace_id: workspaceId,
    kind,
    ...subject,
    fleets: [...new Set(fleetIds ?? [])],
    ...(target.group_id === undefined ? {} : { group_id: target.group_id }),
    ...(target.q === undefined ? {} : { q: target.q }),
    created_at: at,
    updated_at: at,
    scheduled_at: at,
    settings,
    state: 'in_progress',
    ...(rate ? { next_release_at: new Date(Date.parse(at) + RELEASE_WINDOW_MS).toISOString(), last_release_at: at, queue_open: true } : {}),
    ...(settings.timeout_seconds ? { next_deadline_at: deadlineOf(at, settings.timeout_seconds) } : {}),
  };
};

/**
 * Records a new rollout, counted in the workspace's rollouts of the day; a continuous one is added to
 * its workspace's list of them (which the registry stream reads) and to its group's `used_by`, in
 * the same transaction.
 * @throws QuotaExceededError (`rollouts_per_day`, `continuous_rollouts`); ConflictError when its group was deleted meanwhile.
 */
const recordRollout = async (db: Db, workspace: Parameters<typeof quota>[1], rollout: RolloutRecord) => {
  const continuous = rollout.settings.continuous
    ? addContinuousActions(db, rollout.workspace_id, { rollout_id: rollout.id, fleets: rollout.fleets, group_id: rollout.group_id, q: rollout.q })
    : [];
  const failed = await createRollout(db, rollout, nextDueOf(rollout)!, quota(db, workspace, 'rollouts_per_day'), continuous);
  if (failed?.includes(0))
    throw new QuotaExceededError(
      'continuous_rollouts',
      CONTINUOUS_ROLLOUTS_MAX,
      `The workspace runs ${CONTINUOUS_ROLLOUTS_MAX} continuous rollouts already: cancel one first.`,
    );
  if (failed?.includes(1)) throw new ConflictError(`Group ${rollout.group_id} was deleted meanwhile: nothing was scheduled.`);
};

/**
 * Schedules on every device of the chosen fleets (all when none is named) that matches the target
 * (`group`, `q`: `resolveTarget`), at one snapshot (`snapshotTargets`), as a **rollout**: the rollout item is written first (so that every device
 * item names an existing rollout), then each device's item, in snapshot order: released now
 * (`pending`, with its deadline when the rollout has a timeout) for the first `max_per_minute`
 * (all of them without a rate), `queued` for the others, which the sweep releases a minute's worth
 * at a time; each chunk of items is counted in the rollout in the transaction that writes it. The
 * devices are given as their items are stored; once all are (or the client hung up, or a write
 * failed), the rollout is sealed with how many were stored. A continuous one goes on: the registry
 * stream adds the devices that match later (domain/fleet-ops/late-devices.ts).
 * @throws NotFoundError when the workspace, a named fleet or the group is not the caller's; nothing is written then.
 * @throws ValidationError for a malformed `q`; ConflictError when the group was deleted meanwhile; nothing is written then.
 * @throws QuotaExceededError when the workspace has started its limit of rollouts today (`rollouts_per_day`); nothing is written then.
 */
export const scheduleOnFleets = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  fleetIds: string[] | undefined,
  input: RolloutSettingsInput,
  scheduling: FleetScheduling,
  targetQuery: TargetQuery = {},
) => {
  const workspace = await requireTargets(db, caller, workspaceId, fleetIds);
  const { query, ...target } = await resolveTarget(db, workspaceId, targetQuery);
  const rollout = scheduledRollout(workspaceId, scheduling.kind, scheduling.subject, fleetIds, input, nowIso(), target);
  const { scheduled_at: at, settings } = rollout;
  const rate = settings.max_per_minute;
  // Due for its next release or deadline, or else for the seal that only a scheduling that died
  // leaves to the sweep. Counted in the workspace's rollouts of the day in the same transaction,
  // before the snapshot: a refused scheduling writes nothing. A continuous one is on its
  // workspace's list before the snapshot, so a device that changes after it is seen by the stream.
  await recordRollout(db, workspace, rollout);
  const targets = await snapshotTargets(db, workspaceId, fleetIds, query);
  const event_ts = eventTimestamp();
  const stateOf = (_device: DeviceTarget, index: number): DeviceState => ({
    ...scheduledState({ at, released: !rate || index < rate, timeout_seconds: settings.timeout_seconds ?? undefined, rollout_id: rollout.id }),
    scheduled_at: at,
    event_ts,
  });
  // Each chunk's devices are counted in the transaction that writes them: the counts hold every item from the moment it exists.
  const written = scheduling.write(targets, stateOf, countWritten(db, workspaceId, rollout.id, at));
  async function* devices(): AsyncGenerator<string> {
    try {
      for await (const page of written) for (const target of page) yield target.device_id;
    } finally {
      await sealAndSettle(db, workspaceId, rollout.id);
    }
  }
  return { rollout, devices: devices() };
};

const requireRollout = async (db: Db, caller: Caller, workspaceId: string, rolloutId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  const view = await readRollout(db, workspaceId, rolloutId);
  if (!view) throw new NotFoundError(`Rollout ${rolloutId} not found.`);
  return view;
};

/** @throws NotFoundError when the workspace is not the caller's or has no such rollout. */
export const getRollout = async (db: Db, caller: Caller, workspaceId: string, rolloutId: string) =>
  toRollout(await requireRollout(db, caller, workspaceId, rolloutId));

/**
 * A workspace's rollouts, newest first, with their counts, streamed; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's; ValidationError for a cursor of another list.
 */
export const listRollouts = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<Rollout>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `rollouts/${workspaceId}`;
  const after = startOf(list, page, collection.rolloutsOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readRolloutsOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toRollout), page);
};

/** A device of a rollout as the list shows it: its name, a job's result (stored as JSON text), a FOTA's message. */
const toRolloutDevice = (row: RolloutDeviceRow, details: DeviceDetails = {}, name?: string): RolloutDevice => ({
  device_id: row.device_id,
  ...(name === undefined ? {} : { device_name: name }),
  status: row.status,
  updated_at: details.updated_at ?? row.time,
  ...(details.result !== undefined && (row.status === 'done' || row.status === 'failed')
    ? { result: (typeof details.result === 'string' ? JSON.parse(details.result) : details.result) as Record<string, unknown> }
    : {}),
  ...(details.message ? { message: details.message } : {}),
});

// The index's time is exact for these (when scheduled, when released), and they have no result or message.
const INDEXED_WHOLE: ReadonlySet<JobStatus> = new Set(['queued', 'pending']);
const DETAILS_CHUNK = 100;

/**
 * A rollout's devices as listed: index rows, with the names of their devices and the details of
 * those the index does not hold whole, read a chunk of 100 rows at a time (a BatchGetItem of the
 * devices' items and one of the jobs' or FOTA's: never a request per row).
 */
async function* withDetails(db: Db, workspaceId: string, rows: AsyncIterable<Keyed<RolloutDeviceRow>>): AsyncGenerator<Keyed<RolloutDevice>> {
  let chunk: Array<Keyed<RolloutDeviceRow>> = [];
  const flush = async function* () {
    const wanted = chunk.filter(({ value }) => !INDEXED_WHOLE.has(value.status)).map(({ value }) => value.key);
    const [details, names] = await Promise.all([
      wanted.length ? readDeviceDetails(db, wanted) : new Map<string, DeviceDetails>(),
      chunk.length
        ? readDeviceNames(
            db,
            workspaceId,
            chunk.map(({ value }) => value.device_id),
          )
        : new Map<string, string>(),
    ]);
    for (const { sk, value } of chunk) yield { sk, value: toRolloutDevice(value, details.get(`${value.key.pk}|${value.key.sk}`), names.get(value.device_id)) };
    chunk = [];
  };
  for await (const row of rows) {
    chunk.push(row);
    if (chunk.length >= DETAILS_CHUNK) yield* flush();
  }
  yield* flush();
}

/**
 * The rows of a rollout's devices in `statuses`, state by state in the order given (every state,
 * in index order, when none is given), from after the sort key `after`: each state's shards read
 * in key order and merged.
 */
async function* rowsInStates(
  db: Db,
  rolloutId: string,
  statuses: readonly JobStatus[] | undefined,
  after: string | undefined,
  pageSize: number | undefined,
): AsyncGenerator<Keyed<RolloutDeviceRow>> {
  const read = (status: JobStatus | undefined, from: string | undefined) =>
    mergeKeyed(ROLLOUT_DEVICE_SHARDS.map((shard) => readRolloutDevicesShard(db, rolloutId, shard, { status, after: from, pageSize })));
  if (!statuses) {
    yield* read(undefined, after);
    return;
  }
  // A cursor resumes in its own state: the states before it were read, the ones after it start at their beginning.
  const resumeAt = after === undefined ? 0 : statuses.findIndex((status) => after.startsWith(`${status}#`));
  for (let i = Math.max(resumeAt, 0); i < statuses.length; i++) yield* read(statuses[i], i === resumeAt ? after : undefined);
}

/**
 * A rollout's devices, only those in `statuses` when given (state by state, in the order given),
 * streamed; a page of them when `page` asks. From the sweep index: each shard of the rollout's
 * entries read in key order (state, then when it was reached, then device ID) and merged, so a state
 * of 5 devices or of 100,000 reads only its own entries; each device's name, and the items of
 * devices in progress or ended (their times, results and messages), are read 100 at a time.
 * Eventually consistent, as any index: a change of a moment ago may not show yet.
 * @throws NotFoundError when the workspace is not the caller's or has no such rollout; ValidationError for a cursor of another list.
 */
export const listRolloutDevices = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  rolloutId: string,
  statuses?: readonly JobStatus[],
  page: PageQuery = {},
): Promise<StreamedList<RolloutDevice>> => {
  await requireRollout(db, caller, workspaceId, rolloutId);
  const wanted = statuses?.length ? [...new Set(statuses)] : undefined;
  const list = `rollouts/${workspaceId}/${rolloutId}/devices/${wanted ? wanted.join(',') : '*'}`;
  const after = startOf(list, page, wanted?.length === 1 ? `${wanted[0]}#` : '');
  if (after !== undefined && wanted && !wanted.some((status) => after.startsWith(`${status}#`)))
    throw new ValidationError('Invalid query: query.cursor.', { details: [{ field: 'query.cursor', message: 'Must be the `next` of a page of this list.' }] });
  // Each shard holds about 1/16 of a page: read a little more than that per query.
  const pageSize = page.limit === undefined ? undefined : Math.min(1000, Math.ceil((page.limit + 1) / ROLLOUT_DEVICE_SHARDS.length) * 2 + 8);
  return paginate(list, withDetails(db, workspaceId, rowsInStates(db, rolloutId, wanted, after, pageSize)), page);
};

/** Changes an open rollout's state, or says why not. */
const changeState = async (db: Db, caller: Caller, workspaceId: string, rolloutId: string, state: RolloutState, dueNow: boolean) => {
  const { record } = await requireRollout(db, caller, workspaceId, rolloutId);
  if (hasEnded(record)) throw new ConflictError(`Rollout ${rolloutId} has ended (${record.outcome ?? record.state}).`);
  const now = Date.now();
  const changed = await setRolloutState(db, workspaceId, rolloutId, state, new Date(now).toISOString(), dueNow ? now : undefined);
  if (changed && state === 'canceled') await endContinuous(db, changed);
  const view = await readRollout(db, workspaceId, rolloutId);
  if (!changed || !view) throw new ConflictError(`Rollout ${rolloutId} has ended (${view ? (view.record.outcome ?? view.record.state) : 'gone'}).`);
  return toRollout(view);
};

/**
 * Pauses a rollout: no more releases (its pending devices stay pending); pausing a paused one changes nothing.
 * @throws NotFoundError when the workspace is not the caller's or has no such rollout; ConflictError when it has ended.
 */
export const pauseRollout = (db: Db, caller: Caller, workspaceId: string, rolloutId: string) =>
  changeState(db, caller, workspaceId, rolloutId, 'paused', false);

/**
 * Resumes a paused rollout: the sweep releases its next minute's devices at its next run (60 s
 * after the last release at the earliest); resuming one in progress changes nothing.
 * @throws NotFoundError when the workspace is not the caller's or has no such rollout; ConflictError when it has ended.
 */
export const resumeRollout = (db: Db, caller: Caller, workspaceId: string, rolloutId: string) =>
  changeState(db, caller, workspaceId, rolloutId, 'in_progress', true);

/**
 * Cancels a rollout, for good: no more releases, and the sweep (at its next run) cancels every
 * device still queued or pending; devices in progress go on. A device that asks for its jobs
 * meanwhile is not given this rollout's (domain/device-api.ts).
 * @throws NotFoundError when the workspace is not the caller's or has no such rollout; ConflictError when it has ended.
 */
export const cancelRollout = (db: Db, caller: Caller, workspaceId: string, rolloutId: string) =>
  changeState(db, caller, workspaceId, rolloutId, 'canceled', true);
