import type { Db } from '../../shared/clients';
import { isDeepStrictEqual } from 'node:util';
import { WRITE_CONCURRENCY } from '../../shared/env';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { nowIso } from '../../shared/ids';
import { ENDED_STATUSES, OPEN_STATUSES, type Job, type JobStatus } from '../../schemas/job';
import type { EventMessage } from '../../schemas/forward';
import type { RolloutSettingsInput } from '../../schemas/rollout-settings';
import { getJobOfDevice, putJob, putJobOnDevicePages, readJobsOfDevice, transitionJob, type DeviceTarget, type JobRecord } from '../../stores/job-store';
import { requireDevice } from '../registry/devices';
import { deviceConnectionOf, eventMessage, eventTimestamp, type DevicePlace } from '../webhooks/events';
import { isFailureResult, scheduledState } from './executions';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { scheduleOnFleets, type DeviceState } from './rollouts';
import { countTargets, requireTargets, resolveTarget, type TargetQuery } from './fleet-targets';

/** A stored job as the API shows it (and as its events carry it): no device, place, stamp or times but its end. */
export const toJob = ({ name, status, scheduled_at, value, result, completed_at, rollout_id, timeout_seconds }: JobRecord): Job => ({
  name,
  status,
  scheduled_at,
  value,
  ...((status === 'done' || status === 'failed') && result !== undefined ? { result } : {}),
  ...(ENDED_STATUSES.has(status) && completed_at ? { completed_at } : {}),
  ...(rollout_id ? { rollout_id } : {}),
  ...(timeout_seconds ? { timeout_seconds } : {}),
});

/**
 * A device's jobs in name order, only those in `status` when given, streamed; a page of them when `page` asks.
 * @throws NotFoundError when the device is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listJobs = async (db: Db, caller: Caller, deviceId: string, status?: JobStatus, page: PageQuery = {}): Promise<StreamedList<Job>> => {
  await requireDevice(db, caller, deviceId);
  const list = `jobs/${deviceId}`;
  const after = startOf(list, page, collection.jobsOfDevice(deviceId).prefix);
  return paginate(list, mapKeyed(readJobsOfDevice(db, deviceId, status, { after, pageSize: pageSizeOf(page) }), toJob), page);
};

/** @throws NotFoundError when the device is not the caller's or has no such job. */
export const getJob = async (db: Db, caller: Caller, deviceId: string, name: string) => {
  await requireDevice(db, caller, deviceId);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  return toJob(job);
};

/**
 * Schedules a job on a device; a job of the same name is replaced (new value, `pending`; a job a
 * rollout had given it counts there as canceled). The request only writes the job, with the
 * device's place and the `ts` of its event: the registry stream turns the write into the `job`
 * event (c2d, the job as payload) and publishes it to the device when it is connected, whenever
 * the write is done (domain/registry-events.ts). With `timeoutSeconds`, the sweep ends it as
 * `timed_out` if it has not ended that long after now.
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleJob = async (db: Db, caller: Caller, deviceId: string, name: string, value: Record<string, unknown>, timeoutSeconds?: number) => {
  const { place, connected } = await deviceConnectionOf(db, await requireDevice(db, caller, deviceId));
  const at = nowIso();
  const job: JobRecord = {
    name,
    scheduled_at: at,
    value,
    ...scheduledState({ at, released: true, timeout_seconds: timeoutSeconds }),
    ...place,
    event_ts: eventTimestamp(),
    ...(connected ? { deliver_live: true } : {}),
  };
  await putJob(db, job);
  return toJob(job);
};

/** The job item of one device of a fleet-wide scheduling, in the state its rollout gives it. */
const fleetJobOf =
  (name: string, value: Record<string, unknown>) =>
  (device: DeviceTarget, state: DeviceState): JobRecord => ({ name, value, ...state, ...device });

/**
 * Schedules a job on every device of the chosen fleets (all fleets when none is given) that matches
 * `target` (a group or a query, when given) at one snapshot, as a **rollout** (domain/rollouts.ts): the rollout is recorded first, then each
 * device's job is written, `pending` (or `queued` past a rate-limited rollout's first minute).
 * The answer is the job (with its `rollout_id`) and its devices, given as they are written, so that
 * it can be streamed while 100,000 jobs are written. The registry stream sends one `job` event
 * (c2d) per device, all with one `ts`, publishes the job to the connected ones, and counts them in
 * the rollout. A retried request is a new scheduling (a new rollout; the earlier one counts the
 * replaced jobs as canceled).
 * @throws NotFoundError when the workspace, a named fleet or the group is not the caller's;
 * ValidationError for a malformed query; ConflictError for a group deleted meanwhile; nothing is written then.
 */
