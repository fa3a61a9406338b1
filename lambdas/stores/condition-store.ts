import { GetCommand, QueryCommand, TransactWriteCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { ConflictError } from '../shared/errors';
import { failedConditions } from './errors';
import type { Keyed } from './items';
import type { ItemKey } from './keys';
import {
  REGISTRY_TTL_ATTRIBUTE,
  closedConditionKey,
  collection,
  conditionKey,
  conditionRecordKey,
  deviceConditionRecordKey,
  earlyCloseKey,
  sortableTs,
} from './keys';

/**
 * A condition as stored: one record in its workspace's partition (`COND#<start>#<device>#<uuid>`),
 * open or closed, and its copy in the device's partition (`CONDH#<start>#<uuid>`: a list of one
 * device's conditions reads only them, never the workspace's), and beside them a pointer by the
 * device's uuid: `COND#` while open (what `#conditions` answers), `CONDC#` once closed (where a
 * retried close finds it).
 * Payloads are kept as JSON text: a device's JSON may nest deeper, or hold other map keys, than an
 * item's attributes can.
 */
export interface ConditionRecord {
  uuid: string;
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  tag: string;
  status: 'open' | 'closed';
  payload: unknown;
  finish_payload: unknown;
  start: string;
  finish: string | null;
  duration_seconds: number | null;
}

/** A device's pointer to a condition's record. */
export interface ConditionPointer {
  uuid: string;
  tag: string;
  start: string;
  workspace_id?: string;
}

/** How long the pointer of a closed condition is kept: a close retried within it answers the record it closed. */
export const CLOSED_POINTER_DAYS = 30;

/**
 * A close that came before its opening: over MQTT a standard queue keeps no order, so a device's
 * close may be handled first. Kept by the device's uuid (for {@link CLOSED_POINTER_DAYS}) until an
 * opening of that uuid that started by its finish comes, which it then closes.
 */
export interface EarlyClose {
  uuid: string;
  finish: string;
  finish_payload: unknown;
  /** When the close arrived: the time of its entry in the device's event log. */
  arrival: string;
}

const recordKeyOf = (r: Pick<ConditionRecord, 'workspace_id' | 'start' | 'device_id' | 'uuid'>) =>
  conditionRecordKey(r.workspace_id, r.start, r.device_id, r.uuid);

const deviceRecordKeyOf = (r: Pick<ConditionRecord, 'start' | 'device_id' | 'uuid'>) => deviceConditionRecordKey(r.device_id, r.start, r.uuid);

const attributesOf = (r: ConditionRecord) => {
  const { payload, finish_payload, ...rest } = r;
  return { ...rest, payload_json: JSON.stringify(payload ?? null), finish_payload_json: JSON.stringify(finish_payload ?? null) };
};

/** The Puts of a record and of its device's copy. */
const recordPuts = (db: Db, r: ConditionRecord) => [
  { Put: { TableName: db.table, Item: { ...recordKeyOf(r), ...attributesOf(r) } } },
  { Put: { TableName: db.table, Item: { ...deviceRecordKeyOf(r), ...attributesOf(r) } } },
];

const fromItem = (item: Record<string, unknown>): ConditionRecord => ({
  uuid: item.uuid as string,
  workspace_id: item.workspace_id as string,
  fleet_id: item.fleet_id as string,
  device_id: item.device_id as string,
  tag: item.tag as string,
  status: item.status as ConditionRecord['status'],
  payload: typeof item.payload_json === 'string' ? JSON.parse(item.payload_json) : null,
  finish_payload: typeof item.finish_payload_json === 'string' ? JSON.parse(item.finish_payload_json) : null,
  start: item.start as string,
  finish: (item.finish as string | undefined) ?? null,
  duration_seconds: (item.duration_seconds as number | undefined) ?? null,
});

const getItem = async (db: Db, Key: ItemKey) => (await db.doc.send(new GetCommand({ TableName: db.table, Key, ConsistentRead: true }))).Item;

/**
 * A device's pointers to its condition `uuid`: the open one, the closed one, and a close that came
 * before its opening (each may be missing). Three reads at once.
 */
export const getConditionPointers = async (db: Db, deviceId: string, uuid: string) => {
  const [open, closed, early] = await Promise.all([
    getItem(db, conditionKey(deviceId, uuid)),
    getItem(db, closedConditionKey(deviceId, uuid)),
    getItem(db, earlyCloseKey(deviceId, uuid)),
  ]);
  return {
    open: open as ConditionPointer | undefined,
    closed: closed as ConditionPointer | undefined,
    early: early && { ...(early as Omit<EarlyClose, 'finish_payload'>), finish_payload: JSON.parse(early.finish_payload_json as string) as unknown },
  };
};

/**
 * Keeps a close whose opening has not come yet, expiring after {@link CLOSED_POINTER_DAYS}, while
 * the uuid is not open (an opening handled at the same time may have written it meanwhile).
 * @returns false when the uuid was opened meanwhile (nothing written): read again.
 */
export const putEarlyClose = async (db: Db, deviceId: string, close: EarlyClose, now = Date.now()) => {
  const { finish_payload, ...rest } = close;
  const item = {
    ...earlyCloseKey(deviceId, close.uuid),
    ...rest,
    finish_payload_json: JSON.stringify(finish_payload ?? null),
    [REGISTRY_TTL_ATTRIBUTE]: Math.floor(now / 1000) + CLOSED_POINTER_DAYS * 86_400,
  };
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { ConditionCheck: { TableName: db.table, Key: conditionKey(deviceId, close.uuid), ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName: db.table, Item: item } },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (failedConditions(error)?.includes(0)) return false;
    throw error;
  }
};

