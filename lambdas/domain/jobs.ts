import type { Db } from '../shared/clients';
import { isDeepStrictEqual } from 'node:util';
import { WRITE_CONCURRENCY } from '../shared/env';
import { ConflictError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { nowIso } from '../shared/ids';
import type { Job, JobStatus } from '../schemas/job';
import { listDeviceIdsOfFleets } from '../stores/device-store';
import { completePendingJob, getJobOfDevice, listJobsOfDevice, putJob, putJobOnDevices, type JobRecord } from '../stores/job-store';
import { requireDevice } from './devices';
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
 * Schedules a job on a device; a job of the same name is replaced (new value, `pending`).
 * @throws NotFoundError when the device is not the caller's.
 */
export const scheduleJob = async (db: Db, caller: Caller, deviceId: string, name: string, value: Record<string, unknown>) => {
  await requireDevice(db, caller, deviceId);
  const job: JobRecord = { name, status: 'pending', scheduled_at: nowIso(), value, device_id: deviceId };
  await putJob(db, job);
  return toJob(job);
};

/**
 * The devices that fleet-wide scheduling targets: those of the named fleets, or of every fleet
 * when none is named. Every named fleet is checked before anything is written.
 * @throws NotFoundError when the workspace or a named fleet is not the caller's.
 */
export const targetDevices = async (db: Db, caller: Caller, workspaceId: string, fleetIds: string[] = []) => {
  await requireWorkspace(db, caller, workspaceId);
  if (fleetIds.length) await requireFleets(db, workspaceId, fleetIds);
  return listDeviceIdsOfFleets(db, workspaceId, fleetIds.length ? fleetIds : undefined);
};

/**
 * Schedules a job on every device of the chosen fleets (all fleets when none is given).
 * Idempotent: a retried request converges to the same jobs.
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
  await putJobOnDevices(db, job, devices, WRITE_CONCURRENCY);
  return { ...job, devices };
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
  if (job.status === 'done' && isDeepStrictEqual(job.result, result)) return toJob(job);
  throw new ConflictError(`Job ${name} is already done with another result; schedule it again to run it again.`);
};
