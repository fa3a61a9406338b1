/**
 * Rollouts on DynamoDB Local with the registry stream's consumer running on the table's stream:
 * releases by the sweep (a clock a minute ahead stands for the minute), pause and resume, cancel,
 * the abort rule, completion, timeouts, the devices list, and what a device is told meanwhile.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { until } from '../../../local/ports';

// The consumer reads REGISTRY_TABLE once, when lambdas/shared/env.ts loads: set it first.
Object.assign(process.env, { REGISTRY_TABLE: `test-${randomUUID()}`, FORWARD_QUEUE_URL: '' });
const { freshTable } = await import('../../helpers/db');
const { REGISTRY_SWEEP_INDEX } = await import('../../../lambdas/stores/keys');
const db = await freshTable(process.env.REGISTRY_TABLE, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
const { cancelFota, finishFota, scheduleFleetFota, scheduleFota, getFota } = await import('../../../lambdas/domain/fleet-ops/fota');
const { cancelJob, completeJob, getJob, scheduleFleetJob, scheduleJob } = await import('../../../lambdas/domain/fleet-ops/jobs');
const { cancelRollout, getRollout, listRolloutDevices, listRollouts, pauseRollout, resumeRollout } = await import('../../../lambdas/domain/fleet-ops/rollouts');
const { DEVICE_CONCURRENCY, sweepRollouts } = await import('../../../lambdas/domain/fleet-ops/rollout-sweep');
const { getDeviceStatus } = await import('../../../lambdas/domain/doors/device-api');
const { ConflictError, NotFoundError } = await import('../../../lambdas/shared/errors');
const { TRANSACT_LIMIT } = await import('../../../lambdas/stores/items');
const { newAccount } = await import('../../helpers/callers');
const { scheduledWhole, workspaceWithFleets } = await import('../../helpers/fleets');
const { itemsOf, pageOf } = await import('../../helpers/lists');

const { runRegistryStream } = await import('../../helpers/registry-stream');
await runRegistryStream(db);

type Caller = Awaited<ReturnType<typeof newAccount>>['caller'];
const MINUTE = 60_000;

/** One run of the sweep with its clock `ahead` ms in the future (a minute passing without waiting it). */
const sweep = (ahead = 0) => {
  const now = Date.now() + ahead;
  return sweepRollouts({ db, now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });
};

/** Waits until the rollout's counts satisfy `check`, and answers it. */
const rolloutWhen = async (
  caller: Caller,
  workspaceId: string,
  rolloutId: string,
  check: (r: Awaited<ReturnType<typeof getRollout>>) => boolean,
  what: string,
) => {
  let last: Awaited<ReturnType<typeof getRollout>> | undefined;
  await until(
    async () => check((last = await getRollout(db, caller, workspaceId, rolloutId))),
    `${what} (last: ${JSON.stringify(last?.counts)} ${last?.status})`,
    30_000,
  );
  return last!;
};

const place = (workspace_id: string, device_id: string) => ({ workspace_id, fleet_id: '', device_id });

