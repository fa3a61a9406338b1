import {
  BatchGetCommand,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type BatchGetCommandOutput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError, ThrottledError } from '../shared/errors';
import { keyedPages, putNew, queryAll, strip, type ListRead } from './items';
import { failedConditions, isConditionFailed } from './errors';
import type { QuotaCheck } from './limits-store';
import { historyAfterMove, staysOf, type FleetStay } from './fleet-history';
import { fleetRefusal, fleetTakesDevices, getFleetOfWorkspace } from './fleet-store';
import type { StoredDeviceState } from './device-state-store';
import { splitTagIndexWrites, tagIndexWrites, type StoredTags } from './device-tag-index';
import { ACTIVE_IDENTITIES, type ActiveIdentities } from './identity-store';
import { collection, deviceKey, deviceLocatorKey, scheduleClockKey, workspaceKey, type ItemKey } from './keys';

/** A device as stored (names of its fleet and workspace are joined in on read). */
export interface DeviceRecord {
  id: string;
  name: string;
  account_id: string;
  workspace_id: string;
  fleet_id: string;
  phys_id: string;
  created_at: string;
  /** The device's recent fleets on the workspace's scheduling clock (absent on devices never moved since histories exist). */
  fleet_history?: FleetStay[];
  /** Counts the device's moves: a move is written only over the version it read. */
  rev?: number;
  /** Its tags (absent on devices made before tags, and on devices given none). */
  tags?: StoredTags;
  /** Its desired and reported state (absent on a device never given one; stores/device-state-store.ts). */
  state?: StoredDeviceState;
  /** Its identities that are not revoked (identity-store.ts; absent on devices made before it until their next identity). */
  active_identities?: ActiveIdentities;
}

/** What a change of a device sets: its name and fleet, and its physical ID and tags when given (tags: all of them). */
export interface DeviceChange {
  name: string;
  fleet_id: string;
  phys_id?: string;
  tags?: StoredTags;
}

/** BatchGetItem reads at most 100 keys a call. */
const BATCH_GET_LIMIT = 100;

/**
 * The current names of those of these device IDs that are devices of the workspace (eventually
 * consistent: an export's names), read by key in batches of 100 (BatchGetItem); keys DynamoDB
 * leaves unprocessed are asked again.
 */
export const getDeviceNames = async (db: Db, workspaceId: string, deviceIds: readonly string[]): Promise<Map<string, string>> => {
  const wanted = [...new Set(deviceIds)];
  const found = new Map<string, string>();
  for (let i = 0; i < wanted.length; i += BATCH_GET_LIMIT) {
    let keys: Array<Record<string, unknown>> | undefined = wanted.slice(i, i + BATCH_GET_LIMIT).map((id) => ({ ...deviceKey(workspaceId, id) }));
    for (let attempt = 0; keys?.length; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** attempt)));
      const result: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({ RequestItems: { [db.table]: { Keys: keys, ProjectionExpression: 'id, #name', ExpressionAttributeNames: { '#name': 'name' } } } }),
      );
      for (const item of result.Responses?.[db.table] ?? []) found.set(item.id as string, item.name as string);
      keys = result.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return found;
};

/**
 * Where a device lives; found from its ID alone (the `/devices/{deviceId}` routes, the MQTT
 * door). It also carries the device's fleet and name, written in the same transactions as the
 * device (absent on locators written before).
 */
export interface DeviceLocator {
  account_id: string;
  workspace_id: string;
  fleet_id?: string;
  name?: string;
}

export const getDeviceOfWorkspace = async (db: Db, workspaceId: string, deviceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }));
  return Item ? strip<DeviceRecord>(Item) : undefined;
};

/**
 * A device's locator, undefined for a deleted device (its tombstone). `consistent: false` reads it eventually consistently (half a read unit), for
 * a reader that keeps what it reads for minutes anyway.
 */
export const findDeviceLocator = async (db: Db, deviceId: string, { consistent = true } = {}) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceLocatorKey(deviceId), ConsistentRead: consistent }));
  // A deleted device's locator is its tombstone (device-deletion-store.ts): no device lives there.
  return Item && Item.deleted_at === undefined ? locatorOf(Item) : undefined;
};

