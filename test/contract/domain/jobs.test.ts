import { getJob, listJobs, scheduleFleetJob, scheduleJob } from '../../../lambdas/domain/fleet-ops/jobs';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError } from '../../../lambdas/shared/errors';
import { newAccount } from '../../helpers/callers';
import { scheduledWhole, workspaceWithFleets as workspaceWithDevicesInFleets } from '../../helpers/fleets';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

// Several devices in `north` where a fleet-wide scheduling must reach each of them; one elsewhere.
const workspaceWithFleets = (northDevices = 1) => workspaceWithDevicesInFleets(db, northDevices);

describe('jobs on DynamoDB Local', () => {
  it('schedules a job on every device of the named fleets and only those', async () => {
    const { caller, workspace_id, north, inNorth, inSouth } = await workspaceWithFleets(3);

    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'update', { to: 2 }, [north.id]));

    expect(job.devices.sort()).toEqual(inNorth.map((d) => d.id).sort());
    expect(await getJob(db, caller, inNorth[2].id, 'update')).toEqual({
      name: 'update',
      status: 'pending',
      scheduled_at: job.scheduled_at,
      value: { to: 2 },
      rollout_id: job.rollout_id,
    });
    await expect(getJob(db, caller, inSouth.id, 'update')).rejects.toThrow(NotFoundError);
  });

  it('checks every fleet before the first write', async () => {
    const mine = await workspaceWithFleets();
    const theirs = await newAccount(db);

    await expect(scheduleFleetJob(db, mine.caller, mine.workspace_id, 'bad', {}, [mine.north.id, theirs.default_fleet_id])).rejects.toThrow(NotFoundError);

    expect(await itemsOf(listJobs(db, mine.caller, mine.inNorth[0].id))).toEqual([]);
  });

  it('replaces a job of the same name', async () => {
    const { caller, inSouth } = await workspaceWithFleets();
    await scheduleJob(db, caller, inSouth.id, 'reboot', { n: 1 });

    await scheduleJob(db, caller, inSouth.id, 'reboot', { n: 2 });

    expect(await itemsOf(listJobs(db, caller, inSouth.id))).toEqual([expect.objectContaining({ name: 'reboot', value: { n: 2 }, status: 'pending' })]);
  });

  it('answers 404 for another account’s device', async () => {
    const mine = await newAccount(db);
    const theirs = await workspaceWithFleets();

    await expect(scheduleJob(db, mine.caller, theirs.inSouth.id, 'reboot', {})).rejects.toThrow(NotFoundError);
    expect(await itemsOf(listJobs(db, theirs.caller, theirs.inSouth.id))).toEqual([]);
  });
});
