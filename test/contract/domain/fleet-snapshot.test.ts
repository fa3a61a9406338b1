/**
 * Moves during a fleet-wide scheduling, on DynamoDB Local: the scheduling is held between its
 * pages (its answer is read lazily) while other devices really move, then resumed. Whatever the
 * scheduler reads later, each device is targeted by where it was at the snapshot.
 */
import { updateDevice, createDevice } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { scheduleFleetJob } from '../../../lambdas/domain/fleet-ops/jobs';
import { scheduleFleetFota } from '../../../lambdas/domain/fleet-ops/fota';
import type { Db } from '../../../lambdas/shared/clients';
import { WRITE_CONCURRENCY } from '../../../lambdas/shared/env';
import { getFotaOfDevice, getJobOfDevice } from '../../../lambdas/stores/job-store';
import { putAll } from '../../../lambdas/stores/items';
import { deviceKey, deviceLocatorKey } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

// Four pages of the scheduler's read (1,000 devices each), written straight to the table as
// devices from before fleet histories existed; the moves below go through the domain. Held after
// its first answer, the scheduler has read at most three pages (it reads one page ahead of its
// writes): the last page is read after the moves.
const DEVICES = 3500;

const workspaceOfManyDevices = async () => {
  const account = await newAccount(db);
  const { caller, workspace_id: ws } = account;
  const [x, y] = await Promise.all(['x', 'y'].map((name) => createFleet(db, caller, ws, { name, description: '' })));
  const devices = Array.from({ length: DEVICES }, (_, i) => ({
    id: `dev-${String(i).padStart(5, '0')}snapshot`,
    name: `d${i}`,
    account_id: account.account_id,
    workspace_id: ws,
    fleet_id: i % 2 ? y.id : x.id,
    phys_id: '',
    created_at: new Date().toISOString(),
  }));
  await putAll(
    db,
    devices.map((d) => ({ ...deviceKey(ws, d.id), ...d })),
    WRITE_CONCURRENCY,
  );
  await putAll(
    db,
    devices.map((d) => ({ ...deviceLocatorKey(d.id), account_id: d.account_id, workspace_id: ws })),
    WRITE_CONCURRENCY,
  );
  // In key order: the first devices are on the scheduler's first page, the last ones on its last.
  const inX = devices.filter((_, i) => i % 2 === 0).map((d) => d.id);
  const inY = devices.filter((_, i) => i % 2 === 1).map((d) => d.id);
  return { caller, ws, x: x.id, y: y.id, inX, inY };
};

const rename = (id: string, fleet_id: string) => ({ name: id, fleet_id });

describe('a fleet-wide scheduling while devices move', () => {
  it('targets each device by its fleet at the snapshot, not where the scheduler finds it', async () => {
    const { caller, ws, x, y, inX, inY } = await workspaceOfManyDevices();
    const [early, late] = [inX[0], inY[inY.length - 1]]; // first page / last page
    const scheduling = await scheduleFleetJob(db, caller, ws, 'swap', { n: 1 }, [x]);
    const devices = scheduling.devices[Symbol.asyncIterator]();
    const first = await devices.next();

    // The scheduler has read its first page; now `early` leaves X and then `late` joins it.
    await updateDevice(db, caller, ws, early, rename(early, y));
    await updateDevice(db, caller, ws, late, rename(late, x));
    const answered = [first.value as string];
    for (let next = await devices.next(); !next.done; next = await devices.next()) answered.push(next.value);

    // At the snapshot, early was in X and late in Y: never both, which reading each where
    // it is when read would give.
    expect(answered).toContain(early);
    expect(answered).not.toContain(late);
    expect(answered.slice().sort()).toEqual(inX.slice().sort());
    expect(new Set(answered).size).toBe(answered.length);
    expect((await getJobOfDevice(db, early, 'swap'))?.fleet_id).toBe(x); // its event names the fleet at the snapshot
    expect(await getJobOfDevice(db, late, 'swap')).toBeUndefined();
  });

  it('leaves out a device created after the snapshot, and keeps one moved out after it', async () => {
    const { caller, ws, x, y, inX } = await workspaceOfManyDevices();
    const scheduling = await scheduleFleetFota(db, caller, ws, { firmwareId: 'fw', firmwareVersion: '1.0' }, [x]);
    const devices = scheduling.devices[Symbol.asyncIterator]();
    const answered = [(await devices.next()).value as string];

    const born = await createDevice(db, caller, ws, { name: 'born', fleet_id: x, phys_id: '' });
    const leaver = inX[inX.length - 1];
    await updateDevice(db, caller, ws, leaver, rename(leaver, y));
    for (let next = await devices.next(); !next.done; next = await devices.next()) answered.push(next.value);

    expect(answered).not.toContain(born.id);
    expect(answered).toContain(leaver);
    expect(answered.slice().sort()).toEqual(inX.slice().sort());
    expect(await getFotaOfDevice(db, born.id)).toBeUndefined();
  });

  it('counts a move committed before the scheduling began', async () => {
    const { caller, ws, x, y, inX, inY } = await workspaceOfManyDevices();
    await updateDevice(db, caller, ws, inX[3], rename(inX[3], y));
    await updateDevice(db, caller, ws, inY[3], rename(inY[3], x));

    const answered: string[] = [];
    for await (const id of (await scheduleFleetJob(db, caller, ws, 'after', {}, [x])).devices) answered.push(id);

    expect(answered).toContain(inY[3]);
    expect(answered).not.toContain(inX[3]);
    expect(answered).toHaveLength(inX.length);
  });
});