describe('rate-limited rollouts', () => {
  it('releases max_per_minute devices a minute, in snapshot order, once however many sweeps overlap; pause holds them, resume goes on, and the queue closes', async () => {
    // Two full minutes' releases and a shorter third.
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(db, 9);
    const ordered = [...inNorth, inSouth].map((d) => d.id).sort();

    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'staged', { v: 1 }, undefined, { max_per_minute: 4 }));
    const id = job.rollout_id!;
    await rolloutWhen(caller, workspace_id, id, (r) => r.total === 10, 'all 10 counted');
    const released = async () => (await itemsOf(listRolloutDevices(db, caller, workspace_id, id, ['pending']))).map((d) => d.device_id).sort();

    const first = await getRollout(db, caller, workspace_id, id);
    expect(first.counts).toMatchObject({ pending: 4, queued: 6 });
    // The next minute's release, a minute after the scheduling released the first.
    expect(Date.parse(first.next_release_at!) - Date.parse(first.created_at)).toBe(MINUTE);
    expect(first.abort_reason).toBeNull();
    expect(await released()).toEqual(ordered.slice(0, 4));
    // Within the minute: nothing more.
    expect((await sweep()).released).toBe(0);

    // Two runs at once a minute later release the next four once.
    const runs = await Promise.all([sweep(MINUTE + 1000), sweep(MINUTE + 1000)]);
    expect(runs.map((r) => r.released).sort()).toEqual([0, 4]);
    await rolloutWhen(caller, workspace_id, id, (r) => r.counts.pending === 8, '8 pending');
    expect(await released()).toEqual(ordered.slice(0, 8));
    const [second] = await itemsOf(listRolloutDevices(db, caller, workspace_id, id, ['pending']));
    expect(await getJob(db, caller, ordered[4], 'staged')).toMatchObject({ status: 'pending', rollout_id: id });
    expect(second.updated_at).toBeDefined();

    expect(Date.parse((await getRollout(db, caller, workspace_id, id)).next_release_at!)).toBeGreaterThan(Date.parse(first.next_release_at!));
    // Paused, it releases nothing: no next release.
    expect((await pauseRollout(db, caller, workspace_id, id)).next_release_at).toBeNull();
    expect((await sweep(3 * MINUTE)).released).toBe(0);
    expect((await resumeRollout(db, caller, workspace_id, id)).status).toBe('in_progress');
    expect((await sweep(3 * MINUTE)).released).toBe(2);
    await rolloutWhen(caller, workspace_id, id, (r) => r.counts.pending === 10 && r.counts.queued === 0, 'all released');

    // A release that finds nothing queued closes the queue: the rollout leaves the sweep.
    expect((await sweep(5 * MINUTE)).released).toBe(0);
    expect((await sweep(7 * MINUTE)).released).toBe(0);
    for (const d of ordered) await completeJob(db, d, 'staged', { ok: true }, place(workspace_id, d));
    const done = await rolloutWhen(caller, workspace_id, id, (r) => r.status === 'completed', 'completed');
    expect(done.next_release_at).toBeNull();
    expect(done).toMatchObject({ total: 10, counts: { done: 10, pending: 0, queued: 0 } });
  });

  it('goes on with a release a run stopped short at its deadline in the next run, at that release’s time, never past max_per_minute', async () => {
    // A run whose clock passes its deadline once STOP_AFTER devices of its release are pending has
    // started at most DEVICE_CONCURRENCY + STOP_AFTER − 1 writes (DEVICE_CONCURRENCY at once, one more
    // as each of the first ones ends): a rate just above that is one the run stops short of.
    const STOP_AFTER = 4;
    const RATE = DEVICE_CONCURRENCY + STOP_AFTER;
    const REST = 5;
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(db, 2 * RATE + REST - 1);
    const ordered = [...inNorth, inSouth].map((d) => d.id).sort();
    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'owed', {}, undefined, { max_per_minute: RATE }));
    const id = job.rollout_id!;
    await rolloutWhen(caller, workspace_id, id, (r) => r.total === 2 * RATE + REST, 'all counted');

    // The devices the short run had not started on stay queued.
    let late = false;
    let pending = 0;
    const send = async (command: unknown) => {
      const answer = (await db.doc.send(command as never)) as { Attributes?: Record<string, unknown> };
      if (command instanceof UpdateCommand && answer.Attributes?.status === 'pending' && ++pending >= STOP_AFTER) late = true;
      return answer;
    };
    const stopping = { table: db.table, doc: { send } as unknown as typeof db.doc };
    const start = Date.now() + MINUTE + 1000;
    const short = await sweepRollouts({ db: stopping, now: () => Date.now() + MINUTE + 1000 + (late ? MINUTE : 0) }, { now: start, deadline: start + 40_000 });
    expect(short.released).toBeGreaterThanOrEqual(STOP_AFTER);
    expect(short.released).toBeLessThan(RATE);

    // The next run goes on with it: RATE in that minute in all, the next RATE in snapshot order, all at the release's time.
    const next = await sweep(MINUTE + 2000);
    expect(short.released + next.released).toBe(RATE);
    await rolloutWhen(caller, workspace_id, id, (r) => r.counts.pending === 2 * RATE && r.counts.queued === REST, 'two releases pending');
    const second = (await itemsOf(listRolloutDevices(db, caller, workspace_id, id, ['pending']))).filter((d) => !ordered.slice(0, RATE).includes(d.device_id));
    expect(second.map((d) => d.device_id).sort()).toEqual(ordered.slice(RATE, 2 * RATE));
    expect(new Set(second.map((d) => d.updated_at)).size).toBe(1);

    // Nothing more within that minute; the next minute releases the rest.
    expect((await sweep(MINUTE + 3000)).released).toBe(0);
    expect((await sweep(2 * MINUTE + 2000)).released).toBe(REST);
  });

  it('answers a queued job’s result with 409: the device was never given it', async () => {
    const { caller, workspace_id, inNorth } = await workspaceWithFleets(db, 3);
    const ordered = inNorth.map((d) => d.id).sort();
    await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'later', {}, undefined, { max_per_minute: 1 }));

    await expect(completeJob(db, ordered[2], 'later', {})).rejects.toThrow(/queued/);
    expect(await getJob(db, caller, ordered[2], 'later')).toMatchObject({ status: 'queued' });
  });
});

