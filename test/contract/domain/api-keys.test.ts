import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createAccount } from '../../../lambdas/domain/tenancy/accounts';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import { createIdentity } from '../../../lambdas/domain/registry/identities';
import { authenticateApiKey, createApiKey, listApiKeys, requireUsableKey, revokeApiKey } from '../../../lambdas/domain/tenancy/api-keys';
import { listWorkspaces } from '../../../lambdas/domain/tenancy/workspaces';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError, UnauthorizedError } from '../../../lambdas/shared/errors';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

describe('API keys on DynamoDB Local', () => {
  it('authenticates a new key as its account and bound workspace', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { api_key, key } = await createApiKey(db, caller, workspace_id, { name: 'ci' });

    await expect(authenticateApiKey(db, key)).resolves.toEqual({ accountId: caller.accountId, workspaceId: workspace_id, keyId: api_key.id });
  });

  it('stores only the SHA-256 of a key, never the key', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { key } = await createApiKey(db, caller, workspace_id, { name: 'ci' });

    const { Items } = await db.doc.send(new ScanCommand({ TableName: db.table }));

    expect(JSON.stringify(Items)).not.toContain(key);
  });

  it.each([
    ['missing', undefined, /missing/],
    ['unknown', 'fsk_unknown', /not valid/],
  ])('rejects a %s key', async (_what, secret, message) => {
    await expect(authenticateApiKey(db, secret)).rejects.toThrow(message);
  });

  it('rejects a revoked key, and keeps the first revocation time', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { api_key, key } = await createApiKey(db, caller, workspace_id, { name: 'old' });

    const first = await revokeApiKey(db, caller, workspace_id, api_key.id);
    const again = await revokeApiKey(db, caller, workspace_id, api_key.id);

    await expect(authenticateApiKey(db, key)).rejects.toThrow(/revoked/);
    expect(again.revoked_at).toBe(first.revoked_at);
    expect((await itemsOf(listApiKeys(db, caller, workspace_id))).find((k) => k.id === api_key.id)?.revoked_at).toBe(first.revoked_at);
  });

  it('rejects a key after its expiry', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const expires_at = new Date(Date.now() + 60_000).toISOString();
    const { key } = await createApiKey(db, caller, workspace_id, { name: 'short', expires_at });

    await expect(authenticateApiKey(db, key, new Date(Date.now() + 120_000))).rejects.toThrow(UnauthorizedError);
    await expect(authenticateApiKey(db, key)).resolves.toBeDefined();
  });

  it('answers 404 for revoking another account’s key', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);

    await expect(revokeApiKey(db, mine.caller, theirs.workspace_id, theirs.api_key_id)).rejects.toThrow(NotFoundError);
    await expect(authenticateApiKey(db, theirs.api_key)).resolves.toBeDefined();
  });
});

describe('what a key mints, checked on the table rather than the authorizer’s cache', () => {
  const ENDPOINT = 'https://devices.example.com/v3/device';

  it('refuses to create a key or a device identity with a key revoked since its request was authorized, and writes nothing', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'sensor', phys_id: '' });
    // The caller as the authorizer cached it, before the revocation.
    const authorized = await authenticateApiKey(db, (await createApiKey(db, caller, workspace_id, { name: 'leaked' })).key);
    await revokeApiKey(db, caller, workspace_id, authorized.keyId);
    const before = (await db.doc.send(new ScanCommand({ TableName: db.table }))).Items;

    await expect(createApiKey(db, authorized, workspace_id, { name: 'persistence' })).rejects.toThrow(/revoked/);
    await expect(createIdentity(db, authorized, workspace_id, device.id, { type: 'sym' }, ENDPOINT)).rejects.toThrow(UnauthorizedError);

    expect((await db.doc.send(new ScanCommand({ TableName: db.table }))).Items).toEqual(before);
  });

  it('refuses a key past its expiry, and lets an unrevoked key and a console session (no key) through', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const expires_at = new Date(Date.now() + 60_000).toISOString();
    const short = await authenticateApiKey(db, (await createApiKey(db, caller, workspace_id, { name: 'short', expires_at })).key);

    await expect(requireUsableKey(db, short, new Date(Date.now() + 120_000))).rejects.toThrow(/expired/);
    await expect(requireUsableKey(db, short)).resolves.toBeUndefined();
    await expect(requireUsableKey(db, { accountId: caller.accountId, userId: 'user-sub' })).resolves.toBeUndefined();
  });
});

describe('account creation', () => {
  it('writes nothing when any of its items cannot be written', async () => {
    const existing = await createAccount(db, { name: 'first', apiKey: 'fsk_same_secret' });

    // the same secret hashes to the same lookup item: the whole transaction is refused
    await expect(createAccount(db, { name: 'second', apiKey: 'fsk_same_secret' })).rejects.toThrow(/Transaction/);

    const { Items } = await db.doc.send(
      new ScanCommand({
        TableName: db.table,
        FilterExpression: '#n = :n',
        ExpressionAttributeNames: { '#n': 'name' },
        ExpressionAttributeValues: { ':n': 'second' },
      }),
    );
    expect(Items).toEqual([]);
    await expect(authenticateApiKey(db, 'fsk_same_secret')).resolves.toMatchObject({ accountId: existing.account_id });
    expect(await itemsOf(listWorkspaces(db, { accountId: existing.account_id, workspaceId: existing.workspace_id, keyId: existing.api_key_id }))).toHaveLength(
      1,
    );
  });
});
