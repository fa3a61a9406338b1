import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Fota } from '../schemas/fota';
import type { Job, JobStatus } from '../schemas/job';
import { isConditionFailed } from './errors';
import { keyedItems, putPipelined, queryAll, strip, transactChunks, type ListRead, type PutCondition, type TransactAction } from './items';
import {
  REGISTRY_SWEEP_INDEX,
  collection,
  deadlinePartition,
  fotaKey,
  jobKey,
  rolloutDeviceSortKey,
  rolloutDevicesEntry,
  shardOfDevice,
  sweepEntry,
  type ItemKey,
} from './keys';

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
  /** The device was connected when this was scheduled (or it was released): the registry stream publishes it on `j/dn`. */
  deliver_live?: boolean;
  /** Ended by its device's deletion (domain/registry/device-deletion.ts): counted in its rollout, never an event (a deleted device's webhooks stop). */
  device_deleted?: boolean;
}

/**
 * When a job or FOTA reached its state, and what bounds it (items written before states existed
 * lack them): `released_at` when it became pending (absent while queued), `deadline_at` its
 * release plus `timeout_seconds`.
 */
export interface ExecutionTimes {
  updated_at?: string;
  released_at?: string;
  deadline_at?: string;
}

/** A job of one device as stored. */
export type JobRecord = Omit<Job, 'devices'> & { device_id: string } & EventStamp & ExecutionTimes;
/**
 * A FOTA of one device as stored; `message` is what the device last said of it;
 * `firmware_ref` names the registered firmware version it uses (stores/keys.ts REGISTRY_FIRMWARE_USE_INDEX).
 */
export type FotaRecord = Omit<Fota, 'devices'> & { device_id: string; firmware_ref?: string } & EventStamp & ExecutionTimes;

/** Where each device of a fleet-wide write lives (its workspace and fleet go on its item). */
export interface DeviceTarget {
  device_id: string;
  workspace_id: string;
  fleet_id: string;
  /** Connected when read: its item asks the registry stream for live delivery. */
  deliver_live?: boolean;
}

/** A FOTA as read from the table (a GetItem or a stream image). */
export const fotaOfItem = (item: Record<string, unknown>) => withoutIndexAttributes(strip<FotaRecord>(item));

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;
const INDEX_ATTRIBUTES = [SWEEP_PK, SWEEP_SK] as const;

const withoutIndexAttributes = <T extends object>(item: T): T => {
  const copy = { ...item } as Record<string, unknown>;
  for (const name of INDEX_ATTRIBUTES) delete copy[name];
  return copy as T;
};

/** The sweep index entry of a device's job or FOTA with a deadline, in the device's deadline partition. */
export const deadlineEntry = (deviceId: string, deadlineAt: string) => sweepEntry(Date.parse(deadlineAt), deadlinePartition(shardOfDevice(deviceId)));

const OPEN_AND_RELEASED: ReadonlySet<string> = new Set(['pending', 'in_progress']);

/** The time a rollout device's index entry orders it by in its state: its release while open and released, else its last change. */
const indexTimeOf = (item: { status: string; updated_at?: string; released_at?: string }) =>
  OPEN_AND_RELEASED.has(item.status) ? (item.released_at ?? item.updated_at) : item.updated_at;

/**
 * The sweep-index entry of a job or FOTA item in its state (keys.ts REGISTRY_SWEEP_INDEX): one of
 * its rollout's devices when it belongs to one, its deadline while it is released and open when it
 * belongs to none and has one, else none.
 */
export const indexAttributesOf = (item: {
  device_id: string;
  status: string;
  updated_at?: string;
  released_at?: string;
  rollout_id?: string;
  deadline_at?: string;
}) => {
  const time = indexTimeOf(item);
  if (item.rollout_id) return time ? rolloutDevicesEntry(item.rollout_id, item.device_id, item.status, time) : {};
  return item.deadline_at && OPEN_AND_RELEASED.has(item.status) ? deadlineEntry(item.device_id, item.deadline_at) : {};
};

// A job's value and result are free-form JSON objects, stored as JSON text (a string attribute)
// rather than DynamoDB maps: a map refuses empty keys, numbers beyond 38 digits or outside
// 1e-130…1e126 (1e300 is a fine double), and nesting past 32 levels, and does not keep integers
// beyond 2^53 as JS numbers. Text keeps any JSON value exactly. Items written before hold maps;
// they are read as they are.
const fromStored = (stored: unknown) => (typeof stored === 'string' ? (JSON.parse(stored) as Record<string, unknown>) : (stored as Record<string, unknown>));

