import { setDeviceFirmware } from '../../../lambdas/stores/device-health-store';
import { FIRMWARE_INDEX_KEY } from '../../../lambdas/stores/device-tag-index';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { deleteDevice } from '../../../lambdas/domain/registry/device-deletion';
import { createDevice, listDevices } from '../../../lambdas/domain/registry/devices';
import { createFleet, deleteFleet, getFleet } from '../../../lambdas/domain/registry/fleets';
import { createIdentity } from '../../../lambdas/domain/registry/identities';
import { scheduleJob } from '../../../lambdas/domain/fleet-ops/jobs';
import { deleteWorkspace } from '../../../lambdas/domain/tenancy/workspace-deletion';
import { createWorkspace, getWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import type { Db } from '../../../lambdas/shared/clients';
import { ConflictError, NotFoundError } from '../../../lambdas/shared/errors';
import { claimDeviceCount, findDeviceLocator } from '../../../lambdas/stores/device-store';
import { markFleetDeleting } from '../../../lambdas/stores/fleet-store';
import { getJobOfDevice } from '../../../lambdas/stores/job-store';
import { deviceLocatorKey, tagIndexKey, workspaceKey } from '../../../lambdas/stores/keys';
import { markWorkspaceDeleting } from '../../../lambdas/stores/workspace-deletion-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const read = async (key: { pk: string; sk: string }) => (await db.doc.send(new GetCommand({ TableName: db.table, Key: key, ConsistentRead: true }))).Item;
const endpoint = 'https://device.example.com';

describe('deleting a device on DynamoDB Local', () => {
  it('leaves a tombstone that refuses the device’s claims and lookups, frees its quota places and closes its session', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'scrap', phys_id: '', tags: { site: 'milan', model: 'v2' } });
    await createIdentity(db, caller, workspace_id, device.id, { type: 'sym' }, endpoint, { url: '', cacert: '' });
    await setDeviceFirmware(db, workspace_id, device.id, '1.2.0');
    const before = await read(workspaceKey(account_id, workspace_id));
    const closed: string[] = [];

    const answer = await deleteDevice(db, caller, workspace_id, device.id, { sessions: { enabled: true, disconnect: async (id) => closed.push(id) } });

    expect(answer).toMatchObject({ id: device.id, name: 'scrap' });
    expect(answer.identities).toHaveLength(1);
    expect(closed).toEqual([device.id]);
    expect(await findDeviceLocator(db, device.id)).toBeUndefined();
    expect(await claimDeviceCount(db, device.id, 'points', '2026-01-01', 1)).toBeUndefined();
    const tombstone = await read(deviceLocatorKey(device.id));
    expect(tombstone).toMatchObject({ account_id, workspace_id, deleted_at: expect.any(String), finished_at: expect.any(String) });
    expect(tombstone?.points_claimed).toBeUndefined();
    const after = await read(workspaceKey(account_id, workspace_id));
    expect([after?.devices_count, after?.identities_count, after?.places_version ?? 0]).toEqual([
      before!.devices_count - 1,
      before!.identities_count - 1,
      (before!.places_version ?? 0) + 1,
    ]);
    expect(await itemsOf(listDevices(db, caller, workspace_id))).toEqual([]);
    // its tag index entries go with it
    expect(await read(tagIndexKey(workspace_id, device.id, 'site', 'milan'))).toBeUndefined();
    expect(await read(tagIndexKey(workspace_id, device.id, 'model', 'v2'))).toBeUndefined();
    expect(await read(tagIndexKey(workspace_id, device.id, FIRMWARE_INDEX_KEY, '1.2.0'))).toBeUndefined();
  });

  it('cancels its open jobs, marked so that they become no event, and answers 404 to a second DELETE writing nothing', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'busy', phys_id: '' });
    await scheduleJob(db, caller, device.id, 'reboot', {});

    await deleteDevice(db, caller, workspace_id, device.id, { sessions: { enabled: false } });
    const tombstone = await read(deviceLocatorKey(device.id));
    const again = deleteDevice(db, caller, workspace_id, device.id, { sessions: { enabled: false } });

    await expect(again).rejects.toThrow(NotFoundError);
    expect(await read(deviceLocatorKey(device.id))).toEqual(tombstone);
    expect(await getJobOfDevice(db, device.id, 'reboot')).toMatchObject({ status: 'canceled', device_deleted: true });
  });

  it('answers 404 for another account’s device and deletes nothing', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const device = await createDevice(db, theirs.caller, theirs.workspace_id, { name: 'theirs', phys_id: '' });

    await expect(deleteDevice(db, mine.caller, mine.workspace_id, device.id)).rejects.toThrow(NotFoundError);
    await expect(deleteDevice(db, mine.caller, theirs.workspace_id, device.id)).rejects.toThrow(NotFoundError);

    expect(await findDeviceLocator(db, device.id)).toMatchObject({ account_id: theirs.account_id });
  });
});

