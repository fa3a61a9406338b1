import type { Message } from '@aws-sdk/client-sqs';
import { freshQueue, receiveAll } from '../../helpers/sqs';

// The domain reads FORWARD_QUEUE_URL once, when lambdas/shared/env.ts loads: set it to this file's
// queue first, then load everything that reaches env.ts.
const queue = await freshQueue();
process.env.FORWARD_QUEUE_URL = queue.url;
const { scheduleFleetFota, scheduleFota } = await import('../../../lambdas/domain/fota');
const { scheduleFleetJob, scheduleJob } = await import('../../../lambdas/domain/jobs');
const { NotFoundError } = await import('../../../lambdas/shared/errors');
const { newAccount } = await import('../../helpers/callers');
const { workspaceWithFleets: workspaceWithDevicesInFleets } = await import('../../helpers/fleets');
const { freshTable } = await import('../../helpers/db');

const db = await freshTable();
const received: Message[] = [];

/** Every event on the forward queue so far about these devices (messages are kept once received). */
const eventsOf = async (deviceIds: string[]) => {
  received.push(...(await receiveAll(queue.url)));
  return received.map((m) => JSON.parse(m.Body!)).filter((e) => deviceIds.includes(e.device_id));
};

const workspaceWithFleets = () => workspaceWithDevicesInFleets(db, 25);

const MICROSECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('job and FOTA events on the forward queue (fauxqs)', () => {
  it('sends a c2d job event with the job as payload when a job is scheduled on a device', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets();

    const job = await scheduleJob(db, caller, inSouth.id, 'reboot', { delay: 5 });

    expect(await eventsOf([inSouth.id])).toEqual([
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

  it('sends one job event per device of the chosen fleets, and none to the others', async () => {
    const { caller, workspace_id, north, inNorth, inSouth } = await workspaceWithFleets();

    const job = await scheduleFleetJob(db, caller, workspace_id, 'update', { to: 2 }, [north.id]);

    const events = await eventsOf([...inNorth.map((d) => d.id), inSouth.id]);
    expect(events.map((e) => e.device_id).sort()).toEqual(job.devices.sort());
    expect(new Set(events.map((e) => `${e.type} ${e.direction} ${e.fleet_id} ${e.ts}`)).size).toBe(1);
    expect(events[0]).toEqual(expect.objectContaining({ type: 'job', direction: 'c2d', fleet_id: north.id }));
    expect(events[0].payload).toEqual({ name: 'update', status: 'pending', scheduled_at: job.scheduled_at, value: { to: 2 } });
  });

  it('sends c2d fota events with the firmware, for one device and for fleets', async () => {
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets();

    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '1.0' });
    const fleetFota = await scheduleFleetFota(db, caller, workspace_id, { firmwareId: 'fw', firmwareVersion: '2.0' });

    const events = await eventsOf([...inNorth.map((d) => d.id), inSouth.id]);
    expect(events.every((e) => e.type === 'fota' && e.direction === 'c2d')).toBe(true);
    expect(events.filter((e) => e.device_id === inSouth.id).map((e) => e.payload.value.firmware_version)).toEqual(['1.0', '2.0']);
    expect(events.filter((e) => e.payload.value.firmware_version === '2.0').map((e) => e.device_id).sort()).toEqual(fleetFota.devices.sort());
  });

  it('sends nothing when the device is another account’s', async () => {
    const mine = await newAccount(db);
    const theirs = await workspaceWithFleets();

    await expect(scheduleJob(db, mine.caller, theirs.inSouth.id, 'reboot', {})).rejects.toThrow(NotFoundError);
    await expect(scheduleFleetJob(db, mine.caller, theirs.workspace_id, 'reboot', {})).rejects.toThrow(NotFoundError);

    expect(await eventsOf([theirs.inSouth.id, ...theirs.inNorth.map((d) => d.id)])).toEqual([]);
  });
});
