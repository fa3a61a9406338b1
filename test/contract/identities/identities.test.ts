import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDevice, getDevice, listDevices } from '../../../lambdas/domain/registry/devices';
import { createIdentity, deviceEndpoint, listIdentities, revokeIdentity } from '../../../lambdas/domain/registry/identities';
import { DeviceCredentialsSchema } from '../../../lambdas/schemas/identity';
import type { Db } from '../../../lambdas/shared/clients';
import { AppError, NotFoundError } from '../../../lambdas/shared/errors';
import { identityKey } from '../../../lambdas/stores/keys';
import { listIdentitiesOfWorkspace } from '../../../lambdas/stores/identity-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

const ENDPOINT = 'https://devices.example.com/v3/device';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const accountWithDevice = async () => {
  const account = await newAccount(db);
  const device = await createDevice(db, account.caller, account.workspace_id, { name: 'sensor', phys_id: '' });
  return { ...account, device };
};

const storedItem = async (workspaceId: string, deviceId: string, identityId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: identityKey(workspaceId, deviceId, identityId) }))).Item;

describe('device identities on DynamoDB Local', () => {
  it('returns the credentials document once, in the zdevice.json layout', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();

    const { identity, credentials } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);

    expect(DeviceCredentialsSchema.parse(credentials)).toEqual(credentials);
    expect(credentials).toMatchObject({
      devinfo: { device_id: device.id, mode: 'device_token', key_id: identity.id, key_type: 'sym' },
      endpoint: { host: 'devices.example.com', port: 443, mode: 'secure', url: ENDPOINT },
    });
    expect(Buffer.from(credentials.prvkey, 'base64')).toHaveLength(32);
    expect(identity).toMatchObject({ type: 'sym', device_id: device.id, revoked_at: null });
  });

  it('never lists a secret', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();
    const { credentials } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);

    const listed = await itemsOf(listIdentities(db, caller, workspace_id, device.id));
    const fetched = await getDevice(db, caller, workspace_id, device.id);

    const text = JSON.stringify([listed, fetched, await listIdentitiesOfWorkspace(db, workspace_id)]);
    expect(text).not.toContain(credentials.prvkey);
    expect(listed).toHaveLength(1);
  });

  it('lists the identities on the device, and null once every one is revoked', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();
    const { identity: first } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);
    const { identity: second } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);

    const withBoth = await getDevice(db, caller, workspace_id, device.id);
    await revokeIdentity(db, caller, workspace_id, device.id, first.id);
    const listedWithOne = (await itemsOf(listDevices(db, caller, workspace_id))).find((d) => d.id === device.id);
    await revokeIdentity(db, caller, workspace_id, device.id, second.id);
    const withNone = await getDevice(db, caller, workspace_id, device.id);

    expect(device.identities).toBeNull();
    expect(withBoth.identities).toEqual([
      { id: first.id, type: 'sym', created_at: first.created_at },
      { id: second.id, type: 'sym', created_at: second.created_at },
    ]);
    expect(listedWithOne?.identities).toEqual([{ id: second.id, type: 'sym', created_at: second.created_at }]);
    expect(withNone.identities).toBeNull();
  });

  it('keeps the key when revoking (to tell a revoked device from a forger) and keeps the first revocation time', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();
    const { identity } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);

    const revoked = await revokeIdentity(db, caller, workspace_id, device.id, identity.id);
    const again = await revokeIdentity(db, caller, workspace_id, device.id, identity.id);

    expect(revoked.revoked_at).not.toBeNull();
    expect(again.revoked_at).toBe(revoked.revoked_at);
    expect(await storedItem(workspace_id, device.id, identity.id)).toEqual(
      expect.objectContaining({ secret: expect.any(String), revoked_at: revoked.revoked_at }),
    );
    expect(await itemsOf(listIdentities(db, caller, workspace_id, device.id))).toEqual([revoked]);
  });

  it('keeps the device item’s list of its identities in step; a device made before gets its whole list, checked, at its next identity', async () => {
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const { deviceKey } = await import('../../../lambdas/stores/keys');
    const { caller, workspace_id, device } = await accountWithDevice();
    const listed = async () =>
      (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspace_id, device.id), ConsistentRead: true }))).Item?.active_identities;
    expect(await listed()).toEqual({});

    const first = (await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT)).identity;
    const second = (await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT)).identity;
    expect(await listed()).toEqual({ [first.id]: { type: 'sym', created_at: first.created_at }, [second.id]: { type: 'sym', created_at: second.created_at } });
    await revokeIdentity(db, caller, workspace_id, device.id, first.id);
    await revokeIdentity(db, caller, workspace_id, device.id, first.id);
    expect(await listed()).toEqual({ [second.id]: { type: 'sym', created_at: second.created_at } });

    // Written before the list existed: revoking keeps it so, the next identity lists every one not revoked.
    await db.doc.send(new UpdateCommand({ TableName: db.table, Key: deviceKey(workspace_id, device.id), UpdateExpression: 'REMOVE active_identities' }));
    const third = (await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT)).identity;
    await db.doc.send(new UpdateCommand({ TableName: db.table, Key: deviceKey(workspace_id, device.id), UpdateExpression: 'REMOVE active_identities' }));
    await revokeIdentity(db, caller, workspace_id, device.id, third.id);
    expect(await listed()).toBeUndefined();
    const fourth = (await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT)).identity;
    expect(await listed()).toEqual({
      [second.id]: { type: 'sym', created_at: second.created_at },
      [fourth.id]: { type: 'sym', created_at: fourth.created_at },
    });
    expect((await getDevice(db, caller, workspace_id, device.id)).identities?.map((i) => i.id)).toEqual([second.id, fourth.id]);
  });

  it('answers 404 for another account’s device and stores nothing', async () => {
    const mine = await accountWithDevice();
    const theirs = await accountWithDevice();

    await expect(createIdentity(db, mine.caller, theirs.workspace_id, theirs.device.id, { type: 'sym' }, ENDPOINT)).rejects.toThrow(NotFoundError);
    await expect(createIdentity(db, mine.caller, mine.workspace_id, theirs.device.id, { type: 'sym' }, ENDPOINT)).rejects.toThrow(NotFoundError);
    await expect(listIdentities(db, mine.caller, theirs.workspace_id, theirs.device.id)).rejects.toThrow(NotFoundError);

    expect(await listIdentitiesOfWorkspace(db, theirs.workspace_id)).toEqual([]);
    expect(await listIdentitiesOfWorkspace(db, mine.workspace_id)).toEqual([]);
  });

  it('answers 404 when revoking another account’s identity and leaves it working', async () => {
    const mine = await accountWithDevice();
    const theirs = await accountWithDevice();
    const { identity } = await createIdentity(db, theirs.caller, theirs.workspace_id, theirs.device.id, { type: 'sym' }, ENDPOINT);

    await expect(revokeIdentity(db, mine.caller, theirs.workspace_id, theirs.device.id, identity.id)).rejects.toThrow(NotFoundError);
    await expect(revokeIdentity(db, mine.caller, mine.workspace_id, theirs.device.id, identity.id)).rejects.toThrow(NotFoundError);

    expect(await storedItem(theirs.workspace_id, theirs.device.id, identity.id)).toHaveProperty('secret');
  });

  it('answers 404 for an identity of another device of the same workspace', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();
    const other = await createDevice(db, caller, workspace_id, { name: 'other', phys_id: '' });
    const { identity } = await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, ENDPOINT);

    await expect(revokeIdentity(db, caller, workspace_id, other.id, identity.id)).rejects.toThrow(NotFoundError);

    expect((await itemsOf(listIdentities(db, caller, workspace_id, device.id)))[0].revoked_at).toBeNull();
  });

  it('stores nothing when the device endpoint is not configured', async () => {
    const { caller, workspace_id, device } = await accountWithDevice();

    await expect(createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, '')).rejects.toThrow(AppError);

    expect(await itemsOf(listIdentities(db, caller, workspace_id, device.id))).toEqual([]);
  });
});

describe('deviceEndpoint', () => {
  it.each([
    ['https://api.example.com/v3/device', { host: 'api.example.com', port: 443, mode: 'secure' }],
    ['https://api.example.com:8443/v3/device/', { host: 'api.example.com', port: 8443, mode: 'secure', url: 'https://api.example.com:8443/v3/device' }],
    ['http://127.0.0.1:3000/v3/device', { host: '127.0.0.1', port: 3000, mode: 'insecure' }],
  ])('describes %s', (url, expected) => {
    expect(deviceEndpoint(url)).toMatchObject(expected);
  });
});