describe('ending a rollout', () => {
  it('aborts once enough ended devices failed, and the sweep cancels its queued and pending devices while in-progress ones go on', async () => {
    const { caller, workspace_id, inNorth } = await workspaceWithFleets(db, 12);
    const ordered = inNorth.map((d) => d.id).sort();
    const fota = await scheduledWhole(
      'fota',
      scheduleFleetFota(db, caller, workspace_id, { firmwareId: 'fw', firmwareVersion: '3' }, undefined, {
        max_per_minute: 8,
        abort: { failure_percentage: 50, min_finished: 4 },
      }),
    );
    const id = fota.rollout_id!;
    await rolloutWhen(caller, workspace_id, id, (r) => r.total === 13, 'counted');

    await finishFota(db, ordered[0], { status: 'in_progress', message: 'flashing' }, place(workspace_id, ordered[0]));
    await finishFota(db, ordered[1], { status: 'done' }, place(workspace_id, ordered[1]));
    await finishFota(db, ordered[2], { status: 'failed', message: 'checksum' }, place(workspace_id, ordered[2]));
    await finishFota(db, ordered[3], { status: 'failed', message: 'checksum' }, place(workspace_id, ordered[3]));
    // 3 ended, 2 failed: not yet (min_finished 4).
    await rolloutWhen(caller, workspace_id, id, (r) => r.counts.failed === 2, 'two failures counted');
    expect((await getRollout(db, caller, workspace_id, id)).status).toBe('in_progress');
    // 4 ended, 2 failed: 50 %, the rule's threshold.
    await finishFota(db, ordered[4], { status: 'done' }, place(workspace_id, ordered[4]));
    const aborted = await rolloutWhen(caller, workspace_id, id, (r) => r.status === 'aborted', 'aborted');
    // Why: the rule and the counts it fired on, in numbers and in words.
    expect(aborted.abort_reason).toEqual({
      rule: { failure_percentage: 50, min_finished: 4 },
      finished: 4,
      failed: 2,
      timed_out: 0,
      failure_percentage: 50,
      message:
        "2 of the 4 devices that had ended failed or timed out (2 failed, 0 timed out: 50 %), reaching the abort rule's 50 % once at least 4 have ended.",
      at: expect.any(String),
    });
    expect(aborted.next_release_at).toBeNull();
    // A pending device still answers before the sweep cancels it.
    await finishFota(db, ordered[5], { status: 'failed', message: 'checksum' }, place(workspace_id, ordered[5]));
    await rolloutWhen(caller, workspace_id, id, (r) => r.counts.failed === 3, 'the late failure counted');
    expect((await sweep()).canceled).toBe(7);
    const ended = await rolloutWhen(caller, workspace_id, id, (r) => r.counts.canceled === 7, 'canceled');
    expect(ended.counts).toMatchObject({ in_progress: 1, done: 2, failed: 3, canceled: 7, pending: 0, queued: 0 });
    // The reason stays as it fired, while the counts move on.
    expect(ended.abort_reason).toEqual(aborted.abort_reason);
    expect(await getFota(db, caller, ordered[0])).toMatchObject({ status: 'in_progress', message: 'flashing' });
    await expect(resumeRollout(db, caller, workspace_id, id)).rejects.toThrow(ConflictError);
    // An aborted rollout releases nothing more (the sweep sees every test's rollouts: read this one's devices).
    await sweep(2 * MINUTE);
    expect((await itemsOf(listRolloutDevices(db, caller, workspace_id, id, ['pending']))).length).toBe(0);
  });

  it('cancels a rollout: its devices are not told its jobs at once, and the sweep cancels them; cancel, pause and resume then answer 409', async () => {
    const { caller, workspace_id, inNorth } = await workspaceWithFleets(db, 4);
    const device = inNorth[0].id;
    await scheduleJob(db, caller, device, 'own', {});
    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'fleet', {}));
    const deviceCaller = { accountId: caller.accountId, workspaceId: workspace_id, deviceId: device, identityId: '' };
    const forward = async () => undefined;

    expect((await getDeviceStatus({ db, forward, enqueue: forward }, deviceCaller)).jobs.map((j) => j.name).sort()).toEqual(['fleet', 'own']);
    expect((await cancelRollout(db, caller, workspace_id, job.rollout_id!)).status).toBe('canceled');
    expect((await getDeviceStatus({ db, forward, enqueue: forward }, deviceCaller)).jobs.map((j) => j.name)).toEqual(['own']);

    expect((await sweep()).canceled).toBe(5);
    await rolloutWhen(caller, workspace_id, job.rollout_id!, (r) => r.counts.canceled === 5, 'all canceled');
    for (const change of [cancelRollout, pauseRollout, resumeRollout])
      await expect(change(db, caller, workspace_id, job.rollout_id!)).rejects.toThrow(ConflictError);
  });

  it('counts a job replaced by a later scheduling as canceled in its rollout, and lists it there', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets(db, 2);
    const first = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'x', { n: 1 }));
    await scheduleJob(db, caller, inSouth.id, 'x', { n: 2 });

    const counted = await rolloutWhen(caller, workspace_id, first.rollout_id!, (r) => r.counts.canceled === 1, 'the replaced one canceled');
    expect(counted.counts).toMatchObject({ pending: 2, canceled: 1 });
    await until(async () => (await itemsOf(listRolloutDevices(db, caller, workspace_id, first.rollout_id!, ['canceled']))).length === 1, 'listed', 10_000);
    expect(await itemsOf(listRolloutDevices(db, caller, workspace_id, first.rollout_id!, ['canceled']))).toEqual([
      { device_id: inSouth.id, device_name: 's0', status: 'canceled', updated_at: expect.any(String) },
    ]);
  });
});

