import { createHash } from 'node:crypto';
import type { Db } from '../../shared/clients';
import { NotFoundError, UnauthorizedError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newApiKeySecret, newId, nowIso } from '../../shared/ids';
import type { ApiKey, CreateApiKeyBody } from '../../schemas/api-key';
import {
  createApiKey as storeApiKey,
  findApiKeyGrantByHash,
  getApiKeyOfWorkspace,
  readApiKeysOfWorkspace,
  revokeApiKey as storeRevocation,
  type ApiKeyRecord,
} from '../../stores/api-key-store';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import { quota, release } from '../limits/limits';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from './workspaces';

/** Keys are stored only as this hash. */
export const hashApiKey = (secret: string) => createHash('sha256').update(secret).digest('hex');

const toApiKey = ({ id, name, workspace_id, created_at, expires_at, revoked_at }: ApiKeyRecord): ApiKey => ({
  id,
  name,
  workspace_id,
  created_at,
  expires_at: expires_at ?? null,
  revoked_at: revoked_at ?? null,
});

/** A new key record and its secret, not yet stored; `secret` may be given (the local dev key). */
export const newApiKey = (accountId: string, workspaceId: string, input: CreateApiKeyBody, secret = newApiKeySecret()) => {
  const created_at = nowIso();
  const record: ApiKeyRecord = {
    id: newId('key', created_at),
    name: input.name,
    account_id: accountId,
    workspace_id: workspaceId,
    created_at,
    expires_at: input.expires_at ?? null,
    revoked_at: null,
    hash: hashApiKey(secret),
  };
  return { record, secret };
};

/**
 * Creates an API key bound to a workspace, within its quota of keys; its secret is returned here
 * and never again. The calling key is read again first (`requireUsableKey`).
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws UnauthorizedError when the calling key was revoked or expired since the authorizer cached it.
 * @throws QuotaExceededError when the workspace holds its limit of keys that are not revoked.
 */
export const createApiKey = async (db: Db, caller: Caller, workspaceId: string, input: CreateApiKeyBody) => {
  const [workspace] = await Promise.all([requireWorkspace(db, caller, workspaceId), requireUsableKey(db, caller)]);
  const { record, secret } = newApiKey(caller.accountId, workspaceId, input);
  await storeApiKey(db, record, quota(db, workspace, 'api_keys'));
  return { api_key: toApiKey(record), key: secret };
};

/**
 * The workspace's API keys, oldest first (ID order), streamed, never their secrets; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listApiKeys = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<ApiKey>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `api-keys/${workspaceId}`;
  const after = startOf(list, page, collection.apiKeysOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readApiKeysOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toApiKey), page);
};

/**
 * Revokes a key; it stops working once the authorizer's cache lets go of it, and its place in the
 * workspace's quota of keys is free at once. Revoking twice keeps the first revocation time.
 * @throws NotFoundError when the workspace or key is not the caller's.
 */
export const revokeApiKey = async (db: Db, caller: Caller, workspaceId: string, keyId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const key = await getApiKeyOfWorkspace(db, workspaceId, keyId);
  if (!key) throw new NotFoundError(`API key ${keyId} not found.`);
  if (key.revoked_at) return toApiKey(key);
  const at = nowIso();
  if (await storeRevocation(db, key, at, release(db, workspace, 'api_keys'))) return toApiKey({ ...key, revoked_at: at });
  // Revoked meanwhile by another request: its time is the one kept.
  return toApiKey((await getApiKeyOfWorkspace(db, workspaceId, keyId)) ?? key);
};

/** Why a key may no longer be used, if it may not (read from its item, never a cache). */
const refusalOf = (key: Pick<ApiKeyRecord, 'revoked_at' | 'expires_at'> | undefined, now: Date) => {
  if (!key) return 'The API key is not valid.';
  if (key.revoked_at) return 'The API key has been revoked.';
  if (key.expires_at && Date.parse(key.expires_at) <= now.getTime()) return 'The API key has expired.';
  return undefined;
};

/**
 * The caller a presented API key stands for, and until when (Unix ms) the answer holds at most:
 * the key's `expires_at`, if it has one.
 * @throws UnauthorizedError when the key is unknown, revoked or expired.
 */
export const checkApiKey = async (db: Db, secret: string | undefined, now = new Date()) => {
  if (!secret) throw new UnauthorizedError('The X-API-KEY header is missing.');
  const grant = await findApiKeyGrantByHash(db, hashApiKey(secret));
  const refusal = refusalOf(grant, now);
  if (refusal) throw new UnauthorizedError(refusal);
  const caller: Required<Pick<Caller, 'accountId' | 'workspaceId' | 'keyId'>> = {
    accountId: grant!.account_id,
    workspaceId: grant!.workspace_id,
    keyId: grant!.key_id,
  };
  return { caller, expiresAt: grant!.expires_at ? Date.parse(grant!.expires_at) : undefined };
};

/**
 * The caller a presented API key stands for.
 * @throws UnauthorizedError when the key is unknown, revoked or expired.
 */
export const authenticateApiKey = async (db: Db, secret: string | undefined, now = new Date()) => (await checkApiKey(db, secret, now)).caller;

/**
 * Checks, on the table rather than the authorizer's cached answer, that the API key a request came
 * with is still neither revoked nor expired: what mints new credentials (API keys, device
 * identities) calls it before writing, so that a key revoked a moment ago cannot outlive its
 * revocation through what it creates. A console session (no key) passes.
 * @throws UnauthorizedError when the caller's key is revoked, expired or gone.
 */
export const requireUsableKey = async (db: Db, caller: Caller, now = new Date()) => {
  if (!caller.keyId || !caller.workspaceId) return;
  const refusal = refusalOf(await getApiKeyOfWorkspace(db, caller.workspaceId, caller.keyId), now);
  if (refusal) throw new UnauthorizedError(refusal);
};