/** A job item as it is written: value and result as JSON text, with its index attributes. */
const jobItem = <T extends { value: Record<string, unknown>; result?: Record<string, unknown> }>(job: T) => ({
  ...job,
  value: JSON.stringify(job.value),
  ...(job.result === undefined ? {} : { result: JSON.stringify(job.result) }),
});

/** A job as read from the table (a GetItem, a Query or a stream image), from either storage form. */
export const jobOfItem = (item: Record<string, unknown>): JobRecord => {
  const job = withoutIndexAttributes(strip<JobRecord>(item));
  return { ...job, value: fromStored(job.value), ...(job.result === undefined ? {} : { result: fromStored(job.result) }) };
};

/** A job's whole item as stored (its key, value and result as JSON text, its index attributes). */
export const storedJobItem = (job: JobRecord) => ({ ...jobKey(job.device_id, job.name), ...jobItem(job), ...indexAttributesOf(job) });

/** A FOTA's whole item as stored (its key, its index attributes). */
export const storedFotaItem = (fota: FotaRecord) => ({ ...fotaKey(fota.device_id), ...fota, ...indexAttributesOf(fota) });

/** Puts (creates or replaces) a device's job. */
export const putJob = async (db: Db, job: JobRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...jobKey(job.device_id, job.name), ...jobItem(job), ...indexAttributesOf(job) } }));
};

/** The places of the devices a fleet-wide write reaches, as they are stored: each yielded once it is. */
async function* placesOf(written: AsyncIterable<StoredItem[]>): AsyncGenerator<DeviceTarget[]> {
  for await (const items of written) {
    yield items.map((item) => ({ device_id: item.device_id as string, workspace_id: item.workspace_id as string, fleet_id: item.fleet_id as string }));
  }
}

/** The items of a stream of device pages, each built from its device and its place in the whole stream (snapshot order). */
async function* itemsOf<T>(pages: AsyncIterable<DeviceTarget[]>, item: (device: DeviceTarget, index: number) => T): AsyncGenerator<T[]> {
  let index = 0;
  for await (const page of pages) yield page.map((device) => item(device, index++));
}

/** What a fleet-wide write counts in each chunk's transaction (the items' rollout counter update), by the chunk's items and its slot. */
export type CountWritten = (items: Array<Record<string, unknown>>, slot: number) => TransactAction;

type StoredItem = ItemKey & Record<string, unknown>;

/**
 * A rollout's write leaves alone a device whose item is already its own (the registry stream gave
 * a continuous rollout's late device its item first): counted once, never written twice, and still
 * among the devices the scheduling answers.
 */
const notOfSameRollout = (item: StoredItem): PutCondition | undefined =>
  typeof item.rollout_id === 'string'
    ? { ConditionExpression: 'attribute_not_exists(pk) OR rollout_id <> :own', ExpressionAttributeValues: { ':own': item.rollout_id } }
    : undefined;

/**
 * Puts items page by page (stores/items.ts `putPipelined`), each chunk in a transaction with its
 * count when `count` is given (then an item already of the same rollout is left as it is and not
 * counted, and its device is yielded with the others).
 */
const putCounted = (db: Db, items: AsyncIterable<StoredItem[]>, concurrency: number, count?: CountWritten) =>
  placesOf(putPipelined(db, items, concurrency, count ? transactChunks<StoredItem>(db, count, notOfSameRollout) : undefined));

/**
 * Puts one job on every device of a stream of pages, each item built by `jobOf` from the device
 * and its place in the stream (its state in a rate-limited rollout), reading and writing at once
 * (stores/items.ts `putPipelined`); with `count`, each chunk of items is written in one
 * transaction with what `count` makes of it (its rollout's counts). Yields the devices as their
 * jobs are stored. Idempotent, so a retried request converges.
 */
export const putJobOnDevicePages = (
  db: Db,
  jobOf: (device: DeviceTarget, index: number) => JobRecord,
  pages: AsyncIterable<DeviceTarget[]>,
  concurrency: number,
  count?: CountWritten,
) =>
  putCounted(
    db,
    itemsOf(pages, (device, index) => {
      const job = jobOf(device, index);
      return { ...jobKey(job.device_id, job.name), ...jobItem(job), ...indexAttributesOf(job) };
    }),
    concurrency,
    count,
  );

