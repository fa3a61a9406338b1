import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fota } from '../schemas/fota';
import type { Job, JobStatus } from '../schemas/job';
import { isConditionFailed } from './errors';
import { putAll, queryAll, strip } from './items';
import { collection, fotaKey, jobKey } from './keys';

/** A job of one device as stored. */
export type JobRecord = Omit<Job, 'devices'> & { device_id: string };
/** A FOTA of one device as stored. */
export type FotaRecord = Omit<Fota, 'devices'> & { device_id: string };

// A job's value and result are free-form JSON objects, stored as JSON text (a string attribute)
// rather than DynamoDB maps: a map refuses empty keys, numbers beyond 38 digits or outside
// 1e-130…1e126 (1e300 is a fine double), and nesting past 32 levels, and does not keep integers
// beyond 2^53 as JS numbers. Text keeps any JSON value exactly. Items written before hold maps;
// they are read as they are.
const fromStored = (stored: unknown) => (typeof stored === 'string' ? (JSON.parse(stored) as Record<string, unknown>) : (stored as Record<string, unknown>));

/** A job item as it is written: value and result as JSON text. */
const jobItem = <T extends { value: Record<string, unknown>; result?: Record<string, unknown> }>(job: T) => ({
  ...job,
  value: JSON.stringify(job.value),
  ...(job.result === undefined ? {} : { result: JSON.stringify(job.result) }),
});

/** A job as read, from either storage form. */
const jobOf = (item: Record<string, unknown>): JobRecord => {
  const job = strip<JobRecord>(item);
  return { ...job, value: fromStored(job.value), ...(job.result === undefined ? {} : { result: fromStored(job.result) }) };
};

/** Puts (creates or replaces) a device's job. */
export const putJob = async (db: Db, job: JobRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...jobKey(job.device_id, job.name), ...jobItem(job) } }));
};

/** Puts the same job on many devices; idempotent, so a retried request converges. */
export const putJobOnDevices = (db: Db, job: Omit<JobRecord, 'device_id'>, deviceIds: string[], concurrency: number) => {
  const item = jobItem(job);
  return putAll(db, deviceIds.map((device_id) => ({ ...jobKey(device_id, job.name), ...item, device_id })), concurrency);
};

export const getJobOfDevice = async (db: Db, deviceId: string, name: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: jobKey(deviceId, name), ConsistentRead: true }));
  return Item ? jobOf(Item) : undefined;
};

export const listJobsOfDevice = async (db: Db, deviceId: string, status?: JobStatus) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  const items = await queryAll<Record<string, unknown>>(
    db,
    pk,
    prefix,
    status ? { FilterExpression: '#status = :status', ExpressionAttributeNames: { '#status': 'status' }, ExpressionAttributeValues: { ':status': status } } : {},
  );
  return items.map(jobOf);
};

/**
 * Marks a pending job done with its result and completion time.
 * @returns the done job, or undefined when there is no such job or it is not pending.
 */
export const completePendingJob = async (db: Db, deviceId: string, name: string, result: Record<string, unknown>, at: string) => {
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: jobKey(deviceId, name),
        UpdateExpression: 'SET #status = :done, #result = :result, completed_at = :at',
        // false for a missing item too, so that nothing is created
        ConditionExpression: '#status = :pending',
        ExpressionAttributeNames: { '#status': 'status', '#result': 'result' },
        ExpressionAttributeValues: { ':done': 'done', ':pending': 'pending', ':result': JSON.stringify(result), ':at': at },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return jobOf(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
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

/**
 * Ends a pending FOTA with the device's outcome, provided it is the firmware the device names
 * (when it names one).
 * @returns the ended FOTA, or undefined when there is none, it is not pending, or it is another firmware.
 */
export const finishPendingFota = async (
  db: Db,
  deviceId: string,
  status: string,
  firmware: { firmware_id?: string; firmware_version?: string },
) => {
  const conditions = ['#status = :pending'];
  const values: Record<string, string> = { ':status': status, ':pending': 'pending' };
  for (const field of ['firmware_id', 'firmware_version'] as const) {
    const value = firmware[field];
    if (value === undefined) continue;
    conditions.push(`#value.${field} = :${field}`);
    values[`:${field}`] = value;
  }
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: fotaKey(deviceId),
        UpdateExpression: 'SET #status = :status',
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: { '#status': 'status', ...(conditions.length > 1 ? { '#value': 'value' } : {}) },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<FotaRecord>(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};
