import type { Db } from '../shared/clients';
import { isDeepStrictEqual } from 'node:util';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { Job, JobStatus } from '../schemas/job';
import { listDevicesOfFleets } from '../stores/device-store';
import { completePendingJob, getJobOfDevice, listJobsOfDevice, putJob, putJobOnDevices, type JobRecord } from '../stores/job-store';
import { requireDevice } from './devices';
import { devicePlaceOf, eventMessages, publishForward } from './events';
import { requireFleets } from './fleets';
import { requireWorkspace } from './workspaces';

const toJob = ({ name, status, scheduled_at, value, result, completed_at }: JobRecord): Job => ({
  name,
  status,
  scheduled_at,
  value,
  ...(status === 'done' ? { result, completed_at } : {}),
});

/** @throws NotFoundError when the device is not the caller's. */
export const listJobs = async (db: Db, caller: Caller, deviceId: string, status?: JobStatus) => {
  await requireDevice(db, caller, deviceId);
  const jobs = await listJobsOfDevice(db, deviceId, status);
  return jobs.map(toJob);
};

/** @throws NotFoundError when the device is not the caller's or has no such job. */
export const getJob = async (db: Db, caller: Caller, deviceId: string, name: string) => {
  await requireDevice(db, caller, deviceId);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  return toJob(job);
};

/**
 * Schedules a job on a device; a job of the same name is replaced (new value, `pending`). Once it
 * is stored, a `job` event (c2d, the job as payload) goes to the forward queue; if that fails the
 * request fails, and a retry stores the same job and sends the event again (at least once).
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleJob = async (db: Db, caller: Caller, deviceId: string, name: string, value: Record<string, unknown>) => {
  const device = await requireDevice(db, caller, deviceId);
  const job: JobRecord = { name, status: 'pending', scheduled_at: nowIso(), value, device_id: deviceId };
  const [place] = await Promise.all([devicePlaceOf(db, device), putJob(db, job)]);
  await publishForward(eventMessages([place], 'job', 'c2d', toJob(job)));
  return toJob(job);
};

/**
 * The devices (ID and fleet) that fleet-wide scheduling targets: those of the named fleets, or of
 * every fleet when none is named. Every named fleet is checked before anything is written.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const targetDevices = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  const devices = await listDevicesOfFleets(db, workspaceId, fleetIds.length ? fleetIds : undefined);
  return devices.map((d) => ({ workspace_id: workspaceId, fleet_id: d.fleet_id, device_id: d.id }));
};

/**
 * Schedules a job on every device of the chosen fleets (all fleets when none is given), then
 * sends one `job` event (c2d) per device to the forward queue, in parallel batches.
 * Idempotent: a retried request converges to the same jobs (and sends the events again).
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
  const ids = devices.map((d) => d.device_id);
  await putJobOnDevices(db, job, ids, WRITE_CONCURRENCY);
  await publishForward(eventMessages(devices, 'job', 'c2d', job));
  return { ...job, devices: ids };
};

/**
 * Marks a device's pending job done with the result the device reports. Reporting the same result
 * again answers the done job as it is: a device may retry after a lost answer.
 * @throws NotFoundError when the device has no such job; ConflictError when it is already done with another result.
 */
export const completeJob = async (db: Db, deviceId: string, name: string, result: Record<string, unknown>) => {
  const done = await completePendingJob(db, deviceId, name, result, nowIso());
  if (done) return toJob(done);
  const job = await getJobOfDevice(db, deviceId, name);
  if (!job) throw new NotFoundError(`Job ${name} not found on device ${deviceId}.`);
  // Compared as stored: JSON text keeps every value but -0, which it writes as 0.
  if (job.status === 'done' && isDeepStrictEqual(job.result, JSON.parse(JSON.stringify(result)))) return toJob(job);
  throw new ConflictError(`Job ${name} is already done with another result; schedule it again to run it again.`);
};
