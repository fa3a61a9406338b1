import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { ApiKey } from '../schemas/api-key';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { apiKeyHashKey, apiKeyMetaKey, collection } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

/** An API key as listed in its workspace, with the hash that finds its lookup item. */
export type ApiKeyRecord = ApiKey & { account_id: string; hash: string };

/** What the authorizer reads for a presented key, found by the key's SHA-256. */
export interface ApiKeyGrant {
  key_id: string;
  account_id: string;
  workspace_id: string;
  expires_at: string | null;
  revoked_at: string | null;
}

/** Transaction items that store a key: its listing entry and its lookup-by-hash item. */
export const apiKeyWrites = (db: Db, key: ApiKeyRecord) => [
  putNew(db, apiKeyMetaKey(key.workspace_id, key.id), key),
  putNew(db, apiKeyHashKey(key.hash), {
    key_id: key.id,
    account_id: key.account_id,
    workspace_id: key.workspace_id,
    expires_at: key.expires_at,
    revoked_at: key.revoked_at,
  } satisfies ApiKeyGrant),
];

/** Stores a key, provided the workspace's quota of keys takes it. @throws QuotaExceededError from the quota. */
export const createApiKey = async (db: Db, key: ApiKeyRecord, quota: QuotaCheck) => {
  await transactWithQuota(db, apiKeyWrites(db, key), quota);
};

export const findApiKeyGrantByHash = async (db: Db, hash: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: apiKeyHashKey(hash) }));
  return Item ? strip<ApiKeyGrant>(Item) : undefined;
};

export const getApiKeyOfWorkspace = async (db: Db, workspaceId: string, keyId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: apiKeyMetaKey(workspaceId, keyId), ConsistentRead: true }));
  return Item ? strip<ApiKeyRecord>(Item) : undefined;
};

/** The workspace's API keys one by one, in ID order (creation order). */
export const readApiKeysOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.apiKeysOfWorkspace(workspaceId);
  return keyedItems<ApiKeyRecord>(db, { pk, prefix, ...read });
};

/**
 * Marks a key revoked in both of its items, and gives its place in the workspace's quota of keys
 * back, all or nothing. Returns false when the key was revoked meanwhile (nothing written).
 */
export const revokeApiKey = async (db: Db, key: ApiKeyRecord, at: string, quota: QuotaCheck) => {
  const revoke = (Key: Record<string, string>) => ({
    Update: {
      TableName: db.table,
      Key,
      UpdateExpression: 'SET revoked_at = :at',
      // Once: a second revoke would give the key's place back twice.
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(revoked_at) OR attribute_type(revoked_at, :null))',
      ExpressionAttributeValues: { ':at': at, ':null': 'NULL' },
    },
  });
  return !(await transactWithQuota(db, [revoke({ ...apiKeyMetaKey(key.workspace_id, key.id) }), revoke({ ...apiKeyHashKey(key.hash) })], quota));
};
