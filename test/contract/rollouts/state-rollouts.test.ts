/**
 * Fleet-wide desired state (fleet-state.md §3) on DynamoDB Local, with the registry stream's
 * consumer running on the table's stream: a rollout of kind `state` sets its keys on each device as
 * it releases it; a device is `done` at release when it already reports them, or when its report
 * comes (counts within seconds); the others stay `pending` and are listed so; the sweep times them
 * out, releases queued ones at the rate (setting their keys then), and a cancel ends only the
 * queued ones (a released device keeps its desired state, and may still apply it).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { until } from '../../../local/ports';

// The consumer reads REGISTRY_TABLE once, when lambdas/shared/env.ts loads: set it first.
Object.assign(process.env, { REGISTRY_TABLE: `test-${randomUUID()}`, FORWARD_QUEUE_URL: '' });
const { freshTable } = await import('../../helpers/db');
const { REGISTRY_SWEEP_INDEX, deviceKey } = await import('../../../lambdas/stores/keys');
const db = await freshTable(process.env.REGISTRY_TABLE, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
const { scheduleFleetState } = await import('../../../lambdas/domain/fleet-ops/state-rollouts');
const { cancelRollout, getRollout, listRolloutDevices } = await import('../../../lambdas/domain/fleet-ops/rollouts');
const { sweepRollouts } = await import('../../../lambdas/domain/fleet-ops/rollout-sweep');
const { deleteDevice } = await import('../../../lambdas/domain/registry/device-deletion');
const { setDesired, setReported, stateOf } = await import('../../../lambdas/domain/state/device-state');
const { scheduledWhole, workspaceWithFleets } = await import('../../helpers/fleets');
const { itemsOf } = await import('../../helpers/lists');

const { runRegistryStream } = await import('../../helpers/registry-stream');
await runRegistryStream(db);

type Setup = Awaited<ReturnType<typeof workspaceWithFleets>>;
const MINUTE = 60_000;
const DESIRED = { interval: 60, mode: { name: 'eco', level: [1, 2] } };

const sweep = (ahead = 0) => {
  const now = Date.now() + ahead;
  return sweepRollouts({ db, now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });
};

const deviceItem = async (workspaceId: string, deviceId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }))).Item!;

/** A device's report, through the device state's own path (merged into its reported state). */
const report = (workspaceId: string, deviceId: string, reported: Record<string, unknown>) => setReported(db, { workspaceId, deviceId }, reported);

const rolloutWhen = async (s: Setup, rolloutId: string, check: (r: Awaited<ReturnType<typeof getRollout>>) => boolean, what: string) => {
  let last: Awaited<ReturnType<typeof getRollout>> | undefined;
  await until(
    async () => check((last = await getRollout(db, s.caller, s.workspace_id, rolloutId))),
    `${what} (last: ${JSON.stringify(last?.counts)} ${last?.status})`,
    30_000,
  );
  return last!;
};
const idsIn = async (s: Setup, rolloutId: string, status: 'pending' | 'done' | 'queued' | 'canceled' | 'timed_out') =>
  (await itemsOf(listRolloutDevices(db, s.caller, s.workspace_id, rolloutId, [status]))).map((d) => d.device_id).sort();

