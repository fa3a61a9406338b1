import { BatchGetCommand, UpdateCommand, type BatchGetCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { deviceLocatorKey } from './keys';

/**
 * When a device's MQTT sessions were last closed because what let them in no longer holds (an
 * identity revoked): what the broker received from the device between `from` and `to` (Unix
 * milliseconds, both included) came from a session that should not have been open.
 */
export interface ClosedSessions {
  from: number;
  to: number;
}

const BATCH_GET_LIMIT = 100; // BatchGetItem reads at most 100 keys

const closedOf = (item: Record<string, unknown> | undefined): ClosedSessions | undefined =>
  typeof item?.sessions_closed_from === 'number' && typeof item.sessions_closed_to === 'number'
    ? { from: item.sessions_closed_from, to: item.sessions_closed_to }
    : undefined;

/**
 * Writes the window of a device's closed sessions on its locator (the item the MQTT door's
 * consumers read for the device), over any earlier one. A device that is gone is left alone.
 */
export const markClosedSessions = async (db: Db, deviceId: string, { from, to }: ClosedSessions) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceLocatorKey(deviceId),
        UpdateExpression: 'SET sessions_closed_from = :from, sessions_closed_to = :to',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':from': from, ':to': to },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/** The window of closed sessions on a device's locator (as `findDeviceLocator` reads it whole), if any. */
export const closedSessionsOfLocator = (locator: object | undefined) => closedOf(locator as Record<string, unknown> | undefined);

/**
 * The windows of closed sessions of these devices, by device (those that have one), read strongly
 * consistent: a window written before a message was consumed is seen.
 */
export const readClosedSessions = async (db: Db, deviceIds: string[]): Promise<Map<string, ClosedSessions>> => {
  const wanted = [...new Set(deviceIds)];
  const deviceOf = new Map(wanted.map((id) => [deviceLocatorKey(id).pk, id]));
  const found = new Map<string, ClosedSessions>();
  for (let i = 0; i < wanted.length; i += BATCH_GET_LIMIT) {
    let keys: Array<Record<string, unknown>> | undefined = wanted.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ ...deviceLocatorKey(id) }));
    while (keys?.length) {
      const result: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({
          RequestItems: { [db.table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: 'pk, sessions_closed_from, sessions_closed_to' } },
        }),
      );
      for (const item of result.Responses?.[db.table] ?? []) {
        const closed = closedOf(item);
        if (closed) found.set(deviceOf.get(item.pk as string)!, closed);
      }
      keys = result.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return found;
};
