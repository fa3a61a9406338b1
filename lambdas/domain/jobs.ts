import type { Db } from '../shared/clients';
import { isDeepStrictEqual } from 'node:util';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { Job, JobStatus } from '../schemas/job';
import { advanceScheduleClock, listDevicePlacementPages } from '../stores/device-store';
import { fleetAtSnapshot } from '../stores/fleet-history';
import { completePendingJob, getJobOfDevice, putJob, putJobOnDevicePages, readJobsOfDevice, type DeviceTarget, type JobRecord } from '../stores/job-store';
import { requireDevice } from './devices';
import { deviceConnectionOf, eventTimestamp, type DevicePlace } from './events';
import { requireFleets } from './fleets';
import type { PageQuery } from '../schemas/list';
import type { StreamedList } from '../shared/json-stream';
import { collection } from '../stores/keys';
import { mapKeyed, pageSizeOf, paginate, startOf } from './lists';
import { requireWorkspace } from './workspaces';

/** A stored job as the API shows it (and as its events carry it): no device, place or stamp. */
export const toJob = ({ name, status, scheduled_at, value, result, completed_at }: JobRecord): Job => ({
  name,
  status,
  scheduled_at,
  value,
  ...(status === 'done' ? { result, completed_at } : {}),
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
 * Schedules a job on a device; a job of the same name is replaced (new value, `pending`). The
 * request only writes the job, with the device's place and the `ts` of its event: the registry
 * stream turns the write into the `job` event (c2d, the job as payload) and publishes it to the
 * device when it is connected, whenever the write is done (domain/registry-events.ts).
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleJob = async (db: Db, caller: Caller, deviceId: string, name: string, value: Record<string, unknown>) => {
  const { place, connected } = await deviceConnectionOf(db, await requireDevice(db, caller, deviceId));
  const job: JobRecord = { name, status: 'pending', scheduled_at: nowIso(), value, ...place, event_ts: eventTimestamp(), ...(connected ? { deliver_live: true } : {}) };
  await putJob(db, job);
  return toJob(job);
};

/**
 * Where a fleet-wide scheduling starts: it checks the workspace and every named fleet (before
 * anything is written), then advances the workspace's scheduling clock. Its value is the
 * scheduling's **snapshot**: the devices it targets are exactly those that were in the chosen
 * fleets (any fleet when none is named) when the clock moved, however they move meanwhile
 * (stores/fleet-history.ts). Each device's target names its fleet at the snapshot.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const snapshotTargets = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  const snapshot = await advanceScheduleClock(db, workspaceId);
  const wanted = fleetIds.length ? new Set(fleetIds) : undefined;
  return (async function* (): AsyncGenerator<DeviceTarget[]> {
    for await (const page of listDevicePlacementPages(db, workspaceId)) {
      yield page.flatMap((device) => {
        const fleet = fleetAtSnapshot(device, snapshot);
        if (fleet === undefined || (wanted && !wanted.has(fleet))) return [];
        return [{ workspace_id: workspaceId, fleet_id: fleet, device_id: device.id, ...(device.connected ? { deliver_live: true } : {}) }];
      });
    }
  })();
};

/** The IDs of the devices a fleet-wide write reached, one by one as their items are stored. */
export async function* deviceIdsOf(written: AsyncIterable<DeviceTarget[]>): AsyncGenerator<string> {
  for await (const targets of written) for (const target of targets) yield target.device_id;
}

/**
 * Schedules a job on every device of the chosen fleets (all fleets when none is given) at one
 * snapshot (`snapshotTargets`). The answer is the job and its devices, the devices given as they
 * are written (devices are read and their jobs written page by page, at once), so that the
 * answer can be streamed while 100,000 jobs are written. The registry stream sends one `job` event
 * (c2d) per device, all with one `ts`, and publishes the job to the connected ones. A retried
 * request converges to the same jobs (rescheduled: new events).
 * @throws NotFoundError when the workspace or a named fleet is not the caller's; nothing is written then.
 */
export const scheduleFleetJob = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  name: string,
  value: Record<string, unknown>,
  fleetIds?: string[],
) => {
  const targets = await snapshotTargets(db, caller, workspaceId, fleetIds);
  const job = { name, status: 'pending' as const, scheduled_at: nowIso(), value };
  const written = putJobOnDevicePages(db, { ...job, event_ts: eventTimestamp() }, targets, WRITE_CONCURRENCY);
  return { job, devices: deviceIdsOf(written) };
};

/**
 * Marks a device's pending job done with the result the device reports; the registry stream sends
 * its d2c `job` event, naming the device's place now when it is given. Reporting the same result
 * again answers the done job as it is, and changes nothing (so no second event): a device may
 * retry after a lost answer.
 * @throws NotFoundError when the device has no such job; ConflictError when it is already done with another result.
 */
export const completeJob = async (db: Db, deviceId: string, name: string, result: Record<string, unknown>, place?: DevicePlace) => {
  const stamp = { workspace_id: place?.workspace_id, fleet_id: place?.fleet_id, event_ts: eventTimestamp() };
  const done = await completePendingJob(db, deviceId, name, result, nowIso(), stamp);
  if (done) return toJob(done);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  // Compared as stored: JSON text keeps every value but -0, which it writes as 0.
  if (job.status === 'done' && isDeepStrictEqual(job.result, JSON.parse(JSON.stringify(result)))) return toJob(job);
  throw new ConflictError(`Job ${name} is already done with another result; schedule it again to run it again.`);
};