describe('timeouts', () => {
  it('times out jobs and FOTA not ended by their deadline, on one device and in a rollout, and leaves ended ones', async () => {
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(db, 3);
    await scheduleJob(db, caller, inSouth.id, 'slow', {}, 30);
    await scheduleJob(db, caller, inSouth.id, 'quick', {}, 30);
    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '1' }, 30);
    await completeJob(db, inSouth.id, 'quick', { ok: 1 });
    const rollout = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'fleet-slow', {}, [inNorth[0].fleet_id], { timeout_seconds: 30 }));

    expect((await sweep(10_000)).timedOut).toBe(0);
    const run = await sweep(31_000);

    expect(run.timedOut).toBeGreaterThanOrEqual(5);
    expect(await getJob(db, caller, inSouth.id, 'slow')).toMatchObject({ status: 'timed_out', completed_at: expect.any(String), timeout_seconds: 30 });
    expect(await getJob(db, caller, inSouth.id, 'quick')).toMatchObject({ status: 'done' });
    expect(await getFota(db, caller, inSouth.id)).toMatchObject({ status: 'timed_out' });
    await rolloutWhen(caller, workspace_id, rollout.rollout_id!, (r) => r.counts.timed_out === 3 && r.status === 'completed', 'timed out and completed');
    // A run again changes nothing twice.
    expect((await sweep(31_000)).timedOut).toBe(0);
  });
});