/**
 * The workspace's devices page by page, in ID order (creation order: shared/ids.ts), only those of
 * `fleetIds` when given (a filter: DynamoDB still reads the others, and `pageSize` would count them).
 */
export const readDevicesOfWorkspace = (db: Db, workspaceId: string, { fleetIds, ...read }: ListRead & { fleetIds?: string[] }) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  if (!fleetIds?.length) return keyedPages<DeviceRecord>(db, { pk, prefix, ...read });
  const wanted = [...new Set(fleetIds)];
  return keyedPages<DeviceRecord>(db, {
    pk,
    prefix,
    after: read.after,
    // A search's growing pages bound its first read; the plain list reads 1 MB pages of its fleets.
    ...(read.grow ? { pageSize: read.pageSize, grow: read.grow } : {}),
    extra: {
      // IN takes up to 100 values, as many as the `fleet` parameter may name.
      FilterExpression: `fleet_id IN (${wanted.map((_, i) => `:f${i}`).join(', ')})`,
      ExpressionAttributeValues: Object.fromEntries(wanted.map((id, i) => [`:f${i}`, id])),
    },
  });
};

/** IDs, fleets and MQTT connection state of the workspace's devices in these fleets (every fleet when `fleetIds` is undefined). */
export const listDevicesOfFleets = async (db: Db, workspaceId: string, fleetIds?: string[]) => {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  const devices = await queryAll<Pick<DeviceRecord, 'id' | 'fleet_id'> & { connected?: boolean }>(db, pk, prefix, {
    ProjectionExpression: 'id, fleet_id, connected',
  });
  const wanted = fleetIds && new Set(fleetIds);
  return devices.filter((d) => !wanted || wanted.has(d.fleet_id));
};

/** The workspace's scheduling clock now (0 before the first fleet-wide scheduling). */
const readScheduleClock = async (db: Db, workspaceId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: scheduleClockKey(workspaceId), ConsistentRead: true }));
  return Number(Item?.epoch ?? 0);
};

/** A transaction item that holds only while the workspace's clock still reads `epoch`. */
const clockStill = (db: Db, key: ItemKey, epoch: number) => ({
  ConditionCheck: {
    TableName: db.table,
    Key: key,
    ConditionExpression: epoch ? 'epoch = :epoch' : 'attribute_not_exists(epoch)',
    ...(epoch ? { ExpressionAttributeValues: { ':epoch': epoch } } : {}),
  },
});

const MAX_MOVE_ATTEMPTS = 8;
const RETRY = Symbol('retry');
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a device write stamped with the scheduling clock until it commits: when a fleet-wide
 * scheduling advanced the clock meanwhile (or another transaction held an item), it is read and
 * tried again, with a short jittered backoff.
 * @throws ThrottledError when it never commits.
 */
const withClock = async <T>(attempt: () => Promise<T | typeof RETRY>): Promise<T> => {
  for (let i = 0; i < MAX_MOVE_ATTEMPTS; i++) {
    if (i) await pause(Math.random() * Math.min(200, 10 * 2 ** i));
    const result = await attempt();
    if (result !== RETRY) return result;
  }
  throw new ThrottledError('The workspace is busy scheduling; retry the request.');
};
const isConflict = (error: unknown) =>
  (error as { name?: string })?.name === 'TransactionCanceledException' &&
  ((error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');

/**
 * Creates a device and its locator, provided its fleet exists and the workspace's quota of devices
 * takes it, all or nothing; its fleet history starts at the scheduling clock's value.
 * @throws NotFoundError when the fleet is not in the workspace; QuotaExceededError from the quota.
 */
export const createDevice = async (db: Db, device: DeviceRecord, quota: QuotaCheck) =>
  withClock(async () => {
    const [epoch, counted] = await Promise.all([readScheduleClock(db, device.workspace_id), quota.item()]);
    const stay: FleetStay = { fleet_id: device.fleet_id, epoch, at: device.created_at };
    try {
      await db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            putNew(db, deviceKey(device.workspace_id, device.id), { ...device, fleet_history: [stay], rev: 1, [ACTIVE_IDENTITIES]: {} }),
            putNew(db, deviceLocatorKey(device.id), {
              account_id: device.account_id,
              workspace_id: device.workspace_id,
              fleet_id: device.fleet_id,
              name: device.name,
            }),
            fleetTakesDevices(db, device.workspace_id, device.fleet_id),
            clockStill(db, scheduleClockKey(device.workspace_id), epoch),
            counted,
            ...tagIndexWrites(db, device.workspace_id, device.id, {}, device.tags).puts,
          ],
        }),
      );
      return undefined;
    } catch (error) {
      const failed = failedConditions(error);
      if (failed?.includes(2)) throw await fleetRefusal(db, device.workspace_id, device.fleet_id, error);
      if (failed?.includes(4)) await quota.failed();
      if (failed?.includes(3) || failed?.includes(4) || isConflict(error)) return RETRY;
      throw error;
    }
  });