/** The record a pointer points at, if it is still there. */
export const getConditionRecord = async (db: Db, workspaceId: string, deviceId: string, pointer: ConditionPointer) => {
  const item = await getItem(db, conditionRecordKey(workspaceId, pointer.start, deviceId, pointer.uuid));
  return item && fromItem(item);
};

/**
 * Writes an open condition in one transaction: its record and its open pointer; the closed
 * pointer of a uuid used before goes, and so does the record of the open condition it replaces
 * (the same uuid opened again at another start). With `noEarlyClose`, only while no close of the
 * uuid is kept from before its opening (one kept meanwhile, by a close handled at the same time).
 * @returns false when such a close was kept meanwhile (nothing written): read again.
 */
export const putOpenConditionRecord = async (db: Db, record: ConditionRecord, replacedStart?: string, { noEarlyClose = false } = {}) => {
  const pointer: ConditionPointer = { uuid: record.uuid, tag: record.tag, start: record.start, workspace_id: record.workspace_id };
  const was = { ...record, start: replacedStart ?? record.start };
  const replaced =
    replacedStart !== undefined && replacedStart !== record.start
      ? [{ Delete: { TableName: db.table, Key: recordKeyOf(was) } }, { Delete: { TableName: db.table, Key: deviceRecordKeyOf(was) } }]
      : [];
  const TransactItems = [
    { Put: { TableName: db.table, Item: { ...conditionKey(record.device_id, record.uuid), ...pointer } } },
    ...recordPuts(db, record),
    { Delete: { TableName: db.table, Key: closedConditionKey(record.device_id, record.uuid) } },
    ...replaced,
    ...(noEarlyClose
      ? [{ ConditionCheck: { TableName: db.table, Key: earlyCloseKey(record.device_id, record.uuid), ConditionExpression: 'attribute_not_exists(pk)' } }]
      : []),
  ];
  try {
    await db.doc.send(new TransactWriteCommand({ TransactItems }));
    return true;
  } catch (error) {
    if (noEarlyClose && failedConditions(error)?.includes(TransactItems.length - 1)) return false;
    throw error;
  }
};

/**
 * Writes a condition's close in one transaction: its record becomes closed (finish, finish
 * payload, duration), its open pointer goes and its closed pointer (expiring after
 * {@link CLOSED_POINTER_DAYS}) takes its place, and a close kept from before its opening goes. The
 * open pointer must still name the same start: a concurrent reopening fails the transaction rather
 * than being closed.
 * @throws ConflictError when the condition was opened again meanwhile (nothing written).
 */
export const putClosedConditionRecord = async (db: Db, record: ConditionRecord, now = Date.now()) => {
  const pointer: ConditionPointer = { uuid: record.uuid, tag: record.tag, start: record.start, workspace_id: record.workspace_id };
  const closing = db.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Delete: {
            TableName: db.table,
            Key: conditionKey(record.device_id, record.uuid),
            ConditionExpression: '#start = :start',
            ExpressionAttributeNames: { '#start': 'start' },
            ExpressionAttributeValues: { ':start': record.start },
          },
        },
        {
          Put: {
            TableName: db.table,
            Item: {
              ...closedConditionKey(record.device_id, record.uuid),
              ...pointer,
              [REGISTRY_TTL_ATTRIBUTE]: Math.floor(now / 1000) + CLOSED_POINTER_DAYS * 86_400,
            },
          },
        },
        ...recordPuts(db, record),
        { Delete: { TableName: db.table, Key: earlyCloseKey(record.device_id, record.uuid) } },
      ],
    }),
  );
  await closing.catch((error: unknown) => {
    if (failedConditions(error)?.includes(0)) throw new ConflictError(`Condition ${record.uuid} was opened again meanwhile: close it again.`, { cause: error });
    throw error;
  });
};

