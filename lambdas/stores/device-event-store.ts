import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { putAll } from './items';
import { DEVICE_EVENT_SORT_KEY_PREFIX, deviceEventKey, REGISTRY_TTL_ATTRIBUTE, sortableTs } from './keys';

/** One entry of a device's event log, as stored (beside its key and expiry). */
export interface DeviceEventRecord {
  ts: string;
  type: string;
  direction: 'd2c' | 'c2d';
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  payload: unknown;
}

/** How many BatchWriteItem calls of a log's entries are in flight at once: a stream batch names thousands of events. */
const WRITE_CONCURRENCY = 4;

/**
 * Writes entries of devices' event logs, each expiring `ttlSeconds` after now (DynamoDB's TTL
 * removes it within days of that, at no cost): BatchWriteItem, 25 entries a call, at most
 * {@link WRITE_CONCURRENCY} calls in flight, so that a batch of thousands of events never holds
 * every connection of the client its Lambda shares with its other work. An entry is keyed by its
 * event's `ts` and type, so a retried producer rewrites the same item instead of adding one. The
 * payload is kept as its JSON text (`payload_json`): a device's JSON may nest 32 levels, an item's
 * attributes no deeper than 32 in all, and may hold keys DynamoDB refuses as map keys.
 */
export const putDeviceEvents = (db: Db, events: DeviceEventRecord[], ttlSeconds: number, now = Date.now()) =>
  putAll(
    db,
    events.map((event) => ({
      ...deviceEventKey(event.device_id, event.ts, event.type),
      ts: event.ts,
      type: event.type,
      direction: event.direction,
      workspace_id: event.workspace_id,
      fleet_id: event.fleet_id,
      device_id: event.device_id,
      payload_json: JSON.stringify(event.payload ?? null),
      [REGISTRY_TTL_ATTRIBUTE]: Math.floor(now / 1000) + ttlSeconds,
    })),
    WRITE_CONCURRENCY,
  );

/**
 * A device's logged events, newest first: at most `limit`, only those before `before` (an event's
 * `ts`) when given. One Query. An entry past its expiry that DynamoDB has not removed yet (it
 * does within days) is still answered: a filter would make pages shorter than `limit`.
 */
export const readDeviceEvents = async (db: Db, deviceId: string, { limit, before }: { limit: number; before?: string }) => {
  const pk = `DEV#${deviceId}`;
  const { Items = [] } = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      ScanIndexForward: false,
      KeyConditionExpression: before === undefined ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk AND sk BETWEEN :prefix AND :before',
      ExpressionAttributeValues: {
        ':pk': pk,
        ':prefix': DEVICE_EVENT_SORT_KEY_PREFIX,
        // Every sort key of an event at `before` continues with "#": "#" sorts before every digit, so BETWEEN stops short of them.
        ...(before === undefined ? {} : { ':before': `${DEVICE_EVENT_SORT_KEY_PREFIX}${sortableTs(before)}` }),
      },
      Limit: limit,
    }),
  );
  return Items.map(({ ts, type, direction, workspace_id, fleet_id, device_id, payload_json }) => ({
    ts,
    type,
    direction,
    workspace_id,
    fleet_id,
    device_id,
    payload: typeof payload_json === 'string' ? JSON.parse(payload_json) : null,
  })) as DeviceEventRecord[];
};