/**
 * A transaction's count of a change to the places of a workspace's devices (a move or a rename):
 * the workspace's `places_version`, by which the ingest knows its remembered places are stale.
 * Last in its transaction, without a condition (never a failed condition of its own).
 */
const placesChanged = (db: Db, accountId: string, workspaceId: string) => ({
  Update: {
    TableName: db.table,
    Key: workspaceKey(accountId, workspaceId),
    UpdateExpression: 'ADD places_version :one',
    ExpressionAttributeValues: { ':one': 1 },
  },
});

/** The SET clauses and values of a device's update. */
const deviceSets = (device: DeviceRecord, change: DeviceChange, history: FleetStay[] | undefined) => {
  const tags = change.tags && Object.keys(change.tags).length ? change.tags : undefined;
  const sets = [
    '#name = :name',
    'fleet_id = :fleet',
    '#rev = :next',
    ...(history ? ['fleet_history = :history'] : []),
    ...(change.phys_id !== undefined ? ['phys_id = :phys'] : []),
    ...(tags ? ['tags = :tags'] : []),
  ];
  const UpdateExpression = `SET ${sets.join(', ')}${change.tags && !tags ? ' REMOVE tags' : ''}`;
  const values = {
    ':name': change.name,
    ':fleet': change.fleet_id,
    ':next': (device.rev ?? 0) + 1,
    ...(device.rev === undefined ? {} : { ':rev': device.rev }),
    ...(history ? { ':history': history } : {}),
    ...(change.phys_id !== undefined ? { ':phys': change.phys_id } : {}),
    ...(tags ? { ':tags': tags } : {}),
  };
  return { UpdateExpression, values };
};

/**
 * Sets a device's name, fleet (and physical ID and tags when given), provided both exist, all or
 * nothing. `change` may be a function of the device as read (a PATCH's merge), called again on
 * each retry. A change of fleet is added to the device's fleet history, stamped with the
 * scheduling clock; every change is written only over the version of the device it read, with its
 * tag index entries (stores/device-tag-index.ts).
 * @throws NotFoundError when the device or the fleet is not in the workspace; what `change` throws.
 */