describe('deleting a fleet on DynamoDB Local', () => {
  it('refuses a device created into or moved to a fleet being deleted (409), so that none ends up in a deleted fleet', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const fleet = await createFleet(db, caller, workspace_id, { name: 'going', description: '' });
    await markFleetDeleting(db, workspace_id, fleet.id, new Date().toISOString());

    await expect(createDevice(db, caller, workspace_id, { name: 'late', phys_id: '', fleet_id: fleet.id })).rejects.toThrow(ConflictError);

    expect(await itemsOf(listDevices(db, caller, workspace_id))).toEqual([]);
  });

  it('answers 409 while it holds a device and leaves it as it was; the default fleet never goes', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const fleet = await createFleet(db, caller, workspace_id, { name: 'busy', description: '' });
    await createDevice(db, caller, workspace_id, { name: 'in it', phys_id: '', fleet_id: fleet.id });

    await expect(deleteFleet(db, caller, workspace_id, fleet.id)).rejects.toThrow(ConflictError);
    await expect(deleteFleet(db, caller, workspace_id, default_fleet_id)).rejects.toThrow(ConflictError);

    expect(await getFleet(db, caller, workspace_id, fleet.id)).toEqual(fleet);
    expect((await read({ pk: `WKS#${workspace_id}`, sk: `FLT#${fleet.id}` }))?.deleting_at).toBeUndefined();
    await createDevice(db, caller, workspace_id, { name: 'still takes devices', phys_id: '', fleet_id: fleet.id });
  });
});

describe('deleting a workspace on DynamoDB Local', () => {
  it('refuses what would be created in a workspace being deleted, and answers it 404', async () => {
    const { caller } = await newAccount(db);
    const workspace = await createWorkspace(db, caller, { name: 'going', description: '' });
    await markWorkspaceDeleting(db, caller.accountId, workspace.id, new Date().toISOString());

    await expect(createDevice(db, caller, workspace.id, { name: 'late', phys_id: '' })).rejects.toThrow(NotFoundError);
    await expect(getWorkspace(db, caller, workspace.id)).rejects.toThrow(NotFoundError);

    expect((await read(workspaceKey(caller.accountId, workspace.id)))?.devices_count).toBe(0);
  });

  it('answers 409 while it holds a device (nothing marked), and deletes it and its partition once empty', async () => {
    const { caller, account_id } = await newAccount(db);
    const workspace = await createWorkspace(db, caller, { name: 'temporary', description: '' });
    const device = await createDevice(db, caller, workspace.id, { name: 'd', phys_id: '' });
    const accountBefore = await read({ pk: `ACC#${account_id}`, sk: 'ACCOUNT' });
    const defaultFleet = (await read(workspaceKey(account_id, workspace.id)))!.default_fleet_id as string;

    await expect(deleteWorkspace(db, caller, workspace.id)).rejects.toThrow(ConflictError);
    expect((await read(workspaceKey(account_id, workspace.id)))?.deleting_at).toBeUndefined();
    await deleteDevice(db, caller, workspace.id, device.id, { sessions: { enabled: false } });
    const deleted = await deleteWorkspace(db, caller, workspace.id, async () => undefined);

    expect(deleted).toMatchObject({ id: workspace.id, name: 'temporary' });
    expect(await read(workspaceKey(account_id, workspace.id))).toBeUndefined();
    expect(await read({ pk: `WKS#${workspace.id}`, sk: `FLT#${defaultFleet}` })).toBeUndefined();
    expect((await read({ pk: `ACC#${account_id}`, sk: 'ACCOUNT' }))?.workspaces_count).toBe(accountBefore!.workspaces_count - 1);
  });
});
