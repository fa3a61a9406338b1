import { devicePlaces, workspaceRetentions } from '../../../lambdas/domain/device-places';
import { updateWorkspace } from '../../../lambdas/domain/workspaces';
import { createDevice, updateDevice } from '../../../lambdas/domain/devices';
import { createFleet } from '../../../lambdas/domain/fleets';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../../lambdas/shared/clients';
import { deviceLocatorKey } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

/** A lookup on `db` whose clock the test moves, and the registry reads it made. */
const lookup = (ttlMs: number, max = 100) => {
  const clock = { now: 1_000_000 };
  let reads = 0;
  const counted: Db = {
    table: db.table,
    doc: new Proxy(db.doc, { get: (target, name) => (name === 'send' ? (command: never) => (reads++, target.send(command)) : Reflect.get(target, name)) }),
  };
  return {
    places: devicePlaces(counted, { ttlMs, max, now: () => clock.now }),
    retentions: workspaceRetentions(counted, { ttlMs, max, now: () => clock.now }),
    clock,
    reads: () => reads,
  };
};

describe('device places of the MQTT data path', () => {
  it('finds a device’s workspace, fleet and name, and answers from memory within its bound', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const { places, clock, reads } = lookup(60_000);

    const first = await places([device.id]);
    clock.now += 59_999;
    const again = await places([device.id, device.id]);

    expect(first.get(device.id)).toEqual({ workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: 'pump', account_id });
    expect(again).toEqual(first);
    // The locator carries the fleet and name: one read, once.
    expect(reads()).toBe(1);
  });

  it('reads the device too behind a locator written before locators carried the fleet and name', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'old pump', phys_id: '' });
    const key = deviceLocatorKey(device.id);
    await db.doc.send(new UpdateCommand({ TableName: db.table, Key: key, UpdateExpression: 'REMOVE fleet_id, #name', ExpressionAttributeNames: { '#name': 'name' } }));
    const { places, reads } = lookup(60_000);

    const found = (await places([device.id])).get(device.id);

    expect(found).toEqual({ workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: 'old pump', account_id });
    expect(reads()).toBe(2);
  });

  it('sees a move and a rename once its bound has passed, not before', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const fleet = await createFleet(db, caller, workspace_id, { name: 'field', description: '' });
    const { places, clock } = lookup(60_000);
    await places([device.id]);

    await updateDevice(db, caller, workspace_id, device.id, { name: 'moved pump', fleet_id: fleet.id });
    const stale = (await places([device.id])).get(device.id);
    clock.now += 60_001; // an answer is used for its whole bound, up to and including its last millisecond
    const fresh = (await places([device.id])).get(device.id);

    expect(stale).toMatchObject({ fleet_id: device.fleet_id, device_name: 'pump' });
    expect(fresh).toMatchObject({ fleet_id: fleet.id, device_name: 'moved pump' });
  });

  it('remembers an unknown device too, and shares one read between lookups at once', async () => {
    const { places, reads } = lookup(60_000);

    const answers = await Promise.all([places(['dev-00000000000000000000']), places(['dev-00000000000000000000'])]);
    await places(['dev-00000000000000000000']);

    expect(answers.map((a) => a.get('dev-00000000000000000000'))).toEqual([undefined, undefined]);
    // The locator is not found: one read, and no more.
    expect(reads()).toBe(1);
  });

  it('forgets the device used longest ago beyond its bound of devices', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const devices = await Promise.all([1, 2, 3].map((n) => createDevice(db, caller, workspace_id, { name: `d${n}`, phys_id: '' })));
    const { places, reads } = lookup(60_000, 2);

    for (const device of devices) await places([device.id]);
    await places([devices[2].id]);
    const before = reads();
    await places([devices[0].id]);

    expect(before).toBe(3);
    expect(reads()).toBe(4);
  });
});

describe('workspace retentions of the ingest', () => {
  it('reads a workspace’s retention once per bound, sees a change once it has passed, and none for a workspace without one', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const other = await newAccount(db);
    const { retentions, clock, reads } = lookup(60_000);

    const none = await retentions(other.account_id, other.workspace_id);
    await updateWorkspace(db, async () => undefined, caller, workspace_id, { data_retention_days: 30 });
    const first = await Promise.all([retentions(account_id, workspace_id), retentions(account_id, workspace_id)]);
    await updateWorkspace(db, async () => undefined, caller, workspace_id, { data_retention_days: 7 });
    const stale = await retentions(account_id, workspace_id);
    clock.now += 60_001; // an answer is used for its whole bound, up to and including its last millisecond
    const fresh = await retentions(account_id, workspace_id);

    expect([none, ...first, stale, fresh]).toEqual([undefined, 30, 30, 30, 7]);
    // One read for the other workspace, one shared by the two lookups at once, one after the bound.
    expect(reads()).toBe(3);
    // Another account's ID with this workspace's finds nothing: the account is part of the key.
    expect(await retentions(other.account_id, workspace_id)).toBeUndefined();
  });
});