/** What a list of a workspace's conditions keeps (every filter optional). */
export interface ConditionFilter {
  tag?: string;
  /** One device's conditions: read from its partition, never the workspace's. */
  deviceId?: string;
  status?: 'open' | 'closed';
  /** Closed ones lasted at least this; open ones opened at or before `openedBy`. */
  minDuration?: { seconds: number; openedBy: string };
  /** Opened at or after it. */
  start?: string;
  /** Opened before it. */
  end?: string;
}

/** Where a list of conditions reads: the workspace's records, or one device's copies of them. */
export const conditionsCollection = (workspaceId: string, deviceId?: string) =>
  deviceId === undefined ? collection.conditionsOfWorkspace(workspaceId) : collection.conditionRecordsOfDevice(deviceId);

/** The sort-key range of a list's records: its start and end filters, as bounds of the Query itself (never a filter). */
export const conditionRange = (prefix: string, filter: Pick<ConditionFilter, 'start' | 'end'>) => ({
  low: filter.start === undefined ? prefix : `${prefix}${sortableTs(filter.start)}`,
  // A record opened at `end` has a longer key than the bound ("…Z#…"); "$" sorts right after "#".
  high: filter.end === undefined ? `${prefix.slice(0, -1)}$` : `${prefix}${sortableTs(filter.end)}`,
});

interface FilterParts {
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

const filterOf = (workspaceId: string, filter: ConditionFilter): FilterParts => {
  const clauses: Array<[string, Record<string, unknown>]> = [];
  // A device's partition holds only its own records; the workspace is checked all the same, so that
  // another account's device named under the caller's workspace answers nothing.
  if (filter.deviceId !== undefined) clauses.push(['workspace_id = :ws', { ':ws': workspaceId }]);
  if (filter.tag !== undefined) clauses.push(['tag = :tag', { ':tag': filter.tag }]);
  if (filter.status !== undefined) clauses.push(['#status = :status', { ':status': filter.status }]);
  if (filter.minDuration !== undefined) {
    const { seconds, openedBy } = filter.minDuration;
    clauses.push([
      '((#status = :closed AND duration_seconds >= :min) OR (#status = :open AND #start <= :openedBy))',
      { ':closed': 'closed', ':open': 'open', ':min': seconds, ':openedBy': openedBy },
    ]);
  }
  if (clauses.length === 0) return {};
  const expression = clauses.map(([clause]) => clause).join(' AND ');
  const names = Object.fromEntries(['status', 'start'].filter((name) => expression.includes(`#${name}`)).map((name) => [`#${name}`, name]));
  return {
    FilterExpression: expression,
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: Object.assign({}, ...clauses.map(([, values]) => values)),
  };
};

/**
 * A workspace's condition records, newest first (by start), each with its sort key: one Query
 * backwards over the start and end range (in the device's partition when the filter names one),
 * the other filters applied by DynamoDB, page after page until the reader stops. `after` resumes
 * after a sort key (it must lie within the range); `pageSize` bounds what each Query evaluates
 * when nothing is filtered.
 */
export async function* readConditions(
  db: Db,
  workspaceId: string,
  filter: ConditionFilter,
  { after, pageSize }: { after?: string; pageSize?: number } = {},
): AsyncGenerator<Keyed<ConditionRecord>> {
  const { pk, prefix } = conditionsCollection(workspaceId, filter.deviceId);
  const { low, high } = conditionRange(prefix, filter);
  const filtered = filterOf(workspaceId, filter);
  let ExclusiveStartKey: Record<string, unknown> | undefined = after === undefined ? undefined : { pk, sk: after };
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        ScanIndexForward: false,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
        ...filtered,
        ExpressionAttributeValues: { ...filtered.ExpressionAttributeValues, ':pk': pk, ':low': low, ':high': high },
        ...(pageSize && !filtered.FilterExpression ? { Limit: pageSize } : {}),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) yield { sk: item.sk as string, value: fromItem(item) };
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}
