import type { Message } from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
import { until } from '../../../local/ports';
import { forwardEntries, freshQueue, receiveAll } from '../../helpers/sqs';

// The domain reads FORWARD_QUEUE_URL and REGISTRY_TABLE once, when lambdas/shared/env.ts loads: set
// them to this file's queue and table first, then load everything that reaches env.ts.
const queue = await freshQueue();
Object.assign(process.env, { FORWARD_QUEUE_URL: queue.url, REGISTRY_TABLE: `test-${randomUUID()}` });
const { freshTable } = await import('../../helpers/db');
const db = await freshTable(process.env.REGISTRY_TABLE, { stream: true });
const { startDynamoDbStreamPoller } = await import('../../../local/dynamodb-stream-poller');
const { handler } = await import('../../../lambdas/handlers/registry-stream/handler');
const { REGISTRY_STREAM } = await import('../../../lambdas/streams');
const { scheduleFleetFota, scheduleFota, finishFota } = await import('../../../lambdas/domain/fleet-ops/fota');
const { scheduleFleetJob, scheduleJob, completeJob } = await import('../../../lambdas/domain/fleet-ops/jobs');
const { updateDevice } = await import('../../../lambdas/domain/registry/devices');
const { putJob } = await import('../../../lambdas/stores/job-store');
const { NotFoundError } = await import('../../../lambdas/shared/errors');
const { newAccount } = await import('../../helpers/callers');
const { scheduledWhole, workspaceWithFleets: workspaceWithDevicesInFleets } = await import('../../helpers/fleets');

// The consumer runs over the table's real stream, with no filter: it sees every item the tests
// write (accounts, workspaces, fleets, devices, keys) and must make events of jobs and FOTA only.
const errors: unknown[] = [];
const poller = await startDynamoDbStreamPoller({
  tableName: db.table,
  batchSize: REGISTRY_STREAM.batchSize,
  maxBatchingWindowMs: 100,
  retryAttempts: 3,
  bisectBatchOnError: true,
  timeoutMs: 30_000,
  functionName: 'registry-stream',
  handler,
  startingPosition: 'TRIM_HORIZON',
  onError: (error) => errors.push(error),
});
afterAll(() => poller.stop());

const received: Message[] = [];

/** Every message on the forward queue so far (kept once received). */
const allEvents = async () => {
  received.push(...(await receiveAll(queue.url)));
  return forwardEntries(received.map((m) => m.Body!));
};
/** Every event on the forward queue so far about these devices. */
const eventsOf = async (deviceIds: string[]) => (await allEvents()).filter((e) => deviceIds.includes(e.device_id));

/** Waits until the devices have `count` events, and answers them. */
const awaitEvents = async (deviceIds: string[], count: number) => {
  await until(async () => (await eventsOf(deviceIds)).length >= count, `${count} events of ${deviceIds.join(', ')}`, 30_000);
  return eventsOf(deviceIds);
};

/**
 * Schedules a marker job on the device and waits for its event: DynamoDB Local keeps the table's
 * records in one ordered shard, so every change written before the marker has been handled.
 */
const settle = async (caller: Parameters<typeof scheduleJob>[1], deviceId: string) => {
  const marker = `marker-${Math.random().toString(36).slice(2)}`;
  await scheduleJob(db, caller, deviceId, marker, {});
  await until(async () => (await eventsOf([deviceId])).some((e) => e.payload?.name === marker), `the ${marker} event`, 30_000);
  return (await eventsOf([deviceId])).filter((e) => e.payload?.name !== marker);
};

// Several devices in `north` where a fleet-wide scheduling must send one event to each of them; one elsewhere.
const workspaceWithFleets = (northDevices = 1) => workspaceWithDevicesInFleets(db, northDevices);

const MICROSECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('job and FOTA events from the registry stream (DynamoDB Local → consumer → fauxqs)', () => {
  it('sends a c2d job event with the job as payload when a job is scheduled on a device', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets();

    const job = await scheduleJob(db, caller, inSouth.id, 'reboot', { delay: 5 });

    expect(await awaitEvents([inSouth.id], 1)).toEqual([
      {
        kind: 'event',
        ts: expect.stringMatching(MICROSECONDS),
        workspace_id,
        fleet_id: inSouth.fleet_id,
        device_id: inSouth.id,
        type: 'job',
        direction: 'c2d',
        payload: { name: 'reboot', status: 'pending', scheduled_at: job.scheduled_at, value: { delay: 5 } },
      },
    ]);
  });

  it('sends one job event per device of the chosen fleets, all with one ts, and none to the others', async () => {
    const { caller, workspace_id, north, inNorth, inSouth } = await workspaceWithFleets(4);

    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'update', { to: 2 }, [north.id]));

    const events = await awaitEvents([...inNorth.map((d) => d.id), inSouth.id], inNorth.length);
    expect(events.map((e) => e.device_id).sort()).toEqual(job.devices.sort());
    expect(new Set(events.map((e) => `${e.type} ${e.direction} ${e.fleet_id} ${e.ts}`)).size).toBe(1);
    expect(events[0]).toEqual(expect.objectContaining({ type: 'job', direction: 'c2d', fleet_id: north.id, ts: expect.stringMatching(MICROSECONDS) }));
    expect(events[0].payload).toEqual({ name: 'update', status: 'pending', scheduled_at: job.scheduled_at, value: { to: 2 }, rollout_id: job.rollout_id });
    expect(await settle(caller, inSouth.id)).toEqual([]);
  });

  it('sends c2d fota events with the firmware, for one device and for fleets', async () => {
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(4);

    const single = await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '1.0' });
    await awaitEvents([inSouth.id], 1);
    const fleetFota = await scheduledWhole('fota', scheduleFleetFota(db, caller, workspace_id, { firmwareId: 'fw', firmwareVersion: '2.0' }));

    const events = await awaitEvents([...inNorth.map((d) => d.id), inSouth.id], inNorth.length + 2);
    expect(events.every((e) => e.type === 'fota' && e.direction === 'c2d')).toBe(true);
    expect(events.filter((e) => e.device_id === inSouth.id).map((e) => e.payload)).toEqual([
      single,
      { scheduled_at: fleetFota.scheduled_at, status: 'pending', value: { firmware_id: 'fw', firmware_version: '2.0' }, rollout_id: fleetFota.rollout_id },
    ]);
    expect(
      events
        .filter((e) => e.payload.value.firmware_version === '2.0')
        .map((e) => e.device_id)
        .sort(),
    ).toEqual(fleetFota.devices.sort());
  });

  it('sends a d2c job event with the done job when the device reports its result, naming the fleet it is in now', async () => {
    const { caller, workspace_id, north, inSouth } = await workspaceWithFleets();
    await scheduleJob(db, caller, inSouth.id, 'reboot', { delay: 5 });
    await awaitEvents([inSouth.id], 1);
    await updateDevice(db, caller, workspace_id, inSouth.id, { name: 's0', fleet_id: north.id });

    const done = await completeJob(db, inSouth.id, 'reboot', { ok: true }, { workspace_id, fleet_id: north.id, device_id: inSouth.id });

    const [c2d, d2c] = await awaitEvents([inSouth.id], 2);
    expect(c2d).toEqual(expect.objectContaining({ direction: 'c2d', fleet_id: inSouth.fleet_id }));
    expect(d2c).toEqual({
      kind: 'event',
      ts: expect.stringMatching(MICROSECONDS),
      workspace_id,
      fleet_id: north.id,
      device_id: inSouth.id,
      type: 'job',
      direction: 'd2c',
      payload: { name: 'reboot', status: 'done', scheduled_at: done.scheduled_at, value: { delay: 5 }, result: { ok: true }, completed_at: done.completed_at },
    });
    expect(d2c.ts > c2d.ts).toBe(true);
  });

  it.each(['done', 'failed'] as const)('sends a d2c fota event when the device ends the FOTA as %s, with its message', async (outcome) => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets();
    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    const place = { workspace_id, fleet_id: inSouth.fleet_id, device_id: inSouth.id };

    const ended = await finishFota(db, inSouth.id, { status: outcome, firmware_version: '2.0', message: 'flash ok' }, place);

    const [, d2c] = await awaitEvents([inSouth.id], 2);
    expect(d2c).toEqual({
      kind: 'event',
      ts: expect.stringMatching(MICROSECONDS),
      ...place,
      type: 'fota',
      direction: 'd2c',
      payload: { ...ended, value: { firmware_id: 'fw', firmware_version: '2.0' }, status: outcome, message: 'flash ok' },
    });
  });

  it('sends no second d2c event when the device reports the same result again (the item does not change)', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets();
    const place = { workspace_id, fleet_id: inSouth.fleet_id, device_id: inSouth.id };
    await scheduleJob(db, caller, inSouth.id, 'reboot', {});
    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    await completeJob(db, inSouth.id, 'reboot', { ok: true }, place);
    await finishFota(db, inSouth.id, { status: 'done' }, place);

    const again = await completeJob(db, inSouth.id, 'reboot', { ok: true }, place);
    await finishFota(db, inSouth.id, { status: 'done' }, place);

    const events = await settle(caller, inSouth.id);
    expect(events.map((e) => `${e.type} ${e.direction}`)).toEqual(['job c2d', 'fota c2d', 'job d2c', 'fota d2c']);
    expect(events[2].payload).toEqual(again);
  });

  it('sends a new c2d event when an identical job is scheduled again (a new scheduling)', async () => {
    const { caller, inSouth } = await workspaceWithFleets();
    const first = await scheduleJob(db, caller, inSouth.id, 'reboot', { delay: 1 });
    await awaitEvents([inSouth.id], 1);

    const second = await scheduleJob(db, caller, inSouth.id, 'reboot', { delay: 1 });

    const events = await awaitEvents([inSouth.id], 2);
    expect(events.map((e) => e.payload.scheduled_at)).toEqual([first.scheduled_at, second.scheduled_at]);
    expect(events[1].ts > events[0].ts).toBe(true);
  });

  it('finds the place of a job written before items carried one, from the device', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets();

    await putJob(db, { name: 'legacy', status: 'pending', scheduled_at: '2026-01-02T03:04:05.678Z', value: { a: 1 }, device_id: inSouth.id });

    expect(await awaitEvents([inSouth.id], 1)).toEqual([
      expect.objectContaining({
        workspace_id,
        fleet_id: inSouth.fleet_id,
        type: 'job',
        direction: 'c2d',
        ts: expect.stringMatching(MICROSECONDS),
        payload: { name: 'legacy', status: 'pending', scheduled_at: '2026-01-02T03:04:05.678Z', value: { a: 1 } },
      }),
    ]);
    expect(await settle(caller, inSouth.id)).toHaveLength(1);
  });

  it('sends nothing for a job of a device that does not exist, nor for another account’s device', async () => {
    const mine = await workspaceWithFleets();
    const theirs = await workspaceWithFleets();
    const ghost = 'dev-00000000000000000000';

    await putJob(db, { name: 'orphan', status: 'pending', scheduled_at: '2026-01-02T03:04:05.678Z', value: {}, device_id: ghost });
    await expect(scheduleJob(db, (await newAccount(db)).caller, theirs.inSouth.id, 'reboot', {})).rejects.toThrow(NotFoundError);

    expect(await settle(mine.caller, mine.inSouth.id)).toEqual([]);
    expect(await eventsOf([ghost, theirs.inSouth.id, ...theirs.inNorth.map((d) => d.id)])).toEqual([]);
  });

  it('makes events of job and FOTA items only, although it sees every item of the table', async () => {
    const events = await allEvents();

    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.kind === 'event' && ['job', 'fota'].includes(e.type))).toBe(true);
    expect(errors).toEqual([]);
  });
});