/**
 * Puts one item per device of a stream of pages, each built by `itemOf` as stored (its key and
 * index attributes included), as `putJobOnDevicePages` does jobs: a state rollout's devices
 * (stores/state-execution-store.ts).
 */
export const putItemOnDevicePages = (
  db: Db,
  itemOf: (device: DeviceTarget, index: number) => StoredItem,
  pages: AsyncIterable<DeviceTarget[]>,
  concurrency: number,
  count?: CountWritten,
) => putCounted(db, itemsOf(pages, itemOf), concurrency, count);

export const getJobOfDevice = async (db: Db, deviceId: string, name: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: jobKey(deviceId, name), ConsistentRead: true }));
  return Item ? jobOfItem(Item) : undefined;
};

const statusFilter = (status: JobStatus) => ({
  FilterExpression: '#status = :status',
  ExpressionAttributeNames: { '#status': 'status' },
  ExpressionAttributeValues: { ':status': status },
});

/** A device's jobs one by one in name order, only those in `status` when given (a filter, so `pageSize` is not used then). */
export const readJobsOfDevice = (db: Db, deviceId: string, status: JobStatus | undefined, read: ListRead) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  if (!status) return keyedItems(db, { pk, prefix, ...read }, jobOfItem);
  return keyedItems(db, { pk, prefix, after: read.after, extra: statusFilter(status) }, jobOfItem);
};

export const listJobsOfDevice = async (db: Db, deviceId: string, status?: JobStatus) => {
  const { pk, prefix } = collection.jobsOfDevice(deviceId);
  const items = await queryAll<Record<string, unknown>>(db, pk, prefix, status ? statusFilter(status) : {});
  return items.map(jobOfItem);
};

/**
 * A change of state of a job or FOTA item, written only when it is in one of `from` (and its
 * attributes equal `expect`, paths such as `value.firmware_id` allowed), so that concurrent writers
 * (a device's answer, a cancel, the sweep) never undo each other: `updated_at` becomes `at`, an
 * ended one gets `completed_at`, a released one `released_at`, and its index entry follows (a
 * rollout device's moves to its new state; a deadline is dropped once it ended). `set` writes more
 * fields (undefined ones are left alone), `remove` drops some.
 */
export interface Transition {
  from: readonly JobStatus[];
  to: JobStatus;
  at: string;
  set?: Record<string, unknown>;
  remove?: readonly string[];
  expect?: Record<string, string>;
  /**
   * What the writer knows of the item, which spares a read (the sweep, from its index entry): the
   * rollout it belongs to (and, released, when), or that it belongs to none. Without it the item
   * is read first, and written only as it was read.
   */
  known?: { rollout_id: string; released_at?: string } | { rollout_id?: undefined };
}

const ENDS: ReadonlySet<string> = new Set(['done', 'failed', 'timed_out', 'canceled']);
// A write that finds the item changed since its read reads it again, this many times.
const TRANSITION_ATTEMPTS = 3;

/** The item's own state, read strongly consistent (for a transition's write conditions). */
const readItem = async (db: Db, key: ItemKey) => (await db.doc.send(new GetCommand({ TableName: db.table, Key: key, ConsistentRead: true }))).Item;