describe('cancel one device’s job or FOTA', () => {
  it('cancels a pending one, then answers 409; an unknown one or another account’s device is 404', async () => {
    const { caller, inSouth } = await workspaceWithFleets(db, 1);
    const other = await newAccount(db);
    await scheduleJob(db, caller, inSouth.id, 'reboot', {});
    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '1' });

    expect(await cancelJob(db, caller, inSouth.id, 'reboot')).toMatchObject({ name: 'reboot', status: 'canceled', completed_at: expect.any(String) });
    expect(await cancelFota(db, caller, inSouth.id)).toMatchObject({ status: 'canceled' });
    await expect(cancelJob(db, caller, inSouth.id, 'reboot')).rejects.toThrow(ConflictError);
    await expect(cancelFota(db, caller, inSouth.id)).rejects.toThrow(ConflictError);
    await expect(cancelJob(db, caller, inSouth.id, 'never')).rejects.toThrow(NotFoundError);
    await expect(cancelJob(db, other.caller, inSouth.id, 'reboot')).rejects.toThrow(NotFoundError);
    await expect(completeJob(db, inSouth.id, 'reboot', { ok: true })).rejects.toThrow(ConflictError);
  });

  it('takes FOTA progress with each new message, then the outcome; the same outcome again changes nothing', async () => {
    const { caller, workspace_id, inSouth } = await workspaceWithFleets(db, 1);
    await scheduleFota(db, caller, inSouth.id, { firmwareId: 'fw', firmwareVersion: '1' });
    const at = place(workspace_id, inSouth.id);

    expect(await finishFota(db, inSouth.id, { status: 'in_progress', message: '10%' }, at)).toMatchObject({ status: 'in_progress', message: '10%' });
    expect(await finishFota(db, inSouth.id, { status: 'in_progress', message: '60%' }, at)).toMatchObject({ status: 'in_progress', message: '60%' });
    const done = await finishFota(db, inSouth.id, { status: 'done', message: 'rebooted' }, at);
    expect(await finishFota(db, inSouth.id, { status: 'done' }, at)).toEqual(done);
    await expect(finishFota(db, inSouth.id, { status: 'failed' }, at)).rejects.toThrow(ConflictError);
    await expect(finishFota(db, inSouth.id, { status: 'in_progress' }, at)).rejects.toThrow(ConflictError);
  });

  it('makes a job result with a top-level error failed', async () => {
    const { caller, inSouth } = await workspaceWithFleets(db, 1);
    await scheduleJob(db, caller, inSouth.id, 'flash', {});

    expect(await completeJob(db, inSouth.id, 'flash', { error: 'no space' })).toMatchObject({ status: 'failed', result: { error: 'no space' } });
    expect(await completeJob(db, inSouth.id, 'flash', { error: 'no space' })).toMatchObject({ status: 'failed' });
    await expect(completeJob(db, inSouth.id, 'flash', { ok: true })).rejects.toThrow(ConflictError);
  });
});

describe('counting what a scheduling writes', () => {
  it('counts each chunk of devices in the transaction that writes it: a scheduling cut short by a failing write counts exactly the devices written, and seals with them', async () => {
    const { TransactWriteCommand } = await import('@aws-sdk/lib-dynamodb');
    // Three chunks of devices: two full ones (a transaction's puts and its counter update) and one more device.
    const CHUNK = TRANSACT_LIMIT - 1;
    const { caller, workspace_id } = await workspaceWithFleets(db, 2 * CHUNK);
    let transactions = 0;
    const failing = {
      table: db.table,
      doc: {
        send: (command: unknown) => {
          // The first transaction creates the rollout (counted in the day's rollouts); the next two write chunks of devices.
          if (command instanceof TransactWriteCommand && ++transactions >= 4)
            return Promise.reject(Object.assign(new Error('throttled for good'), { name: 'ThrottlingException' }));
          return db.doc.send(command as never);
        },
      },
    } as unknown as typeof db;

    const { job, devices } = await scheduleFleetJob(failing, caller, workspace_id, 'cut', {});
    const named: string[] = [];
    await expect(
      (async () => {
        for await (const id of devices) named.push(id);
      })(),
    ).rejects.toThrow('throttled for good');

    const { record, tally } = (await (await import('../../../lambdas/stores/rollout-store')).getRollout(db, workspace_id, job.rollout_id!))!;
    const stored = (await itemsOf(listRolloutDevices(db, caller, workspace_id, job.rollout_id!))).map((d) => d.device_id);
    // The two transactions in flight with the failing one were stored (counted and sealed), whether or not the answer named them.
    expect(stored.length).toBe(2 * CHUNK);
    expect(tally).toMatchObject({ total: stored.length, counts: { pending: stored.length } });
    expect(record.sealed_total).toBe(stored.length);
    expect(named.every((id) => stored.includes(id))).toBe(true);
  });
});