export const updateDevice = async (
  db: Db,
  workspaceId: string,
  deviceId: string,
  changeOf: DeviceChange | ((device: DeviceRecord) => DeviceChange),
): Promise<DeviceRecord> => {
  await withClock(async () => {
    const [epoch, device] = await Promise.all([readScheduleClock(db, workspaceId), getDeviceOfWorkspace(db, workspaceId, deviceId)]);
    if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
    const change = typeof changeOf === 'function' ? changeOf(device) : changeOf;
    const moves = device.fleet_id !== change.fleet_id;
    // The MQTT data path keeps places until their workspace's places_version changes (domain/device-places.ts).
    const placed = moves || device.name !== change.name;
    const history = moves ? historyAfterMove(staysOf(device), { fleet_id: change.fleet_id, epoch, at: new Date().toISOString() }) : undefined;
    const { UpdateExpression, values } = deviceSets(device, change, history);
    const actions: NonNullable<TransactWriteCommandInput['TransactItems']> = [
      {
        Update: {
          TableName: db.table,
          Key: deviceKey(workspaceId, deviceId),
          UpdateExpression,
          ConditionExpression: device.rev === undefined ? 'attribute_exists(pk) AND attribute_not_exists(#rev)' : '#rev = :rev',
          ExpressionAttributeNames: { '#name': 'name', '#rev': 'rev' },
          ExpressionAttributeValues: values,
        },
      },
      fleetTakesDevices(db, workspaceId, change.fleet_id),
      {
        Update: {
          TableName: db.table,
          Key: deviceLocatorKey(deviceId),
          UpdateExpression: 'SET fleet_id = :fleet, #name = :name',
          ExpressionAttributeNames: { '#name': 'name' },
          ExpressionAttributeValues: { ':fleet': change.fleet_id, ':name': change.name },
        },
      },
      // Only a move needs the clock: a rename changes no snapshot.
      ...(moves ? [clockStill(db, scheduleClockKey(workspaceId), epoch)] : []),
      ...(placed ? [placesChanged(db, device.account_id, workspaceId)] : []),
    ];
    const tagWrites = change.tags ? tagIndexWrites(db, workspaceId, deviceId, device.tags, change.tags) : { puts: [], deletes: [] };
    try {
      const indexed = await splitTagIndexWrites(db, tagWrites, actions.length, async () => {
        const fleet = await getFleetOfWorkspace(db, workspaceId, change.fleet_id);
        if (!fleet || fleet.deleting_at) throw await fleetRefusal(db, workspaceId, change.fleet_id, undefined);
      });
      await db.doc.send(new TransactWriteCommand({ TransactItems: [...actions, ...(indexed as typeof actions)] }));
      return undefined;
    } catch (error) {
      const failed = failedConditions(error);
      if (failed?.includes(1)) throw await fleetRefusal(db, workspaceId, change.fleet_id, error);
      // Another move (or a fleet-wide scheduling) came first: read again.
      if (failed?.includes(0) || failed?.includes(3) || isConflict(error)) return RETRY;
      throw error;
    }
  });
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return device;
};

/**
 * Advances the workspace's scheduling clock and answers its new value: the snapshot of a
 * fleet-wide scheduling (stores/fleet-history.ts).
 */