export const scheduleFleetJob = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  name: string,
  value: Record<string, unknown>,
  fleetIds?: string[],
  settings: RolloutSettingsInput = {},
  target: TargetQuery = {},
) => {
  const jobOf = fleetJobOf(name, value);
  const { rollout, devices } = await scheduleOnFleets(
    db,
    caller,
    workspaceId,
    fleetIds,
    settings,
    {
      kind: 'job',
      subject: { job_name: name, value },
      write: (pages, stateOf, count) => putJobOnDevicePages(db, (device, index) => jobOf(device, stateOf(device, index)), pages, WRITE_CONCURRENCY, count),
    },
    target,
  );
  const job: Job = {
    name,
    status: 'pending',
    scheduled_at: rollout.scheduled_at,
    value,
    rollout_id: rollout.id,
    ...(settings.timeout_seconds ? { timeout_seconds: settings.timeout_seconds } : {}),
  };
  return { job, devices };
};

/**
 * A fleet-wide job's dry run: the checks `scheduleFleetJob` makes before writing, then how many
 * devices it would target now (of the fleets, matching the group or query); nothing is written (no rollout, no quota counted).
 * @throws NotFoundError when the workspace, a named fleet or the group is not the caller's; ValidationError for a malformed query.
 */
export const dryRunFleetJob = async (db: Db, caller: Caller, workspaceId: string, fleetIds?: string[], target: TargetQuery = {}) => {
  await requireTargets(db, caller, workspaceId, fleetIds);
  const { query } = await resolveTarget(db, workspaceId, target);
  return countTargets(db, workspaceId, fleetIds, query);
};

const sameResult = (stored: Record<string, unknown> | undefined, reported: Record<string, unknown>) =>
  // Compared as stored: JSON text keeps every value but -0, which it writes as 0.
  isDeepStrictEqual(stored, JSON.parse(JSON.stringify(reported)));

/**
 * Ends a device's pending job with the result the device reports: `failed` when the result is an
 * object with a top-level `error` key, `done` otherwise. The registry stream sends its d2c `job`
 * event, naming the device's place now when it is given. Reporting the same result again answers
 * the ended job as it is, and changes nothing (so no second event): a device may retry after a
 * lost answer.
 * @throws NotFoundError when the device has no such job; ConflictError when it is not pending (ended
 * otherwise, or still queued in its rollout).
 */
export const completeJob = async (db: Db, deviceId: string, name: string, result: Record<string, unknown>, place?: DevicePlace) => {
  const ended = await transitionJob(db, deviceId, name, {
    from: ['pending'],
    to: isFailureResult(result) ? 'failed' : 'done',
    at: nowIso(),
    result,
    set: { workspace_id: place?.workspace_id, fleet_id: place?.fleet_id, event_ts: eventTimestamp() },
  });
  if (ended) return toJob(ended);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  if ((job.status === 'done' || job.status === 'failed') && sameResult(job.result, result)) return toJob(job);
  if (job.status === 'queued') throw new ConflictError(`Job ${name} is queued in its rollout: it has not been released to the device yet.`);
  throw new ConflictError(`Job ${name} already ended (${job.status}); schedule it again to run it again.`);
};

/**
 * The d2c `job` event of a result that came for a job that can no longer take it (ended, or still
 * queued): the MQTT door records it so, leaving the job as it is (`late_result` is what the device
 * said). Undefined when the device has no such job.
 */
export const lateJobResultEvent = async (
  db: Db,
  deviceId: string,
  name: string,
  result: Record<string, unknown>,
  place: DevicePlace,
): Promise<EventMessage | undefined> => {
  const job = await getJobOfDevice(db, deviceId, name);
  return job && eventMessage(place, 'job', 'd2c', { ...toJob(job), late_result: result });
};

/**
 * Cancels a device's job that has not ended (queued, pending): it leaves the device's `#status`,
 * its rollout counts it `canceled`, and the registry stream sends a c2d `job` event.
 * @throws NotFoundError when the device is not the caller's or has no such job; ConflictError when it already ended.
 */
export const cancelJob = async (db: Db, caller: Caller, deviceId: string, name: string) => {
  await requireDevice(db, caller, deviceId);
  const canceled = await transitionJob(db, deviceId, name, { from: OPEN_STATUSES, to: 'canceled', at: nowIso(), set: { event_ts: eventTimestamp() } });
  if (canceled) return toJob(canceled);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  throw new ConflictError(`Job ${name} already ended (${job.status}).`);
};
