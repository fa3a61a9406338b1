import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createApiKey, revokeApiKey } from '../../../lambdas/domain/tenancy/api-keys';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { admitRequest, limitsMemory } from '../../../lambdas/domain/limits/limits';
import { changeWorkspaceLimits, getWorkspaceLimits, showWorkspaceLimits } from '../../../lambdas/domain/limits/limits-views';
import { LIMIT_DEFAULTS } from '../../../lambdas/schemas/limits';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError, QuotaExceededError, RateLimitedError, ValidationError } from '../../../lambdas/shared/errors';
import { workspaceKey } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

/** How many items of a kind the workspace's partition holds, read from the table itself. */
const itemsIn = async (workspaceId: string, prefix: string) => {
  const { Items = [] } = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': `WKS#${workspaceId}`, ':prefix': prefix },
    }),
  );
  return Items;
};

/** Every outcome of many calls at once: what they resolved to, and what they threw. */
const settle = async <T>(calls: Array<Promise<T>>) => {
  const outcomes = await Promise.allSettled(calls);
  return {
    made: outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])),
    refused: outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as Error] : [])),
  };
};

describe('quotas on DynamoDB Local', () => {
  it('lets exactly the quota of 50 concurrent device creates through, refuses the rest with 429 quota_exceeded, and writes nothing for them', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    for (let i = 0; i < 3; i++) await createDevice(db, caller, workspace_id, { name: `before-${i}`, phys_id: '' });
    await changeWorkspaceLimits(db, workspace_id, { set: { devices: 20 } });

    const { made, refused } = await settle(Array.from({ length: 50 }, (_, i) => createDevice(db, caller, workspace_id, { name: `d${i}`, phys_id: '' })));

    expect(made).toHaveLength(17);
    expect(refused).toHaveLength(33);
    for (const error of refused) {
      expect(error).toBeInstanceOf(QuotaExceededError);
      expect((error as QuotaExceededError).details).toEqual([{ field: 'limits.devices', message: expect.stringContaining('20 devices'), value: 20 }]);
    }
    const devices = await itemsIn(workspace_id, 'DEV#');
    expect(devices).toHaveLength(20);
    expect(made.every((d) => devices.some((item) => item.id === d.id))).toBe(true);
    const locators = await Promise.all(
      made.map((d) =>
        db.doc.send(new QueryCommand({ TableName: db.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `DEV#${d.id}` } })),
      ),
    );
    expect(locators.every((l) => l.Items?.length === 1)).toBe(true);
    expect((await showWorkspaceLimits(db, workspace_id)).counts.devices).toBe(20);
    expect((await showWorkspaceLimits(db, workspace_id)).account_id).toBe(account_id);
  });

  it('starts the count of a workspace made before counts existed from what it holds, at its first create', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    for (let i = 0; i < 4; i++) await createFleet(db, caller, workspace_id, { name: `f${i}`, description: '' });
    // As a workspace written by the code before quotas: no counts on its item.
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: workspaceKey(account_id, workspace_id),
        UpdateExpression: 'REMOVE fleets_count, devices_count, api_keys_count, integrations_count',
      }),
    );
    await changeWorkspaceLimits(db, workspace_id, { set: { fleets: 8 } });
    expect((await showWorkspaceLimits(db, workspace_id)).counts.fleets).toBeNull();

    const { made, refused } = await settle(Array.from({ length: 10 }, (_, i) => createFleet(db, caller, workspace_id, { name: `g${i}`, description: '' })));

    // The default fleet and four more were there: three places were left.
    expect([made.length, refused.length]).toEqual([3, 7]);
    expect(refused.every((e) => e instanceof QuotaExceededError)).toBe(true);
    expect(await itemsIn(workspace_id, 'FLT#')).toHaveLength(8);
    expect((await showWorkspaceLimits(db, workspace_id)).counts.fleets).toBe(8);
  });

  it('counts keys until they are revoked: a revoked key frees its place once, however often it is revoked', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await changeWorkspaceLimits(db, workspace_id, { set: { api_keys: 3 } });
    const second = await createApiKey(db, caller, workspace_id, { name: 'second' });
    await createApiKey(db, caller, workspace_id, { name: 'third' });
    await expect(createApiKey(db, caller, workspace_id, { name: 'fourth' })).rejects.toThrow(QuotaExceededError);

    const revokes = await Promise.all(Array.from({ length: 5 }, () => revokeApiKey(db, caller, workspace_id, second.api_key.id)));

    expect(new Set(revokes.map((k) => k.revoked_at)).size).toBe(1);
    expect((await showWorkspaceLimits(db, workspace_id)).counts.api_keys).toBe(2);
    await createApiKey(db, caller, workspace_id, { name: 'fourth' });
    await expect(createApiKey(db, caller, workspace_id, { name: 'fifth' })).rejects.toThrow(QuotaExceededError);
  });

  it('applies a limit the operator lowers to the next create, and a raised one too', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await createFleet(db, caller, workspace_id, { name: 'a', description: '' });

    await changeWorkspaceLimits(db, workspace_id, { set: { fleets: 2 } });
    await expect(createFleet(db, caller, workspace_id, { name: 'b', description: '' })).rejects.toThrow(QuotaExceededError);
    await changeWorkspaceLimits(db, workspace_id, { reset: ['fleets'] });

    await expect(createFleet(db, caller, workspace_id, { name: 'b', description: '' })).resolves.toMatchObject({ name: 'b' });
    expect(await getWorkspaceLimits(db, caller, workspace_id)).toEqual(LIMIT_DEFAULTS);
  });

  it('never lets a create through past a limit lowered while creates run', async () => {
    const { caller, workspace_id } = await newAccount(db);

    const creates = settle(Array.from({ length: 30 }, (_, i) => createDevice(db, caller, workspace_id, { name: `d${i}`, phys_id: '' })));
    await changeWorkspaceLimits(db, workspace_id, { set: { devices: 5 } });
    const { made } = await creates;

    // Creates that committed before the change are kept, and after it no create took the count past 5.
    const count = (await itemsIn(workspace_id, 'DEV#')).length;
    expect(count).toBe(made.length);
    expect(count).toBeGreaterThanOrEqual(5);
    expect((await showWorkspaceLimits(db, workspace_id)).counts.devices).toBe(count);
    await expect(createDevice(db, caller, workspace_id, { name: 'late', phys_id: '' })).rejects.toThrow(QuotaExceededError);
  });

  it('refuses limits out of range or unknown, naming each, and changes nothing', async () => {
    const { workspace_id } = await newAccount(db);

    const attempt = changeWorkspaceLimits(db, workspace_id, { set: { devices: -1, fleets: 0, lasers: 3 }, reset: ['warp'] });

    await expect(attempt).rejects.toThrow(ValidationError);
    const details = ((await attempt.catch((e: ValidationError) => e)) as ValidationError).details.map((d) => d.field).sort();
    expect(details).toEqual(['devices', 'fleets', 'lasers', 'warp']);
    expect((await showWorkspaceLimits(db, workspace_id)).own).toEqual({});
    await expect(showWorkspaceLimits(db, 'wks-doesnotexist0000000')).rejects.toThrow(NotFoundError);
  });

  it('answers 404 for another account’s workspace limits', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);

    await expect(getWorkspaceLimits(db, mine.caller, theirs.workspace_id)).rejects.toThrow(NotFoundError);
  });
});

