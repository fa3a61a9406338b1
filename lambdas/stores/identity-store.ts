import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError, ThrottledError } from '../shared/errors';
import type { Identity } from '../schemas/identity';
import { checkExists, keyedItems, putNew, queryAll, strip, type ListRead } from './items';
import { collection, deviceKey, identityKey, type ItemKey } from './keys';
import { transactWithQuota, type QuotaCheck, type TransactItem } from './limits-store';

/** A device identity as listed: where it belongs, never its secret. */
export type IdentityRecord = Identity & { workspace_id: string; account_id: string };

/** What the device authorizer reads: the identity and its HS256 key (base64); no key once revoked. */
export type IdentityKeyRecord = IdentityRecord & { secret?: string };

// Every read except the authorizer's leaves the secret in the table.
const PUBLIC_FIELDS = {
  ProjectionExpression: 'id, #type, device_id, workspace_id, account_id, created_at, revoked_at',
  ExpressionAttributeNames: { '#type': 'type' },
};

/**
 * The device item's own list of its identities that are not revoked (`active_identities`: ID →
 * type and creation time), kept in step by the transactions that create and revoke identities, so
 * that a page of devices answers their identities from the devices it read, with no read of its
 * own. A device written before it has none: its identities are read by Query
 * ({@link readIdentitiesOfDevices}) until its next identity is created, which writes it whole.
 */
export const ACTIVE_IDENTITIES = 'active_identities';
export type ActiveIdentities = Record<string, Pick<Identity, 'type' | 'created_at'>>;

// A device with more identities than this that are not revoked keeps being read by Query (its
// first list would not fit in one transaction with a check of each identity).
const MOST_LISTED_AT_ONCE = 90;
// Tries of an identity's write whose device item changed its list meanwhile.
const LIST_ATTEMPTS = 4;

/** The device's `active_identities` entry of an identity. */
const entryOf = ({ type, created_at }: Identity): ActiveIdentities[string] => ({ type, created_at });

/** Its identities that are not revoked as the device item lists them, or undefined when it lists none (a device written before). */
export const activeIdentitiesOf = (device: object): IdentityRecord[] | undefined => {
  const listed = (device as Record<string, unknown>)[ACTIVE_IDENTITIES] as ActiveIdentities | undefined;
  if (!listed) return undefined;
  const { id: device_id, workspace_id, account_id } = device as { id: string; workspace_id: string; account_id: string };
  return Object.entries(listed).map(([id, { type, created_at }]) => ({ id, type, created_at, device_id, workspace_id, account_id, revoked_at: null }));
};

/**
 * The device item's first list of its identities: those stored and not revoked (each checked
 * still so in the same transaction) and the new one. Undefined when it has too many to list.
 */
const firstList = async (db: Db, identity: IdentityRecord) => {
  const stored = (await listIdentitiesOfDevice(db, identity.workspace_id, identity.device_id)).filter((i) => !i.revoked_at);
  if (stored.length > MOST_LISTED_AT_ONCE) return undefined;
  const list: ActiveIdentities = Object.fromEntries([...stored, identity].map((i) => [i.id, entryOf(i)]));
  return {
    Update: {
      TableName: db.table,
      Key: deviceKey(identity.workspace_id, identity.device_id),
      UpdateExpression: 'SET #list = :list',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#list)',
      ExpressionAttributeNames: { '#list': ACTIVE_IDENTITIES },
      ExpressionAttributeValues: { ':list': list },
    },
    checks: stored.map((i) => ({
      ConditionCheck: {
        TableName: db.table,
        Key: identityKey(i.workspace_id, i.device_id, i.id),
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(revoked_at) OR attribute_type(revoked_at, :null))',
        ExpressionAttributeValues: { ':null': 'NULL' },
      },
    })),
  };
};

/** The device item's list gains the identity, provided the device exists and lists its identities. */
const listedOne = (db: Db, identity: IdentityRecord): TransactItem => ({
  Update: {
    TableName: db.table,
    Key: deviceKey(identity.workspace_id, identity.device_id),
    UpdateExpression: 'SET #list.#id = :entry',
    ConditionExpression: 'attribute_exists(pk) AND attribute_exists(#list)',
    ExpressionAttributeNames: { '#list': ACTIVE_IDENTITIES, '#id': identity.id },
    ExpressionAttributeValues: { ':entry': entryOf(identity) },
  },
});

