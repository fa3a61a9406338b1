import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { Identity } from '../schemas/identity';
import { checkExists, keyedItems, putNew, queryAll, strip, type ListRead } from './items';
import { collection, deviceKey, identityKey } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

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
 * Stores a new identity with its secret, provided its device exists and the workspace's quota of
 * identities takes it, all or nothing.
 * @throws NotFoundError when the device is not in the workspace; QuotaExceededError from the quota.
 */
export const createIdentity = async (db: Db, identity: IdentityKeyRecord, quota: QuotaCheck) => {
  // Stored without revoked_at: revocation sets it only where it is absent, which a stored null would defeat.
  const { revoked_at: _unset, ...item } = identity;
  const failed = await transactWithQuota(
    db,
    [
      putNew(db, identityKey(identity.workspace_id, identity.device_id, identity.id), item),
      checkExists(db, deviceKey(identity.workspace_id, identity.device_id)),
    ],
    quota,
  );
  if (failed?.includes(1)) throw new NotFoundError(`Device ${identity.device_id} not found.`);
  if (failed) throw new Error(`Identity ${identity.id} exists already.`);
};

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
  return !(await transactWithQuota(db, [revoke], quota));
};

/** One identity of a device, never its key; undefined when the device has no such identity. */
export const getIdentityOfDevice = async (db: Db, workspaceId: string, deviceId: string, identityId: string) => {
  const { Item } = await db.doc.send(
    new GetCommand({ TableName: db.table, Key: identityKey(workspaceId, deviceId, identityId), ConsistentRead: true, ...PUBLIC_FIELDS }),
  );
  return Item ? strip<IdentityRecord>(Item) : undefined;
};
