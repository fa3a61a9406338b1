import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fota } from '../schemas/fota';
import type { Job, JobStatus } from '../schemas/job';
import { putAll, queryAll, strip } from './items';
import { collection, fotaKey, jobKey } from './keys';

/** A job of one device as stored. */
export type JobRecord = Omit<Job, 'devices'> & { device_id: string };
/** A FOTA of one device as stored. */
export type FotaRecord = Omit<Fota, 'devices'> & { device_id: string };

/** Puts (creates or replaces) a device's job. */
export const putJob = async (db: Db, job: JobRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...jobKey(job.device_id, job.name), ...job } }));
};

/** Puts the same job on many devices; idempotent, so a retried request converges. */
export const putJobOnDevices = (db: Db, job: Omit<JobRecord, 'device_id'>, deviceIds: string[], concurrency: number) =>
  putAll(db, deviceIds.map((device_id) => ({ ...jobKey(device_id, job.name), ...job, device_id })), concurrency);

export const getJobOfDevice = async (db: Db, deviceId: string, name: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: jobKey(deviceId, name), ConsistentRead: true }));
  return Item ? strip<JobRecord>(Item) : undefined;
};

export const listJobsOfDevice = (db: Db, deviceId: string, status?: JobStatus) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  return queryAll<JobRecord>(
    db,
    pk,
    prefix,
    status ? { FilterExpression: '#status = :status', ExpressionAttributeNames: { '#status': 'status' }, ExpressionAttributeValues: { ':status': status } } : {},
  );
};

/** Puts (creates or replaces) a device's FOTA. */
export const putFota = async (db: Db, fota: FotaRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...fotaKey(fota.device_id), ...fota } }));
};

export const putFotaOnDevices = (db: Db, fota: Omit<FotaRecord, 'device_id'>, deviceIds: string[], concurrency: number) =>
  putAll(db, deviceIds.map((device_id) => ({ ...fotaKey(device_id), ...fota, device_id })), concurrency);

export const getFotaOfDevice = async (db: Db, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: fotaKey(deviceId), ConsistentRead: true }));
  return Item ? strip<FotaRecord>(Item) : undefined;
};