/** The identity's put with its device's first list (or, for a device with too many to list, a check that it exists). */
const listedFirst = async (db: Db, identity: IdentityRecord, put: TransactItem): Promise<TransactItem[]> => {
  const first = await firstList(db, identity);
  return first ? [put, { Update: first.Update }, ...first.checks] : [put, checkExists(db, deviceKey(identity.workspace_id, identity.device_id))];
};

/**
 * Stores a new identity with its secret, provided its device exists and the workspace's quota of
 * identities takes it, all or nothing; the device item's `active_identities` gains it in the same
 * transaction (a device that lists none yet is given its whole list: {@link ACTIVE_IDENTITIES}).
 * @throws NotFoundError when the device is not in the workspace; QuotaExceededError from the quota.
 */
export const createIdentity = async (db: Db, identity: IdentityKeyRecord, quota: QuotaCheck) => {
  // Stored without revoked_at: revocation sets it only where it is absent, which a stored null would defeat.
  const { revoked_at: _unset, ...item } = identity;
  const put = putNew(db, identityKey(identity.workspace_id, identity.device_id, identity.id), item);
  const device = deviceKey(identity.workspace_id, identity.device_id);
  let listed = true;
  for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
    const items = listed ? [put, listedOne(db, identity)] : await listedFirst(db, identity, put);
    const failed = await transactWithQuota(db, items, quota);
    if (!failed) return;
    if (failed.includes(0)) throw new Error(`Identity ${identity.id} exists already.`);
    if (failed.includes(1) && !(await checkDevice(db, device))) throw new NotFoundError(`Device ${identity.device_id} not found.`);
    // The device item lists no identities yet (or began to meanwhile), or one listed was revoked meanwhile: read again.
    listed = !listed && failed.includes(1);
  }
  throw new ThrottledError('The device’s identities are changing; retry the request.');
};

/** Whether the device item exists (strongly consistent). */
const checkDevice = async (db: Db, key: ItemKey) =>
  Boolean((await db.doc.send(new GetCommand({ TableName: db.table, Key: key, ConsistentRead: true, ProjectionExpression: 'pk' }))).Item);

export const listIdentitiesOfDevice = (db: Db, workspaceId: string, deviceId: string) => {
  const { pk, prefix } = collection.identitiesOfDevice(workspaceId, deviceId);
  return queryAll<IdentityRecord>(db, pk, prefix, PUBLIC_FIELDS);
};

// The lists that page need each item's sort key as well.
const PUBLIC_FIELDS_AND_KEY = { ...PUBLIC_FIELDS, ProjectionExpression: `${PUBLIC_FIELDS.ProjectionExpression}, sk` };

/** A device's identities one by one, in ID order (creation order), never their keys. */
export const readIdentitiesOfDevice = (db: Db, workspaceId: string, deviceId: string, read: ListRead) => {
  const { pk, prefix } = collection.identitiesOfDevice(workspaceId, deviceId);
  return keyedItems<IdentityRecord>(db, { pk, prefix, ...read, extra: PUBLIC_FIELDS_AND_KEY });
};

/**
 * Every identity of the workspace's devices after `afterDevice` (all when undefined), in device ID
 * order and then identity ID order, as the device list walks its devices; never their keys.
 * `pageSize` keeps a page of the device list from reading far more identities than it needs.
 */
export const readIdentitiesOfWorkspace = (db: Db, workspaceId: string, afterDevice?: string, pageSize?: number) => {
  const { pk, prefix } = collection.identitiesOfWorkspace(workspaceId);
  // "~" sorts after every ID character: the start is past all of that device's identities.
  const after = afterDevice === undefined ? undefined : `${prefix}${afterDevice}#~`;
  return keyedItems<IdentityRecord>(db, { pk, prefix, after, pageSize, extra: PUBLIC_FIELDS_AND_KEY });
};

/**
 * The identities of a few devices (a page of a search, in ID order), grouped by device: one Query
 * over the key range from the first device's identities to the last one's, when that range holds
 * few enough items (devices close together, or few identities in between), or else one Query per
 * device, all at once (devices far apart in a workspace of many identities).
 */