describe('reading rollouts', () => {
  it('lists a workspace’s rollouts newest first, paged, and another account’s are 404', async () => {
    const { caller, workspace_id } = await workspaceWithFleets(db, 2);
    const made: string[] = [];
    for (const name of ['a', 'b', 'c']) made.push((await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, name, {}))).rollout_id!);
    const other = await newAccount(db);

    const first = await pageOf(listRollouts(db, caller, workspace_id, { limit: 2 }));
    const rest = await pageOf(listRollouts(db, caller, workspace_id, { limit: 2, cursor: first.next! }));

    expect([...first.items, ...rest.items].map((r) => r.id)).toEqual(made.slice().reverse());
    expect(rest.next).toBeNull();
    expect(first.items[0]).toMatchObject({
      kind: 'job',
      job_name: 'c',
      value: {},
      fleets: [],
      settings: { max_per_minute: null, timeout_seconds: null, abort: null },
    });
    await expect(getRollout(db, other.caller, workspace_id, made[0])).rejects.toThrow(NotFoundError);
    await expect(getRollout(db, caller, other.workspace_id, made[0])).rejects.toThrow(NotFoundError);
    await expect(listRolloutDevices(db, other.caller, workspace_id, made[0])).rejects.toThrow(NotFoundError);
  });

  it('pages a rollout’s devices across the index’s shards: each once, in order, and by state', async () => {
    const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(db, 40);
    const all = [...inNorth, inSouth].map((d) => d.id).sort();
    const job = await scheduledWhole('job', scheduleFleetJob(db, caller, workspace_id, 'p', {}));
    for (const d of all.slice(0, 9)) await completeJob(db, d, 'p', d.endsWith('0') ? { error: 'x' } : { ok: 1 });
    await until(
      async () => (await itemsOf(listRolloutDevices(db, caller, workspace_id, job.rollout_id!, ['pending']))).length === 32,
      'the index caught up',
      10_000,
    );

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await pageOf(listRolloutDevices(db, caller, workspace_id, job.rollout_id!, undefined, { limit: 7, ...(cursor ? { cursor } : {}) }));
      expect(page.items.length).toBeLessThanOrEqual(7);
      seen.push(...page.items.map((d) => `${d.status} ${d.device_id}`));
      cursor = page.next ?? undefined;
    } while (cursor);

    expect(seen.length).toBe(41);
    expect(new Set(seen.map((s) => s.split(' ')[1]))).toEqual(new Set(all));
    expect(seen.filter((s) => s.startsWith('pending')).map((s) => s.split(' ')[1])).toEqual(all.slice(9));
    const failed = await itemsOf(listRolloutDevices(db, caller, workspace_id, job.rollout_id!, ['failed']));
    expect(failed.every((d) => d.status === 'failed' && (d.result as { error?: string }).error === 'x')).toBe(true);
    // Several states: state by state in the order asked, paged across the states, each device once, by name.
    const names = new Map([...inNorth, inSouth].map((d) => [d.id, d.name]));
    const asked: string[] = [];
    let at: string | undefined;
    do {
      const page = await pageOf(
        listRolloutDevices(db, caller, workspace_id, job.rollout_id!, ['failed', 'pending', 'done'], { limit: 5, ...(at ? { cursor: at } : {}) }),
      );
      for (const d of page.items) {
        expect(d.device_name).toBe(names.get(d.device_id));
        asked.push(`${d.status} ${d.device_id}`);
      }
      at = page.next ?? undefined;
    } while (at);
    const inState = (status: string) => seen.filter((s) => s.startsWith(`${status} `));
    expect(asked).toEqual([...inState('failed'), ...inState('pending'), ...inState('done')]);
    await expect(
      pageOf(listRolloutDevices(db, caller, workspace_id, job.rollout_id!, ['failed'], { limit: 2, cursor: cursor ?? 'eyJsIjoieCIsImsiOiJ5In0' })),
    ).rejects.toThrow(/cursor/);
  });
});
