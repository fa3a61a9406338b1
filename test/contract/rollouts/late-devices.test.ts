/**
 * Continuous rollouts' late devices on DynamoDB Local: the registry stream's device records (built
 * as the stream writes them) give a device that matches later its job once, however often the
 * batch is delivered; a device the snapshot reached, or one changed in no watched field, is left
 * alone; the snapshot's own write does not count again a device the stream reached first (and
 * still names it); and an ended rollout leaves its workspace's list (and its group's used_by).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { addLateDevices, deviceChangeOf } from '../../../lambdas/domain/fleet-ops/late-devices';
import { getJob, scheduleFleetJob } from '../../../lambdas/domain/fleet-ops/jobs';
import { cancelRollout } from '../../../lambdas/domain/fleet-ops/rollouts';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import type { Db } from '../../../lambdas/shared/clients';
import { readContinuousTargets } from '../../../lambdas/stores/continuous-rollout-store';
import { queryAll } from '../../../lambdas/stores/items';
import { putJobOnDevicePages } from '../../../lambdas/stores/job-store';
import { deviceKey, groupKey, REGISTRY_SWEEP_INDEX } from '../../../lambdas/stores/keys';
import { countWritten } from '../../../lambdas/stores/rollout-counter-store';
import { getRollout } from '../../../lambdas/stores/rollout-store';
import { freshTable } from '../../helpers/db';
import { scheduledWhole, workspaceWithFleets } from '../../helpers/fleets';

let db: Db;
let setup: Awaited<ReturnType<typeof workspaceWithFleets>>;
let sequence = 0;

/** The stream record of a device item's change, as DynamoDB writes it (NEW_AND_OLD_IMAGES). */
const recordOf = (after: Record<string, unknown>, before?: Record<string, unknown>): DynamoDBRecord => {
  sequence += 1;
  const key = { pk: after.pk, sk: after.sk };
  return {
    eventID: `e${sequence}`,
    eventName: before ? 'MODIFY' : 'INSERT',
    dynamodb: {
      Keys: marshall(key) as never,
      NewImage: marshall(after, { removeUndefinedValues: true }) as never,
      ...(before ? { OldImage: marshall(before, { removeUndefinedValues: true }) as never } : {}),
      SequenceNumber: String(sequence).padStart(21, '0'),
    },
  };
};
const itemOf = async (workspaceId: string, deviceId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }))).Item!;
const totalOf = async (rolloutId: string) => (await getRollout(db, setup.workspace_id, rolloutId))!.tally;
const deps = () => ({ db, concurrency: 4 });

beforeAll(async () => {
  db = await freshTable(undefined, { indexes: [REGISTRY_SWEEP_INDEX] });
  setup = await workspaceWithFleets(db, 3);
});

describe('a device record of a continuous rollout’s workspace', () => {
  let rolloutId: string;
  beforeAll(async () => {
    const job = await scheduledWhole('job', scheduleFleetJob(db, setup.caller, setup.workspace_id, 'sync', { v: 1 }, [setup.north.id], { continuous: true }));
    rolloutId = job.rollout_id!;
    expect(job.devices).toHaveLength(3);
  });

  it('gives a device created in its fleet the job once, counted once, however often the batch comes', async () => {
    const device = await createDevice(db, setup.caller, setup.workspace_id, { name: 'late', fleet_id: setup.north.id, phys_id: '' });
    const batch = [recordOf(await itemOf(setup.workspace_id, device.id))];

    expect(await addLateDevices(deps(), batch)).toBeUndefined();
    const job = await getJob(db, setup.caller, device.id, 'sync');
    expect(await addLateDevices(deps(), batch)).toBeUndefined();
    expect(await addLateDevices(deps(), [...batch, ...batch])).toBeUndefined();

    expect(job).toMatchObject({ status: 'pending', rollout_id: rolloutId, value: { v: 1 } });
    expect(await getJob(db, setup.caller, device.id, 'sync')).toEqual(job);
    expect(await totalOf(rolloutId)).toMatchObject({ total: 4, counts: expect.objectContaining({ pending: 4 }) });
  });

  it('leaves alone a device its snapshot reached, and one of another fleet renamed', async () => {
    const reached = await itemOf(setup.workspace_id, setup.inNorth[0].id);
    const south = await itemOf(setup.workspace_id, setup.inSouth.id);

    await addLateDevices(deps(), [recordOf({ ...reached, tags: { k: 'v' } }, reached), recordOf({ ...south, name: 'renamed' }, south)]);

    expect((await getJob(db, setup.caller, setup.inSouth.id, 'sync').catch(() => undefined)) ?? null).toBeNull();
    expect((await totalOf(rolloutId)).total).toBe(4);
  });

  it('gives its job to a device moved into its fleet (a MODIFY of fleet_id)', async () => {
    const device = await createDevice(db, setup.caller, setup.workspace_id, { name: 'mover', fleet_id: setup.south.id, phys_id: '' });
    const before = await itemOf(setup.workspace_id, device.id);

    await addLateDevices(deps(), [recordOf({ ...before, fleet_id: setup.north.id }, before)]);

    expect(await getJob(db, setup.caller, device.id, 'sync')).toMatchObject({ rollout_id: rolloutId });
    expect((await totalOf(rolloutId)).total).toBe(5);
  });

  it('leaves the rollout’s list once canceled: a later device is not given its job', async () => {
    await cancelRollout(db, setup.caller, setup.workspace_id, rolloutId);
    const device = await createDevice(db, setup.caller, setup.workspace_id, { name: 'after', fleet_id: setup.north.id, phys_id: '' });

    await addLateDevices(deps(), [recordOf(await itemOf(setup.workspace_id, device.id))]);

    expect(await readContinuousTargets(db, setup.workspace_id)).toEqual([]);
    await expect(getJob(db, setup.caller, device.id, 'sync')).rejects.toThrow('not found');
  });
});