export const readIdentitiesOfDevices = async (db: Db, workspaceId: string, deviceIds: readonly string[]): Promise<Map<string, IdentityRecord[]>> => {
  const found = new Map<string, IdentityRecord[]>(deviceIds.map((id) => [id, []]));
  if (!deviceIds.length) return found;
  const { pk, prefix } = collection.identitiesOfWorkspace(workspaceId);
  const range = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': `${prefix}${deviceIds[0]}#`, ':to': `${prefix}${deviceIds.at(-1)}#~` },
      ...PUBLIC_FIELDS,
      // Past this many, the range is mostly other devices' identities.
      Limit: 4 * deviceIds.length,
    }),
  );
  const items = range.LastEvaluatedKey
    ? (await Promise.all(deviceIds.map((id) => listIdentitiesOfDevice(db, workspaceId, id)))).flat()
    : (range.Items ?? []).map((item) => item as IdentityRecord);
  for (const identity of items) found.get(identity.device_id)?.push(identity);
  return found;
};

/**
 * The identities that are not revoked of a page of devices (as read, in ID order), by device: each
 * device item's own list ({@link ACTIVE_IDENTITIES}), with no read; only devices written before it
 * have theirs read ({@link readIdentitiesOfDevices}).
 */
export const identitiesOfDevices = async (db: Db, workspaceId: string, devices: readonly object[]): Promise<Map<string, IdentityRecord[]>> => {
  const found = new Map<string, IdentityRecord[]>();
  const unlisted: string[] = [];
  for (const device of devices) {
    const listed = activeIdentitiesOf(device);
    if (listed) found.set((device as { id: string }).id, listed);
    else unlisted.push((device as { id: string }).id);
  }
  if (unlisted.length) for (const [id, identities] of await readIdentitiesOfDevices(db, workspaceId, unlisted)) found.set(id, identities);
  return found;
};

export const listIdentitiesOfWorkspace = (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.identitiesOfWorkspace(workspaceId);
  return queryAll<IdentityRecord>(db, pk, prefix, PUBLIC_FIELDS);
};

/** The identity with its key, for verifying a device token's signature. */
export const findIdentityKey = async (db: Db, workspaceId: string, deviceId: string, identityId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: identityKey(workspaceId, deviceId, identityId), ConsistentRead: true }));
  return Item ? strip<IdentityKeyRecord>(Item) : undefined;
};

/**
 * Marks an identity revoked and gives its place in the workspace's quota of identities back, all or
 * nothing. The key stays on the item (still read only by the device authorizer's GetItem) so that a
 * token it signed can be told apart from a forgery: the device is told its identity is revoked, a
 * forger learns nothing.
 * @returns false when the identity is gone or was revoked meanwhile (nothing written: a second revoke frees no second place).
 */
export const revokeIdentity = async (db: Db, identity: IdentityRecord, at: string, quota: QuotaCheck) => {
  const revoke = {
    Update: {
      TableName: db.table,
      Key: identityKey(identity.workspace_id, identity.device_id, identity.id),
      UpdateExpression: 'SET revoked_at = :at',
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(revoked_at) OR attribute_type(revoked_at, :null))',
      ExpressionAttributeValues: { ':at': at, ':null': 'NULL' },
    },
  };
  const device = deviceKey(identity.workspace_id, identity.device_id);
  const names = { '#list': ACTIVE_IDENTITIES };
  // The device item's list loses it; a device that lists none (written before, or gone) is checked still so.
  const unlist = {
    Update: {
      TableName: db.table,
      Key: device,
      UpdateExpression: 'REMOVE #list.#id',
      ConditionExpression: 'attribute_exists(#list)',
      ExpressionAttributeNames: { ...names, '#id': identity.id },
    },
  };
  const unlisted = {
    ConditionCheck: { TableName: db.table, Key: device, ConditionExpression: 'attribute_not_exists(#list)', ExpressionAttributeNames: names },
  };
  let listed = true;
  for (let attempt = 0; attempt < LIST_ATTEMPTS; attempt++) {
    const failed = await transactWithQuota(db, [revoke, listed ? unlist : unlisted], quota);
    if (!failed) return true;
    if (failed.includes(0)) return false;
    listed = !listed;
  }
  throw new ThrottledError('The device’s identities are changing; retry the request.');
};

/** One identity of a device, never its key; undefined when the device has no such identity. */
export const getIdentityOfDevice = async (db: Db, workspaceId: string, deviceId: string, identityId: string) => {
  const { Item } = await db.doc.send(
    new GetCommand({ TableName: db.table, Key: identityKey(workspaceId, deviceId, identityId), ConsistentRead: true, ...PUBLIC_FIELDS }),
  );
  return Item ? strip<IdentityRecord>(Item) : undefined;
};
