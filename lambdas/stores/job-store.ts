import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fota } from '../schemas/fota';
import type { Job, JobStatus } from '../schemas/job';
import { isConditionFailed } from './errors';
import { keyedItems, putPipelined, queryAll, strip, type ListRead } from './items';
import { collection, fotaKey, jobKey } from './keys';

/**
 * What a stored change carries for the event that the registry stream makes of it: where the
 * device is (workspace and fleet, when the change was written) and the event's `ts`. Items written
 * before these fields existed lack them; the stream consumer then looks the device up.
 */
export interface EventStamp {
  workspace_id?: string;
  fleet_id?: string;
  /** The `ts` of the event this change emits: a retried stream batch rebuilds the same event. */
  event_ts?: string;
  /** The device was connected when this was scheduled: the registry stream publishes it on `j/dn`. */
  deliver_live?: boolean;
}

/** A job of one device as stored. */
export type JobRecord = Omit<Job, 'devices'> & { device_id: string } & EventStamp;
/**
 * A FOTA of one device as stored; `message` is what the device said when it ended it;
 * `firmware_ref` names the registered firmware version it uses (stores/keys.ts REGISTRY_FIRMWARE_USE_INDEX).
 */
export type FotaRecord = Omit<Fota, 'devices'> & { device_id: string; message?: string; firmware_ref?: string } & EventStamp;

/** Where each device of a fleet-wide write lives (its workspace and fleet go on its item). */
export interface DeviceTarget {
  device_id: string;
  workspace_id: string;
  fleet_id: string;
  /** Connected when read: its item asks the registry stream for live delivery. */
  deliver_live?: boolean;
}

/** A FOTA as read from the table (a GetItem or a stream image). */
export const fotaOfItem = (item: Record<string, unknown>) => strip<FotaRecord>(item);

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

/** A job as read from the table (a GetItem, a Query or a stream image), from either storage form. */
export const jobOfItem = (item: Record<string, unknown>): JobRecord => {
  const job = strip<JobRecord>(item);
  return { ...job, value: fromStored(job.value), ...(job.result === undefined ? {} : { result: fromStored(job.result) }) };
};

/** Puts (creates or replaces) a device's job. */
export const putJob = async (db: Db, job: JobRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...jobKey(job.device_id, job.name), ...jobItem(job) } }));
};

/** The places of the devices a fleet-wide write reaches, as they are stored: each yielded once it is. */
async function* placesOf(written: AsyncIterable<Array<DeviceTarget & Record<string, unknown>>>): AsyncGenerator<DeviceTarget[]> {
  for await (const items of written) yield items.map(({ device_id, workspace_id, fleet_id }) => ({ device_id, workspace_id, fleet_id }));
}

async function* itemsOf<T>(pages: AsyncIterable<DeviceTarget[]>, item: (device: DeviceTarget) => T): AsyncGenerator<T[]> {
  for await (const page of pages) yield page.map(item);
}

/**
 * Puts the same job on every device of a stream of pages, each with its place, reading and
 * writing at once (stores/items.ts `putPipelined`); yields the devices as their jobs are stored.
 * Idempotent, so a retried request converges.
 */
export const putJobOnDevicePages = (db: Db, job: Omit<JobRecord, keyof DeviceTarget>, pages: AsyncIterable<DeviceTarget[]>, concurrency: number) => {
  const item = jobItem(job);
  return placesOf(putPipelined(db, itemsOf(pages, (device) => ({ ...jobKey(device.device_id, job.name), ...item, ...device })), concurrency));
};

export const getJobOfDevice = async (db: Db, deviceId: string, name: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: jobKey(deviceId, name), ConsistentRead: true }));
  return Item ? jobOfItem(Item) : undefined;
};

/** A device's jobs one by one in name order, only those in `status` when given (a filter, so `pageSize` is not used then). */
export const readJobsOfDevice = (db: Db, deviceId: string, status: JobStatus | undefined, read: ListRead) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  if (!status) return keyedItems(db, { pk, prefix, ...read }, jobOfItem);
  const extra = { FilterExpression: '#status = :status', ExpressionAttributeNames: { '#status': 'status' }, ExpressionAttributeValues: { ':status': status } };
  return keyedItems(db, { pk, prefix, after: read.after, extra }, jobOfItem);
};

export const listJobsOfDevice = async (db: Db, deviceId: string, status?: JobStatus) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  const items = await queryAll<Record<string, unknown>>(
    db,
    pk,
    prefix,
    status ? { FilterExpression: '#status = :status', ExpressionAttributeNames: { '#status': 'status' }, ExpressionAttributeValues: { ':status': status } } : {},
  );
  return items.map(jobOfItem);
};

/** SET clauses and values that write the given fields (an event stamp's) onto an item; undefined ones are left alone. */
const stampUpdate = (stamp: EventStamp & { message?: string }) => {
  const fields = Object.entries(stamp).filter(([, value]) => value !== undefined);
  return {
    sets: fields.map(([field]) => `${field} = :${field}`),
    values: Object.fromEntries(fields.map(([field, value]) => [`:${field}`, value])),
  };
};

/**
 * Marks a pending job done with its result and completion time, and the stamp of its d2c event.
 * @returns the done job, or undefined when there is no such job or it is not pending.
 */
export const completePendingJob = async (db: Db, deviceId: string, name: string, result: Record<string, unknown>, at: string, stamp: EventStamp = {}) => {
  const { sets, values } = stampUpdate(stamp);
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: jobKey(deviceId, name),
        UpdateExpression: `SET ${['#status = :done', '#result = :result', 'completed_at = :at', ...sets].join(', ')}`,
        // false for a missing item too, so that nothing is created
        ConditionExpression: '#status = :pending',
        ExpressionAttributeNames: { '#status': 'status', '#result': 'result' },
        ExpressionAttributeValues: { ':done': 'done', ':pending': 'pending', ':result': JSON.stringify(result), ':at': at, ...values },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return jobOfItem(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

/** Puts (creates or replaces) a device's FOTA. */
export const putFota = async (db: Db, fota: FotaRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...fotaKey(fota.device_id), ...fota } }));
};

/** Puts the same FOTA on every device of a stream of pages, as `putJobOnDevicePages` does a job. */
export const putFotaOnDevicePages = (db: Db, fota: Omit<FotaRecord, keyof DeviceTarget>, pages: AsyncIterable<DeviceTarget[]>, concurrency: number) =>
  placesOf(putPipelined(db, itemsOf(pages, (device) => ({ ...fotaKey(device.device_id), ...fota, ...device })), concurrency));

export const getFotaOfDevice = async (db: Db, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: fotaKey(deviceId), ConsistentRead: true }));
  return Item ? fotaOfItem(Item) : undefined;
};

/**
 * Ends a pending FOTA with the device's outcome (and its message, when it gave one), provided it
 * is the firmware the device names (when it names one); the stamp of its d2c event goes with it.
 * @returns the ended FOTA, or undefined when there is none, it is not pending, or it is another firmware.
 */
export const finishPendingFota = async (
  db: Db,
  deviceId: string,
  status: string,
  firmware: { firmware_id?: string; firmware_version?: string },
  { message, ...stamp }: EventStamp & { message?: string } = {},
) => {
  const conditions = ['#status = :pending'];
  const stamped = stampUpdate({ ...stamp, message: message || undefined });
  const values: Record<string, string | undefined> = { ':status': status, ':pending': 'pending', ...stamped.values };
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
        UpdateExpression: `SET ${['#status = :status', ...stamped.sets].join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: { '#status': 'status', ...(conditions.length > 1 ? { '#value': 'value' } : {}) },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return fotaOfItem(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};
