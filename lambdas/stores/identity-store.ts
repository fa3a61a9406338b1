import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { Identity } from '../schemas/identity';
import { failedConditions, isConditionFailed } from './errors';
import { checkExists, keyedItems, putNew, queryAll, strip, type ListRead } from './items';
import { collection, deviceKey, identityKey } from './keys';

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
 * Stores a new identity with its secret, provided its device exists, all or nothing.
 * @throws NotFoundError when the device is not in the workspace.
 */
export const createIdentity = async (db: Db, identity: IdentityKeyRecord) => {
  // Stored without revoked_at: revocation sets it with if_not_exists, which a stored null would defeat.
  const { revoked_at: _unset, ...item } = identity;
  try {
    await db.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          putNew(db, identityKey(identity.workspace_id, identity.device_id, identity.id), item),
          checkExists(db, deviceKey(identity.workspace_id, identity.device_id)),
        ],
      }),
    );
  } catch (error) {
    if (failedConditions(error)?.includes(1)) throw new NotFoundError(`Device ${identity.device_id} not found.`, { cause: error });
    throw error;
  }
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
 * Marks an identity revoked, keeping the first revocation time. The key stays on the item (still
 * read only by the device authorizer's GetItem) so that a token it signed can be told apart from a
 * forgery: the device is told its identity is revoked, a forger learns nothing.
 * @throws NotFoundError when the device has no such identity.
 */
export const revokeIdentity = async (db: Db, workspaceId: string, deviceId: string, identityId: string, at: string) => {
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: identityKey(workspaceId, deviceId, identityId),
        UpdateExpression: 'SET revoked_at = if_not_exists(revoked_at, :at)',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':at': at },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<IdentityRecord>(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) throw new NotFoundError(`Identity ${identityId} not found.`, { cause: error });
    throw error;
  }
};