describe('a fleet-wide desired state', () => {
  it('sets its keys on every device, done at once for one that reports them, done on report for another, pending for the rest until they time out', async () => {
    const s = await workspaceWithFleets(db, 3);
    const [early, reporter, partial] = s.inNorth.map((d) => d.id);
    const silent = s.inSouth.id;
    await report(s.workspace_id, early, { ...DESIRED, other: true });

    const change = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, DESIRED, undefined, { timeout_seconds: 600 }));

    expect(change.devices.sort()).toEqual([early, reporter, partial, silent].sort());
    for (const id of [early, reporter, partial, silent]) expect(stateOf(await deviceItem(s.workspace_id, id)).desired).toEqual(DESIRED);
    // The early one is done at its release (by the release itself or by the stream's consumer, whichever writes first): counted within seconds.
    const rollout = await rolloutWhen(s, change.rollout_id, (r) => r.counts.done === 1, 'the early one done');
    expect(rollout).toMatchObject({ kind: 'state', desired: DESIRED, total: 4, counts: expect.objectContaining({ done: 1, pending: 3 }) });

    await report(s.workspace_id, reporter, { mode: { name: 'eco', level: [1, 2] }, interval: 60 });
    await report(s.workspace_id, partial, { interval: 60, mode: { name: 'eco', level: [1] } });
    await rolloutWhen(s, change.rollout_id, (r) => r.counts.done === 2 && r.counts.pending === 2, 'the reporter done');
    expect(await idsIn(s, change.rollout_id, 'pending')).toEqual([partial, silent].sort());
    expect(await idsIn(s, change.rollout_id, 'done')).toEqual([early, reporter].sort());

    await sweep(601_000);
    const ended = await rolloutWhen(
      s,
      change.rollout_id,
      (r) => r.counts.timed_out === 2 && r.status === 'completed',
      'the silent ones timed out and the rollout completed',
    );
    expect(ended).toMatchObject({ status: 'completed', total: 4, counts: expect.objectContaining({ done: 2, timed_out: 2, pending: 0 }) });
  });

  it('releases queued devices at its rate, setting their keys then; a cancel ends the queued ones and leaves the released ones pending, still followed', async () => {
    const s = await workspaceWithFleets(db, 3);
    const change = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, { interval: 30 }, undefined, { max_per_minute: 1 }));
    const [first, second, ...rest] = [...s.inNorth, s.inSouth].map((d) => d.id).sort();
    expect(stateOf(await deviceItem(s.workspace_id, first)).desired).toEqual({ interval: 30 });
    expect(stateOf(await deviceItem(s.workspace_id, second)).desired).toEqual({});
    await rolloutWhen(s, change.rollout_id, (r) => r.counts.pending === 1 && r.counts.queued === 3, 'one released');

    await report(s.workspace_id, second, { interval: 30 });
    expect((await sweep(MINUTE + 1000)).released).toBe(1);
    // It already reported the key: done as it is released.
    await rolloutWhen(s, change.rollout_id, (r) => r.counts.done === 1 && r.counts.queued === 2, 'the second released, done');
    expect(stateOf(await deviceItem(s.workspace_id, second)).desired).toEqual({ interval: 30 });

    await cancelRollout(db, s.caller, s.workspace_id, change.rollout_id);
    await sweep();
    const canceled = await rolloutWhen(s, change.rollout_id, (r) => r.counts.canceled === 2, 'the queued ones canceled');
    expect(canceled).toMatchObject({ status: 'canceled', counts: expect.objectContaining({ pending: 1, done: 1, queued: 0 }) });
    expect(await idsIn(s, change.rollout_id, 'canceled')).toEqual(rest.sort());
    for (const id of rest) expect(stateOf(await deviceItem(s.workspace_id, id)).desired).toEqual({});

    await report(s.workspace_id, first, { interval: 30 });
    await rolloutWhen(s, change.rollout_id, (r) => r.counts.done === 2 && r.counts.pending === 0, 'the released one applied it after the cancel');
  });

  it('counts a deleted device canceled, so that the rollout completes once the others applied it', async () => {
    const s = await workspaceWithFleets(db, 1);
    const [kept, deleted] = [s.inNorth[0].id, s.inSouth.id];
    const change = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, { interval: 5 }));
    await report(s.workspace_id, kept, { interval: 5 });
    await deleteDevice(db, s.caller, s.workspace_id, deleted);

    const ended = await rolloutWhen(s, change.rollout_id, (r) => r.status === 'completed', 'completed');
    expect(ended.counts).toMatchObject({ done: 1, canceled: 1, pending: 0 });
  });

  it('cancels a pending device whose key a later change set to another value, and leaves one set to the same value', async () => {
    const s = await workspaceWithFleets(db, 1);
    const [changed, same] = [s.inNorth[0].id, s.inSouth.id];
    const first = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, { interval: 60, mode: 'eco' }));
    await setDesired(db, { workspaceId: s.workspace_id, deviceId: changed }, { interval: 30 });
    await setDesired(db, { workspaceId: s.workspace_id, deviceId: same }, { interval: 60, other: 1 });

    await rolloutWhen(s, first.rollout_id, (r) => r.counts.canceled === 1, 'the changed one canceled');
    const [row] = await itemsOf(listRolloutDevices(db, s.caller, s.workspace_id, first.rollout_id, ['canceled']));
    expect(row).toMatchObject({ device_id: changed, message: expect.stringContaining('desired.interval') });
    expect(await idsIn(s, first.rollout_id, 'pending')).toEqual([same]);
  });

  it('cancels a pending device whose key a later change removed, and ends done two rollouts of one value with one report', async () => {
    const s = await workspaceWithFleets(db, 1);
    const [removed, both] = [s.inNorth[0].id, s.inSouth.id];
    const first = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, { interval: 60, mode: 'eco' }));
    const second = await scheduledWhole('state_change', scheduleFleetState(db, s.caller, s.workspace_id, { interval: 60 }, [s.south.id]));
    await setDesired(db, { workspaceId: s.workspace_id, deviceId: removed }, { mode: null });
    await report(s.workspace_id, both, { interval: 60, mode: 'eco' });

    await rolloutWhen(s, first.rollout_id, (r) => r.counts.canceled === 1 && r.counts.done === 1, 'the removed one canceled, the other done');
    const [row] = await itemsOf(listRolloutDevices(db, s.caller, s.workspace_id, first.rollout_id, ['canceled']));
    expect(row).toMatchObject({ device_id: removed, message: expect.stringContaining('desired.mode') });
    expect(await rolloutWhen(s, second.rollout_id, (r) => r.counts.done === 1, 'the second one done')).toMatchObject({ status: 'completed' });
  });

  it('aborts by its rule once released devices time out, canceling the queued ones', async () => {
    const s = await workspaceWithFleets(db, 2);
    const change = await scheduledWhole(
      'state_change',
      scheduleFleetState(db, s.caller, s.workspace_id, { flag: true }, undefined, {
        max_per_minute: 1,
        timeout_seconds: 30,
        abort: { failure_percentage: 50, min_finished: 1 },
      }),
    );
    await sweep(40_000);
    const aborted = await rolloutWhen(s, change.rollout_id, (r) => r.status === 'aborted', 'aborted');
    expect(aborted.abort_reason).toMatchObject({ timed_out: 1 });
    await sweep(40_000);
    await rolloutWhen(s, change.rollout_id, (r) => r.counts.queued === 0 && r.counts.canceled === 2, 'the queued ones canceled');
  });
});