export const advanceScheduleClock = async (db: Db, workspaceId: string) => {
  const { Attributes } = await db.doc.send(
    new UpdateCommand({
      TableName: db.table,
      Key: scheduleClockKey(workspaceId),
      UpdateExpression: 'ADD epoch :one',
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(Attributes?.epoch);
};

/** What a device's daily quotas count on its locator: its data points, its events, its other messages. */
export type DeviceCounter = 'points' | 'events' | 'up_messages';

// The locator's attributes of each count: the UTC day counted, and what was claimed of it.
const COUNTER_ATTRIBUTES: Readonly<Record<DeviceCounter, { day: string; claimed: string }>> = {
  points: { day: 'points_day', claimed: 'points_claimed' },
  events: { day: 'events_day', claimed: 'events_claimed' },
  up_messages: { day: 'up_messages_day', claimed: 'up_messages_claimed' },
};

/** The locator without its counts: where the device is. */
const locatorOf = (item: Record<string, unknown>): DeviceLocator => {
  const locator: Record<string, unknown> = strip(item);
  for (const { day, claimed } of Object.values(COUNTER_ATTRIBUTES)) {
    delete locator[day];
    delete locator[claimed];
  }
  return locator as unknown as DeviceLocator;
};

/** A claim of a device's daily count, and the device's locator as the claim left it. */
export interface DeviceClaim {
  /** The UTC day counted: the one asked for, or a later one the locator already counts (a late message). */
  day: string;
  /** Everything claimed for the device that day, this claim included. */
  total: number;
  locator: DeviceLocator;
}

const MAX_CLAIM_ATTEMPTS = 4;

/**
 * Adds `n` to a device's count of the day (its points, events or other messages), kept on its
 * locator (`<counter>_day`, `<counter>_claimed`): the count starts afresh on a new UTC day, and
 * never goes back to an earlier one. One UpdateItem in the usual case (two on a device's first
 * claim of a new day), which also answers the locator, so that a claim stands in for the device's
 * lookup. The count is not bounded here: the caller compares it with the device's limit and gives
 * back what it does not use.
 * @returns the claim, or undefined when the device does not exist (or was deleted).
 * @throws ThrottledError when the day keeps changing under it.
 */
export const claimDeviceCount = async (db: Db, deviceId: string, counter: DeviceCounter, day: string, n: number): Promise<DeviceClaim | undefined> => {
  const names = { '#day': COUNTER_ATTRIBUTES[counter].day, '#claimed': COUNTER_ATTRIBUTES[counter].claimed };
  let counted: string | undefined = day; // the day the locator is thought to count; undefined: another (or none)
  for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
    const sameDay = counted !== undefined;
    const claimDay = counted ?? day;
    try {
      const { Attributes } = await db.doc.send(
        new UpdateCommand({
          TableName: db.table,
          Key: deviceLocatorKey(deviceId),
          ...(sameDay
            ? {
                // A device never counted before starts its count here too: one request for its first claim.
                UpdateExpression: 'SET #day = :day ADD #claimed :n',
                ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at) AND (attribute_not_exists(#day) OR #day = :day)',
              }
            : {
                UpdateExpression: 'SET #day = :day, #claimed = :n',
                // Days are YYYY-MM-DD: text order is time order.
                ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleted_at) AND (attribute_not_exists(#day) OR #day < :day)',
              }),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ':n': n, ':day': claimDay },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { day: claimDay, total: Number(Attributes![names['#claimed']]), locator: locatorOf(Attributes!) };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const raw = (error as { Item?: Parameters<typeof unmarshall>[0] }).Item;
      if (!raw) return undefined; // no locator: no such device
      const found = unmarshall(raw);
      if (found.deleted_at !== undefined) return undefined; // a tombstone: the device was deleted
      const stored = found[names['#day']] as string | undefined;
      // The locator counts another day: a later one is counted on (never an earlier one again).
      counted = stored !== undefined && stored >= day ? stored : undefined;
    }
  }
  throw new ThrottledError('The device’s count kept changing; retry.');
};

/** Takes back what was claimed of a device's count on a day and not used (a claim past the device's limit); nothing when the day is over. */
export const returnDeviceCount = async (db: Db, deviceId: string, counter: DeviceCounter, day: string, n: number) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceLocatorKey(deviceId),
        UpdateExpression: 'ADD #claimed :minus',
        ConditionExpression: '#day = :day',
        ExpressionAttributeNames: { '#day': COUNTER_ATTRIBUTES[counter].day, '#claimed': COUNTER_ATTRIBUTES[counter].claimed },
        ExpressionAttributeValues: { ':minus': -n, ':day': day },
      }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
};

/** What a fleet-wide scheduling reads of a device. */
export type DevicePlacement = Pick<DeviceRecord, 'id' | 'fleet_id' | 'fleet_history' | 'created_at'> & { connected?: boolean } & Record<string, unknown>;

// Pages of this many devices: the writes of a page start while the next one is read.
export const PLACEMENT_PAGE = 1000;

/**
 * The workspace's devices with their fleets and fleet histories (`whole`: their whole items), page by page (strongly consistent,
 * so every move that committed before the call is seen). A device is read once however it moves
 * meanwhile: its key does not change.
 */
export async function* listDevicePlacementPages(db: Db, workspaceId: string, { whole = false } = {}): AsyncGenerator<DevicePlacement[]> {
  const { pk, prefix } = collection.devicesOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        // Whole items when a query will be matched against them (tags, names, times).
        ...(whole ? {} : { ProjectionExpression: 'id, fleet_id, fleet_history, created_at, connected' }),
        Limit: PLACEMENT_PAGE,
        ExclusiveStartKey,
      }),
    );
    yield (page.Items ?? []) as DevicePlacement[];
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}
