import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createDevice, listDevices } from '../../../lambdas/domain/registry/devices';
import { getState, setDesired, setReported, stateOf } from '../../../lambdas/domain/state/device-state';
import type { Db } from '../../../lambdas/shared/clients';
import { ConflictError, NotFoundError, ValidationError } from '../../../lambdas/shared/errors';
import { deviceKey } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const newDevice = async () => {
  const { caller, workspace_id } = await newAccount(db);
  const device = await createDevice(db, caller, workspace_id, { name: 'thermo', phys_id: '' });
  return { workspaceId: workspace_id, deviceId: device.id };
};
const itemOf = async (ref: { workspaceId: string; deviceId: string }) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(ref.workspaceId, ref.deviceId), ConsistentRead: true }))).Item!;

describe('device state on DynamoDB Local', () => {
  it('answers empty objects and version 0 for a device never given a state, and stores nothing', async () => {
    const ref = await newDevice();

    expect(await getState(db, ref)).toEqual({ desired: {}, reported: {}, delta: {}, version: 0, desired_at: {}, reported_at: {} });
    expect((await itemOf(ref)).state).toBeUndefined();
  });

  it('merges desired keys on the device item, grows the version once a change, and keeps reported apart', async () => {
    const ref = await newDevice();

    const first = await setDesired(db, ref, { interval: 60, mode: 'eco', cfg: { a: [1, 2] } });
    await setReported(db, ref, { interval: 30, fw_version: '1.2.0' });
    const second = await setDesired(db, ref, { mode: null, cfg: { a: [1, 2] } }, { version: 1 });
    const unchanged = await setDesired(db, ref, { interval: 60 });

    expect(first.version).toBe(1);
    expect(second).toMatchObject({ desired: { interval: 60, cfg: { a: [1, 2] } }, reported: { interval: 30, fw_version: '1.2.0' }, version: 2 });
    expect(second.delta).toEqual({ interval: 60, cfg: { a: [1, 2] } });
    expect(Object.keys(second.desired_at).sort()).toEqual(['cfg', 'interval']);
    expect(unchanged.version).toBe(2);
    const { state } = await itemOf(ref);
    expect(state).toEqual({
      desired: second.desired,
      reported: second.reported,
      version: 2,
      desired_at: second.desired_at,
      reported_at: second.reported_at,
    });
    expect(stateOf(await itemOf(ref))).toEqual(second);
  });

  it('makes a reported fw_version the device’s firmware_version, found by a search from the index', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'reporter', phys_id: '' });
    const ref = { workspaceId: workspace_id, deviceId: device.id };

    await setReported(db, ref, { fw_version: '1.2.0' });
    await setReported(db, ref, { fw_version: '1.3.0', interval: 30 });
    const found = async (q: string) => (await itemsOf(listDevices(db, caller, workspace_id, { q }))).map((d) => d.id);

    expect((await itemOf(ref)).firmware_version).toBe('1.3.0');
    expect(await found('firmware_version = "1.3.0"')).toEqual([device.id]);
    expect(await found('firmware_version = "1.2.0"')).toEqual([]);
  });

  it('refuses a stale version with 409 and writes nothing', async () => {
    const ref = await newDevice();
    await setDesired(db, ref, { interval: 60 });
    const before = await itemOf(ref);

    await expect(setDesired(db, ref, { interval: 10 }, { version: 0 })).rejects.toThrow(ConflictError);
    expect(await itemOf(ref)).toEqual(before);
  });

  it('refuses a bad document naming the key, and a missing device with 404, writing nothing', async () => {
    const ref = await newDevice();
    const before = await itemOf(ref);

    await expect(setDesired(db, ref, { '@x': 1 })).rejects.toThrow(ValidationError);
    await expect(setReported(db, ref, { ok: 1, _x: 1 }, { field: 'value.reported' })).rejects.toMatchObject({
      details: [{ field: 'value.reported._x' }],
    });
    await expect(setDesired(db, { ...ref, deviceId: 'dev-00000000000000000000' }, { a: 1 })).rejects.toThrow(NotFoundError);
    expect(await itemOf(ref)).toEqual(before);
  });

  it('loses no change when desired and reported writes race on one device', async () => {
    const ref = await newDevice();

    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => setDesired(db, ref, { [`d${i}`]: i })),
      ...Array.from({ length: 6 }, (_, i) => setReported(db, ref, { [`r${i}`]: i })),
    ]);

    const state = await getState(db, ref);
    expect(state.version).toBe(6);
    expect(Object.keys(state.desired).sort()).toEqual(['d0', 'd1', 'd2', 'd3', 'd4', 'd5']);
    expect(Object.keys(state.reported).sort()).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
  });
});
