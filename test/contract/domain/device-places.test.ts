import { devicePlaces, PLACE_MAX_AGE_MS, workspaceSettings } from '../../../lambdas/domain/registry/device-places';
import { updateWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import { createDevice, updateDevice } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../../lambdas/shared/clients';
import { deviceLocatorKey } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

/** A lookup on `db` whose clock the test moves, and the registry reads it made (all, and of device locators). */
const lookup = (ttlMs: number, max = 100) => {
  const clock = { now: 1_000_000 };
  let reads = 0;
  let locatorReads = 0;
  const counted: Db = {
    table: db.table,
    doc: new Proxy(db.doc, {
      get: (target, name) =>
        name === 'send'
          ? (command: { input: { Key?: { sk?: string } } }) => {
              reads++;
              if (command.input.Key?.sk === 'DEVICE') locatorReads++;
              return target.send(command as never);
            }
          : Reflect.get(target, name),
    }),
  };
  const settings = workspaceSettings(counted, { ttlMs, max, now: () => clock.now });
  return {
    places: devicePlaces(counted, { settings, ttlMs, max, now: () => clock.now }),
    retentions: async (accountId: string, workspaceId: string) => (await settings(accountId, workspaceId))?.data_retention_days,
    settings,
    clock,
    reads: () => reads,
    locatorReads: () => locatorReads,
  };
};

describe('device places of the MQTT data path', () => {
  it('finds a device’s workspace, fleet and name, and answers from memory within its bound', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const { places, clock, reads, locatorReads } = lookup(60_000);

    const first = await places([device.id]);
    clock.now += 59_999;
    const again = await places([device.id, device.id]);

    expect(first.get(device.id)).toEqual({ workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: 'pump', account_id });
    expect(again).toEqual(first);
    // The locator carries the fleet and name: read to find the workspace, whose version of its places
    // is read next, then read again (strongly consistent) after it; and nothing more within the bound.
    expect([reads(), locatorReads()]).toEqual([3, 2]);
  });

  it('keeps a place past its bound while its workspace’s places are unchanged, reading only the workspace again; a day at most', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const other = await createDevice(db, caller, workspace_id, { name: 'valve', phys_id: '' });
    const { places, clock, reads, locatorReads } = lookup(60_000);
    await places([device.id, other.id]);

    clock.now += 60_001;
    const later = await places([device.id, other.id]);
    const [readsLater, locatorsLater] = [reads(), locatorReads()];
    clock.now += PLACE_MAX_AGE_MS;
    await places([device.id]);

    expect(later.get(device.id)).toMatchObject({ fleet_id: device.fleet_id, device_name: 'pump' });
    // Each locator twice and the workspace once at first; then the workspace once more (shared by both devices), no locator.
    expect([readsLater, locatorsLater]).toEqual([6, 4]);
    // Past a day the place is read again, whatever its workspace says (its workspace known: the locator once).
    expect(locatorReads()).toBe(5);
  });

  it('reads the device too behind a locator written before locators carried the fleet and name', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'old pump', phys_id: '' });
    const key = deviceLocatorKey(device.id);
    await db.doc.send(
      new UpdateCommand({ TableName: db.table, Key: key, UpdateExpression: 'REMOVE fleet_id, #name', ExpressionAttributeNames: { '#name': 'name' } }),
    );
    const { places, reads } = lookup(60_000);

    const found = (await places([device.id])).get(device.id);

    expect(found).toEqual({ workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: 'old pump', account_id });
    // The locator and the device, the workspace's version of its places, then the locator and the device again.
    expect(reads()).toBe(5);
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

  it('sees a rename alone, and counts each move or rename in the workspace’s version of its places (a change of the physical ID alone is none)', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const { places, settings, clock } = lookup(60_000);
    await places([device.id]);
    const before = (await settings(account_id, workspace_id))!.places_version;

    await updateDevice(db, caller, workspace_id, device.id, { name: 'pump', fleet_id: device.fleet_id, phys_id: 'serial-1' });
    clock.now += 60_001;
    const unchanged = (await settings(account_id, workspace_id))!.places_version;
    await updateDevice(db, caller, workspace_id, device.id, { name: 'renamed pump', fleet_id: device.fleet_id });
    clock.now += 60_001;
    const renamed = (await places([device.id])).get(device.id);

    expect([before, unchanged]).toEqual([0, 0]);
    expect(await settings(account_id, workspace_id)).toEqual({ places_version: 1, alarm_rules_version: 0 });
    expect(renamed).toMatchObject({ fleet_id: device.fleet_id, device_name: 'renamed pump' });
  });

  it('checks a place remembered from a claim at its next lookup: the workspace’s version, then the locator alone', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'pump', phys_id: '' });
    const fleet = await createFleet(db, caller, workspace_id, { name: 'field', description: '' });
    const { places, reads, locatorReads } = lookup(60_000);
    // What a claim read before the device moved: not trusted past the version that came after it.
    places.remember!(device.id, { workspace_id, fleet_id: device.fleet_id, device_id: device.id, device_name: 'pump', account_id });
    await updateDevice(db, caller, workspace_id, device.id, { name: 'moved pump', fleet_id: fleet.id });

    const found = (await places([device.id])).get(device.id);

    expect(found).toMatchObject({ fleet_id: fleet.id, device_name: 'moved pump' });
    expect([reads(), locatorReads()]).toEqual([2, 1]);
  });

  it('remembers an unknown device too, for its bound, and shares one read between lookups at once', async () => {
    const { places, reads, clock } = lookup(60_000);

    const answers = await Promise.all([places(['dev-00000000000000000000']), places(['dev-00000000000000000000'])]);
    await places(['dev-00000000000000000000']);

    expect(answers.map((a) => a.get('dev-00000000000000000000'))).toEqual([undefined, undefined]);
    // The locator is not found: one read, and no more within the bound; one more after it (a device created since is found).
    expect(reads()).toBe(1);
    clock.now += 60_001;
    await places(['dev-00000000000000000000']);
    expect(reads()).toBe(2);
  });

  it('forgets the device used longest ago beyond its bound of devices', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const devices = await Promise.all([1, 2, 3].map((n) => createDevice(db, caller, workspace_id, { name: `d${n}`, phys_id: '' })));
    const { places, reads } = lookup(60_000, 2);

    for (const device of devices) await places([device.id]);
    await places([devices[2].id]);
    const before = reads();
    await places([devices[0].id]);

    // Three devices' places (each locator twice) and the workspace; then the first device's place again.
    expect(before).toBe(7);
    expect(reads()).toBe(9);
  });
});

describe('workspace settings of the ingest', () => {
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
