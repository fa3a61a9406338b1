import type { Db } from '../shared/clients';
import { isDeepStrictEqual } from 'node:util';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { Job, JobStatus } from '../schemas/job';
import { listDevicesOfFleets } from '../stores/device-store';
import { completePendingJob, getJobOfDevice, putJob, readJobsOfDevice, putJobOnDevices, type JobRecord } from '../stores/job-store';
import { requireDevice } from './devices';
import { devicePlaceOf, eventTimestamp, type DevicePlace } from './events';
import { requireFleets } from './fleets';
import { deliverLive, jobMessage } from './live-delivery';
import { publishToDevice } from '../stores/device-channel';
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
 * stream turns the write into the `job` event (c2d, the job as payload), so the event follows
 * whenever the write is done (domain/registry-events.ts).
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleJob = async (db: Db, caller: Caller, deviceId: string, name: string, value: Record<string, unknown>) => {
  const place = await devicePlaceOf(db, await requireDevice(db, caller, deviceId));
  const job: JobRecord = { name, status: 'pending', scheduled_at: nowIso(), value, ...place, event_ts: eventTimestamp() };
  await putJob(db, job);
  await deliverLive(db, publishToDevice, [place], jobMessage(name, value));
  return toJob(job);
};

/** A target's place, without its connection state (which job and FOTA items do not keep). */
export const placeOnly = ({ workspace_id, fleet_id, device_id }: DevicePlace): DevicePlace => ({ workspace_id, fleet_id, device_id });

/**
 * The devices (ID, fleet and whether connected) that fleet-wide scheduling targets: those of the named fleets, or of
 * every fleet when none is named. Every named fleet is checked before anything is written.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const targetDevices = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  const devices = await listDevicesOfFleets(db, workspaceId, fleetIds.length ? fleetIds : undefined);
  return devices.map((d) => ({ workspace_id: workspaceId, fleet_id: d.fleet_id, device_id: d.id, connected: d.connected ?? false }));
};

/**
 * Schedules a job on every device of the chosen fleets (all fleets when none is given): it answers
 * once the jobs are written, and the registry stream sends one `job` event (c2d) per device, all
 * with one `ts`. A retried request converges to the same jobs (rescheduled: new events).
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
  const devices = await targetDevices(db, caller, workspaceId, fleetIds);
  const job = { name, status: 'pending' as const, scheduled_at: nowIso(), value };
  await putJobOnDevices(db, { ...job, event_ts: eventTimestamp() }, devices.map(placeOnly), WRITE_CONCURRENCY);
  await deliverLive(db, publishToDevice, devices, jobMessage(name, value));
  return { ...job, devices: devices.map((d) => d.device_id) };
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
