import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { settleAll } from '../shared/settle';
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

/** How many entries of devices' event logs are written at once: a stream batch names thousands of events. */
const WRITE_CONCURRENCY = 8;

/**
 * Writes entries of devices' event logs, each expiring `ttlSeconds` after now (DynamoDB's TTL
 * removes it within days of that, at no cost): one UpdateItem an entry, at most
 * {@link WRITE_CONCURRENCY} in flight, so that a batch of thousands of events never holds every
 * connection of the client its Lambda shares with its other work. An entry is keyed by its event's
 * `ts` and type, so a retried producer rewrites the same item instead of adding one. The payload is
 * kept as its JSON text (`payload_json`): a device's JSON may nest 32 levels, an item's attributes
 * no deeper than 32 in all, and may hold keys DynamoDB refuses as map keys.
 * @throws the first write's error, once every entry has been tried
 */
export const putDeviceEvents = async (db: Db, events: DeviceEventRecord[], ttlSeconds: number, now = Date.now()) => {
  const results = await settleAll(events, WRITE_CONCURRENCY, (event) =>
    db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceEventKey(event.device_id, event.ts, event.type),
        UpdateExpression:
          'SET ts = :ts, #type = :type, direction = :direction, workspace_id = :ws, fleet_id = :fleet, device_id = :dev, payload_json = :payload, #ttl = :ttl',
        ExpressionAttributeNames: { '#type': 'type', '#ttl': REGISTRY_TTL_ATTRIBUTE },
        ExpressionAttributeValues: {
          ':ts': event.ts,
          ':type': event.type,
          ':direction': event.direction,
          ':ws': event.workspace_id,
          ':fleet': event.fleet_id,
          ':dev': event.device_id,
          ':payload': JSON.stringify(event.payload ?? null),
          ':ttl': Math.floor(now / 1000) + ttlSeconds,
        },
      }),
    ),
  );
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
};

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