describe('the rate of requests per key', () => {
  it('admits requests_per_second_per_key requests of a key per second, across containers, and refuses the rest with Retry-After', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await changeWorkspaceLimits(db, workspace_id, { set: { requests_per_second_per_key: 7 } });
    // Two containers, each with its own memory of limits: the count is shared in the table.
    const [one, two] = [limitsMemory(db, { ttlMs: 60_000 }), limitsMemory(db, { ttlMs: 60_000 })];
    const second = Math.floor(Date.now() / 1000) * 1000 + 5_000_000; // a second nobody else uses

    const { made, refused } = await settle(Array.from({ length: 20 }, (_, i) => admitRequest(db, i % 2 ? one : two, caller, second + 10)));

    expect([made.length, refused.length]).toEqual([7, 13]);
    for (const error of refused) {
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).headers).toEqual({ 'retry-after': '1' });
      expect((error as RateLimitedError).details).toEqual([{ field: 'limits.requests_per_second_per_key', message: expect.any(String), value: 7 }]);
    }
    // The next second starts afresh.
    await expect(admitRequest(db, one, caller, second + 1000)).resolves.toBeUndefined();
  });

  it('keeps each key to its own count, and a console session to the default rate', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await changeWorkspaceLimits(db, workspace_id, { set: { requests_per_second_per_key: 1 } });
    const other = await createApiKey(db, caller, workspace_id, { name: 'other' });
    const limits = limitsMemory(db, { ttlMs: 0 });
    const at = Date.now() + 7_000_000;

    await admitRequest(db, limits, caller, at);
    await expect(admitRequest(db, limits, caller, at)).rejects.toThrow(RateLimitedError);
    await expect(admitRequest(db, limits, { ...caller, keyId: other.api_key.id }, at)).resolves.toBeUndefined();
    const session = { accountId: caller.accountId, userId: 'user-1' };
    for (let i = 0; i < 3; i++) await admitRequest(db, limits, session, at);
  });
});