/** The conditional update of one transition, for an item of that shape (and that scheduling, when it was read). */
const transitionUpdate = (db: Db, key: ItemKey, deviceId: string, t: Transition, shape: NonNullable<Transition['known']>, scheduledAt?: string) => {
  const ended = ENDS.has(t.to);
  const time = t.to === 'in_progress' && shape.rollout_id ? (shape.released_at ?? t.at) : t.at;
  const fields: Record<string, unknown> = {
    status: t.to,
    updated_at: t.at,
    ...(ended ? { completed_at: t.at } : {}),
    ...(t.to === 'pending' ? { released_at: t.at } : {}),
    ...(shape.rollout_id ? { [SWEEP_SK]: rolloutDeviceSortKey(t.to, time, deviceId) } : {}),
    ...t.set,
  };
  const sets = Object.entries(fields).filter(([, value]) => value !== undefined);
  const removes = [...(ended && !shape.rollout_id ? [SWEEP_PK, SWEEP_SK] : []), ...(t.remove ?? [])];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (path: string) =>
    path
      .split('.')
      .map((part) => {
        const alias = `#n${Object.keys(names).length}`;
        names[alias] = part;
        return alias;
      })
      .join('.');
  const value = (v: unknown) => {
    const alias = `:v${Object.keys(values).length}`;
    values[alias] = v;
    return alias;
  };
  const update = [
    `SET ${sets.map(([field, v]) => `${name(field)} = ${value(v)}`).join(', ')}`,
    ...(removes.length ? [`REMOVE ${removes.map(name).join(', ')}`] : []),
  ].join(' ');
  const rollout = name('rollout_id');
  const expected = {
    ...t.expect,
    ...(shape.rollout_id && t.to === 'in_progress' && shape.released_at ? { released_at: shape.released_at } : {}),
    ...(scheduledAt ? { scheduled_at: scheduledAt } : {}),
  };
  // false for a missing item too, so that nothing is created
  const conditions = [
    `${name('status')} IN (${t.from.map(value).join(', ')})`,
    shape.rollout_id ? `${rollout} = ${value(shape.rollout_id)}` : `attribute_not_exists(${rollout})`,
    ...Object.entries(expected).map(([path, v]) => `${name(path)} = ${value(v)}`),
  ];
  return new UpdateCommand({
    TableName: db.table,
    Key: key,
    UpdateExpression: update,
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_NEW',
  });
};

/**
 * Applies a transition to the item at `key` (a job's or a FOTA's of device `deviceId`).
 * @returns the item as it is now, or undefined when there is no such item or it is in another state.
 */
export const transitionItem = async (db: Db, key: ItemKey, deviceId: string, t: Transition): Promise<Record<string, unknown> | undefined> => {
  for (let attempt = 0; attempt < TRANSITION_ATTEMPTS; attempt++) {
    let shape = t.known;
    let scheduledAt: string | undefined;
    if (!shape) {
      const current = await readItem(db, key);
      if (!current || !t.from.includes(current.status as JobStatus)) return undefined;
      shape = typeof current.rollout_id === 'string' ? { rollout_id: current.rollout_id, released_at: current.released_at as string | undefined } : {};
      scheduledAt = current.scheduled_at as string;
    }
    try {
      return (await db.doc.send(transitionUpdate(db, key, deviceId, t, shape, scheduledAt))).Attributes;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      // What the writer knew no longer holds; what was read has changed since: read it again.
      if (t.known) return undefined;
    }
  }
  return undefined;
};

/** A transition of a device's job; the result is stored as JSON text. @returns the job as it is now, or undefined (see transitionItem). */
export const transitionJob = async (db: Db, deviceId: string, name: string, t: Transition & { result?: Record<string, unknown> }) => {
  const { result, ...rest } = t;
  const item = await transitionItem(db, jobKey(deviceId, name), deviceId, {
    ...rest,
    set: { ...rest.set, ...(result === undefined ? {} : { result: JSON.stringify(result) }) },
  });
  return item && jobOfItem(item);
};

/** Puts (creates or replaces) a device's FOTA. */
export const putFota = async (db: Db, fota: FotaRecord) => {
  await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...fotaKey(fota.device_id), ...fota, ...indexAttributesOf(fota) } }));
};

/** Puts one FOTA on every device of a stream of pages, as `putJobOnDevicePages` does a job. */
export const putFotaOnDevicePages = (
  db: Db,
  fotaOf: (device: DeviceTarget, index: number) => FotaRecord,
  pages: AsyncIterable<DeviceTarget[]>,
  concurrency: number,
  count?: CountWritten,
) =>
  putCounted(
    db,
    itemsOf(pages, (device, index) => {
      const fota = fotaOf(device, index);
      return { ...fotaKey(fota.device_id), ...fota, ...indexAttributesOf(fota) };
    }),
    concurrency,
    count,
  );

export const getFotaOfDevice = async (db: Db, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: fotaKey(deviceId), ConsistentRead: true }));
  return Item ? fotaOfItem(Item) : undefined;
};

/** A transition of a device's FOTA. @returns the FOTA as it is now, or undefined (see transitionItem). */
export const transitionFota = async (db: Db, deviceId: string, t: Transition) => {
  const item = await transitionItem(db, fotaKey(deviceId), deviceId, t);
  return item && fotaOfItem(item);
};
