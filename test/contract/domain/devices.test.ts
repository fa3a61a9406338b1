import { createDevice, getDevice, listDevices, updateDevice } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError } from '../../../lambdas/shared/errors';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

describe('devices on DynamoDB Local', () => {
  it('places a device created without fleet_id in the default fleet', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);

    const device = await createDevice(db, caller, workspace_id, { name: 'sensor', phys_id: '' });

    expect(device).toMatchObject({ fleet_id: default_fleet_id, fleet_name: 'default', workspace_name: 'default', identities: null });
    expect(await getDevice(db, caller, workspace_id, device.id)).toEqual(device);
  });

  it('moves a device to another fleet and renames it in one step', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const fleet = await createFleet(db, caller, workspace_id, { name: 'field', description: '' });
    const device = await createDevice(db, caller, workspace_id, { name: 'a', phys_id: '' });

    const moved = await updateDevice(db, caller, workspace_id, device.id, { name: 'b', fleet_id: fleet.id });

    expect(moved).toMatchObject({ id: device.id, name: 'b', fleet_id: fleet.id, fleet_name: 'field' });
  });

  it('changes nothing when the target fleet is another account’s', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const device = await createDevice(db, mine.caller, mine.workspace_id, { name: 'a', phys_id: '' });

    await expect(updateDevice(db, mine.caller, mine.workspace_id, device.id, { name: 'b', fleet_id: theirs.default_fleet_id })).rejects.toThrow(NotFoundError);

    expect(await getDevice(db, mine.caller, mine.workspace_id, device.id)).toEqual(device);
  });

  it('answers 404 for another account’s workspace and writes nothing', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);

    await expect(createDevice(db, mine.caller, theirs.workspace_id, { name: 'x', phys_id: '' })).rejects.toThrow(NotFoundError);

    expect(await itemsOf(listDevices(db, theirs.caller, theirs.workspace_id))).toEqual([]);
  });
});
