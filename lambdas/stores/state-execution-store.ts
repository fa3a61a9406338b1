import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { JobStatus } from '../schemas/job';
import {
  putItemOnDevicePages,
  indexAttributesOf,
  transitionItem,
  type CountWritten,
  type DeviceTarget,
  type EventStamp,
  type ExecutionTimes,
  type Transition,
} from './job-store';
import { queryAll, strip } from './items';
import { REGISTRY_SWEEP_INDEX, collection, stateExecutionKey } from './keys';

/**
 * One device of a fleet-wide desired-state rollout (kind `state`), as stored beside its jobs
 * (`DEV#<dev>` / `STATEROL#<rol>`): its state in the rollout and its times. The desired keys live
 * on the rollout, once, not on each of its devices.
 */
export type StateExecutionRecord = {
  device_id: string;
  rollout_id: string;
  status: JobStatus;
  scheduled_at: string;
  timeout_seconds?: number;
  completed_at?: string;
} & EventStamp &
  ExecutionTimes;

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;

/** A state execution as read from the table (a GetItem, a Query or a stream image). */
export const stateExecutionOfItem = (item: Record<string, unknown>): StateExecutionRecord => {
  const { [SWEEP_PK]: _p, [SWEEP_SK]: _s, ...rest } = strip<Record<string, unknown>>(item);
  return rest as unknown as StateExecutionRecord;
};

/** A state execution's whole item as stored (its key, its index attributes). */
export const storedStateItem = (execution: StateExecutionRecord) => ({
  ...stateExecutionKey(execution.device_id, execution.rollout_id),
  ...execution,
  ...indexAttributesOf(execution),
});

/** Puts a state rollout's item on every device of a stream of pages (as `putJobOnDevicePages`), counted by `count`; yields the devices as stored. */
export const putStateOnDevicePages = (
  db: Db,
  executionOf: (device: DeviceTarget, index: number) => StateExecutionRecord,
  pages: AsyncIterable<DeviceTarget[]>,
  concurrency: number,
  count?: CountWritten,
) => putItemOnDevicePages(db, (device, index) => storedStateItem(executionOf(device, index)), pages, concurrency, count);

export const getStateExecution = async (db: Db, deviceId: string, rolloutId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: stateExecutionKey(deviceId, rolloutId), ConsistentRead: true }));
  return Item ? stateExecutionOfItem(Item) : undefined;
};

/** A device's state executions in `status` (one Query of its partition's `STATEROL#` items, filtered). */
export const listStateExecutionsOfDevice = async (db: Db, deviceId: string, status: JobStatus) => {
  const { pk, prefix } = collection.stateExecutionsOfDevice(deviceId);
  const items = await queryAll<Record<string, unknown>>(db, pk, prefix, {
    FilterExpression: '#status = :status',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':status': status },
  });
  return items.map(stateExecutionOfItem);
};

/** A transition of a device's state execution (stores/job-store.ts transitionItem). @returns it as it is now, or undefined. */
export const transitionStateExecution = async (db: Db, deviceId: string, rolloutId: string, t: Transition) => {
  const item = await transitionItem(db, stateExecutionKey(deviceId, rolloutId), deviceId, t);
  return item && stateExecutionOfItem(item);
};
