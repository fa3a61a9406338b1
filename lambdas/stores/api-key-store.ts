import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { ApiKey } from '../schemas/api-key';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { apiKeyHashKey, apiKeyMetaKey, collection } from './keys';

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

export const createApiKey = async (db: Db, key: ApiKeyRecord) => {
  await db.doc.send(new TransactWriteCommand({ TransactItems: apiKeyWrites(db, key) }));
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

/** Marks a key revoked in both of its items, all or nothing. */
export const revokeApiKey = async (db: Db, key: ApiKeyRecord, at: string) => {
  const revoke = (Key: Record<string, string>) => ({
    Update: {
      TableName: db.table,
      Key,
      UpdateExpression: 'SET revoked_at = :at',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':at': at },
    },
  });
  await db.doc.send(
    new TransactWriteCommand({ TransactItems: [revoke({ ...apiKeyMetaKey(key.workspace_id, key.id) }), revoke({ ...apiKeyHashKey(key.hash) })] }),
  );
};