describe('deviceChangeOf', () => {
  const device = { pk: 'WKS#wks-1', sk: 'DEV#dev-1', id: 'dev-1', fleet_id: 'flt-1', name: 'a', tags: { site: 'milan' }, connected: false };

  it('takes a creation and a change of fleet, tags or name, never a connection or another item', () => {
    expect(deviceChangeOf(recordOf(device), 0)).toMatchObject({ workspaceId: 'wks-1', device: { id: 'dev-1' } });
    expect(deviceChangeOf(recordOf({ ...device, tags: { site: 'rome' } }, device), 1)).toMatchObject({ index: 1 });
    expect(deviceChangeOf(recordOf({ ...device, fleet_id: 'flt-2' }, device), 0)).toBeDefined();
    expect(deviceChangeOf(recordOf({ ...device, name: 'b' }, device), 0)).toBeDefined();
    expect(deviceChangeOf(recordOf({ ...device, connected: true, last_seen_at: 'now' }, device), 0)).toBeUndefined();
    expect(deviceChangeOf(recordOf({ pk: 'DEV#dev-1', sk: 'JOB#x', status: 'pending' }), 0)).toBeUndefined();
  });
});

describe('the snapshot’s write after the stream’s', () => {
  it('leaves an item already of its rollout as it is, does not count it, and still names its device', async () => {
    const rolloutId = 'rol-race';
    const at = new Date().toISOString();
    const [first, second] = setup.inNorth.map((d) => d.id);
    const job = (device_id: string) => ({
      name: 'race',
      value: {},
      status: 'pending' as const,
      scheduled_at: at,
      updated_at: at,
      rollout_id: rolloutId,
      device_id,
      workspace_id: setup.workspace_id,
      fleet_id: setup.north.id,
      event_ts: at,
    });
    // The stream gave the first device its item (counted) before the snapshot's write reaches it.
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { pk: `DEV#${first}`, sk: 'JOB#race', ...job(first), marker: 'stream' } }));
    const pages = (async function* () {
      yield [first, second].map((device_id) => ({ device_id, workspace_id: setup.workspace_id, fleet_id: setup.north.id }));
    })();

    const stored: string[] = [];
    for await (const page of putJobOnDevicePages(db, (d) => job(d.device_id), pages, 2, countWritten(db, setup.workspace_id, rolloutId, at)))
      stored.push(...page.map((d) => d.device_id));

    expect(stored.sort()).toEqual([first, second].sort());
    const kept = await db.doc.send(new GetCommand({ TableName: db.table, Key: { pk: `DEV#${first}`, sk: 'JOB#race' } }));
    expect(kept.Item?.marker).toBe('stream');
    expect(await totalOfCounters(rolloutId)).toBe(1);
  });
});

/** A rollout's counted total from its counter items alone (the rollout item of this store test does not exist). */
const totalOfCounters = async (rolloutId: string) => {
  const counters = await queryAll<{ total?: number }>(db, `WKS#${setup.workspace_id}`, `ROLLOUT#${rolloutId}#C`);
  return counters.reduce((sum, c) => sum + Number(c.total ?? 0), 0);
};

describe('a continuous rollout on a group', () => {
  it('is in the group’s used_by while it runs, and leaves it when canceled', async () => {
    const groupId = 'grp-used';
    await db.doc.send(
      new PutCommand({ TableName: db.table, Item: { ...groupKey(setup.workspace_id, groupId), id: groupId, name: 'g', query: 'name = "n0"' } }),
    );
    const job = await scheduledWhole(
      'job',
      scheduleFleetJob(db, setup.caller, setup.workspace_id, 'grouped', {}, undefined, { continuous: true }, { groupId }),
    );
    const group = async () =>
      (await db.doc.send(new GetCommand({ TableName: db.table, Key: groupKey(setup.workspace_id, groupId), ConsistentRead: true }))).Item!;

    expect(job.devices).toEqual([setup.inNorth[0].id]);
    expect([...((await group()).used_by as Set<string>)]).toEqual([job.rollout_id]);
    await cancelRollout(db, setup.caller, setup.workspace_id, job.rollout_id!);
    expect((await group()).used_by).toBeUndefined();
  });

  it('is refused (404) on a group that does not exist, and writes nothing', async () => {
    const before = await readContinuousTargets(db, setup.workspace_id);
    await expect(
      scheduledWhole('job', scheduleFleetJob(db, setup.caller, setup.workspace_id, 'none', {}, undefined, { continuous: true }, { groupId: 'grp-gone' })),
    ).rejects.toThrow('not found');
    expect(await readContinuousTargets(db, setup.workspace_id)).toEqual(before);
  });
});
