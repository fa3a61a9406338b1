import { createDevice, updateDevice } from '../../../lambdas/domain/registry/devices';
import {
  getDeviceStatus,
  publishData,
  reportEvents,
  reportFotaResult,
  reportJobResult,
  type DeviceApiDeps,
  type PublishDataDeps,
} from '../../../lambdas/domain/doors/device-api';
import { CloudStamper } from '../../../lambdas/shared/timestamps';
import { limitsMemory } from '../../../lambdas/domain/limits/limits';
import { changeWorkspaceLimits } from '../../../lambdas/domain/limits/limits-views';
import { deviceQuota } from '../../../lambdas/domain/limits/device-quota';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { getFota, scheduleFota } from '../../../lambdas/domain/fleet-ops/fota';
import type { DeviceCaller } from '../../../lambdas/domain/registry/identities';
import { getJob, listJobs, scheduleJob } from '../../../lambdas/domain/fleet-ops/jobs';
import type { IngestMessage } from '../../../lambdas/schemas/device-api';
import type { EventMessage } from '../../../lambdas/schemas/forward';
import type { Db } from '../../../lambdas/shared/clients';
import { ConflictError, NotFoundError, QuotaExceededError } from '../../../lambdas/shared/errors';
import { forwardRegistryChanges } from '../../../lambdas/domain/fleet-ops/registry-events';
import { startDynamoDbStreamPoller, type StreamPoller } from '../../../local/dynamodb-stream-poller';
import { until } from '../../../local/ports';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
let poller: StreamPoller;
/** What the registry stream's consumer forwards: job and FOTA events follow their writes through the table's stream. */
const streamed: EventMessage[] = [];
beforeAll(async () => {
  db = await freshTable(undefined, { stream: true });
  poller = await startDynamoDbStreamPoller({
    tableName: db.table,
    batchSize: 100,
    maxBatchingWindowMs: 50,
    retryAttempts: 0,
    bisectBatchOnError: false,
    timeoutMs: 10_000,
    functionName: 'registry-stream',
    handler: async (event) => {
      const failed = await forwardRegistryChanges({ db, forward: async (events) => void streamed.push(...events), concurrency: 4 }, event.Records);
      return { batchItemFailures: failed ? [{ itemIdentifier: failed }] : [] };
    },
    startingPosition: 'TRIM_HORIZON',
  });
});
afterAll(() => poller.stop());

/** The streamed events of a device once `done` holds for them. */
const streamedFor = async (deviceId: string, done: (events: EventMessage[]) => boolean) => {
  const of = () => streamed.filter((e) => e.device_id === deviceId);
  await until(() => done(of()), `the streamed events of ${deviceId}`, 30_000);
  return of();
};

/** Deps whose queues keep what they are given. */
const recordingDeps = () => {
  const queued: IngestMessage[] = [];
  const forwarded: EventMessage[] = [];
  const deps: PublishDataDeps = {
    db,
    enqueue: async (messages) => void queued.push(...messages),
    forward: async (messages) => void forwarded.push(...messages),
    stamper: new CloudStamper(),
    points: deviceQuota(db, 'points', { limits: limitsMemory(db, { ttlMs: 0 }), slice: () => 0, max: 1000 }),
    events: deviceQuota(db, 'events', { limits: limitsMemory(db, { ttlMs: 0 }), slice: () => 0, max: 1000 }),
  };
  return { deps, queued, forwarded };
};

const deviceOfNewAccount = async () => {
  const account = await newAccount(db);
  const device = await createDevice(db, account.caller, account.workspace_id, { name: 'sensor', phys_id: '' });
  const self: DeviceCaller = { accountId: account.account_id, workspaceId: account.workspace_id, deviceId: device.id, identityId: 'idn-00000000000000000000' };
  return { ...account, device, self };
};

describe('publishing data', () => {
  it('queues one ingest message with the arrival time, the device’s fleet and name, and a cloud stamp for each point without a time', async () => {
    const { device, self } = await deviceOfNewAccount();
    const { deps, queued } = recordingDeps();
    const arrival = '2026-01-02T03:04:05.678Z';

    const answer = await publishData(
      deps,
      self,
      [
        { tag: 'weather', payload: { temp: 21 }, timestamp_device: '2026-01-02T03:00:00.000Z' },
        { tag: 'weather', payload: [1, 2] },
        { tag: 'weather', payload: [1, 2] },
      ],
      Date.parse(arrival) * 1000 + 250,
    );

    expect(answer).toEqual({ accepted: 3, refused: 0, timestamp_in: arrival });
    expect(queued).toEqual([
      {
        kind: 'data',
        // where the ingest reads the workspace's data retention
        account_id: device.account_id,
        workspace_id: device.workspace_id,
        fleet_id: device.fleet_id,
        device_id: device.id,
        device_name: 'sensor',
        timestamp_in: arrival,
        origin: expect.stringMatching(/^[0-9a-f-]{36}$/),
        points: [
          { tag: 'weather', payload: { temp: 21 }, timestamp_device: '2026-01-02T03:00:00.000Z' },
          // Its arrival to the microsecond, then the next: two points the same in all else stay two.
          { tag: 'weather', payload: [1, 2], timestamp_device: '2026-01-02T03:04:05.678250Z' },
          { tag: 'weather', payload: [1, 2], timestamp_device: '2026-01-02T03:04:05.678251Z' },
        ],
      },
    ]);
  });

  it('stamps a hundred points of one request, and of requests in the same millisecond, all apart and in order', async () => {
    const { self } = await deviceOfNewAccount();
    const { deps, queued } = recordingDeps();
    const arrival = Date.parse('2026-01-02T03:04:05.678Z') * 1000;
    const hundred = Array.from({ length: 100 }, (_, i) => ({ tag: 't', payload: i }));

    // Three requests stamped in the same microsecond (one container), as a burst meets them.
    for (let request = 0; request < 3; request++) await publishData(deps, self, hundred, arrival);

    const stamps = queued.flatMap((m) => (m.kind === 'data' ? m.points.map((p) => p.timestamp_device) : []));
    expect(stamps).toHaveLength(300);
    expect(new Set(stamps).size).toBe(300);
    expect(stamps).toEqual([...stamps].sort());
    expect(stamps.every((s) => /\.\d{6}Z$/.test(s) && !s.endsWith('000Z'))).toBe(true);
    expect(new Set(queued.map((m) => m.kind === 'data' && m.origin)).size).toBe(3);
  });

  it('stamps points with the fleet the device is in now', async () => {
    const { caller, workspace_id, device, self } = await deviceOfNewAccount();
    const fleet = await createFleet(db, caller, workspace_id, { name: 'field', description: '' });
    await updateDevice(db, caller, workspace_id, device.id, { name: 'moved', fleet_id: fleet.id });
    const { deps, queued } = recordingDeps();

    await publishData(deps, self, [{ tag: 't', payload: 1 }]);

    expect(queued[0]).toMatchObject({ fleet_id: fleet.id, device_name: 'moved' });
  });

  it('answers 404 and queues nothing for a device that does not exist', async () => {
    const { self } = await deviceOfNewAccount();
    const { deps, queued } = recordingDeps();

    await expect(publishData(deps, { ...self, deviceId: 'dev-00000000000000000000' }, [{ tag: 't', payload: 1 }])).rejects.toThrow(NotFoundError);

    expect(queued).toEqual([]);
  });
});

describe('a device’s daily points (points_per_device_per_day)', () => {
  const points = (n: number, tag = 't') => Array.from({ length: n }, (_, i) => ({ tag, payload: i }));
  const at = (iso: string) => Date.parse(iso) * 1000;

  it('stores the first points up to the limit, says how many it refused, and counts them in the same message', async () => {
    const { workspace_id, self } = await deviceOfNewAccount();
    await changeWorkspaceLimits(db, workspace_id, { set: { points_per_device_per_day: 10 } });
    const { deps, queued } = recordingDeps();

    const first = await publishData(deps, self, points(6), at('2026-03-01T10:00:00Z'));
    const second = await publishData(deps, self, points(6), at('2026-03-01T11:00:00Z'));

    expect([first, second].map(({ accepted, refused }) => ({ accepted, refused }))).toEqual([
      { accepted: 6, refused: 0 },
      { accepted: 4, refused: 2 },
    ]);
    expect(queued.map((m) => (m.kind === 'data' ? [m.points.map((p) => p.payload), m.refused] : []))).toEqual([
      [[0, 1, 2, 3, 4, 5], undefined],
      [[0, 1, 2, 3], 2],
    ]);
  });

  it('answers 429 quota_exceeded with Retry-After until midnight UTC when it refuses them all, still counting them, and starts afresh the next day', async () => {
    const { workspace_id, self } = await deviceOfNewAccount();
    await changeWorkspaceLimits(db, workspace_id, { set: { points_per_device_per_day: 3 } });
    const { deps, queued } = recordingDeps();
    await publishData(deps, self, points(3), at('2026-03-02T23:00:00Z'));

    const refused = await publishData(deps, self, points(2), at('2026-03-02T23:59:30Z')).catch((e: unknown) => e);
    const nextDay = await publishData(deps, self, points(2), at('2026-03-03T00:00:01Z'));

    expect(refused).toBeInstanceOf(QuotaExceededError);
    expect((refused as QuotaExceededError).details).toEqual([
      { field: 'limits.points_per_device_per_day', message: expect.stringContaining('midnight UTC'), value: 3 },
    ]);
    expect((refused as QuotaExceededError).headers).toEqual({ 'retry-after': '30' });
    expect(queued[1]).toMatchObject({ kind: 'data', points: [], refused: 2 });
    expect(nextDay).toMatchObject({ accepted: 2, refused: 0 });
  });

  it('never lets more than the limit in across containers sending at once', async () => {
    const { workspace_id, self } = await deviceOfNewAccount();
    await changeWorkspaceLimits(db, workspace_id, { set: { points_per_device_per_day: 50 } });
    const containers = Array.from({ length: 4 }, () => recordingDeps());

    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        publishData(containers[i % 4].deps, self, points(3), at('2026-03-04T12:00:00Z')).catch(() => ({ accepted: 0, refused: 3 })),
      ),
    );

    expect(answers.reduce((sum, a) => sum + a.accepted, 0)).toBe(50);
    expect(answers.reduce((sum, a) => sum + a.refused, 0)).toBe(70);
    const stored = containers.flatMap((c) => c.queued).reduce((sum, m) => sum + (m.kind === 'data' ? m.points.length : 0), 0);
    expect(stored).toBe(50);
  });

  it('lets a device found full send again once the operator raises its limit', async () => {
    const { workspace_id, self } = await deviceOfNewAccount();
    await changeWorkspaceLimits(db, workspace_id, { set: { points_per_device_per_day: 2 } });
    const { deps } = recordingDeps();
    await publishData(deps, self, points(2), at('2026-03-05T08:00:00Z'));
    await expect(publishData(deps, self, points(1), at('2026-03-05T08:00:01Z'))).rejects.toThrow(QuotaExceededError);

    await changeWorkspaceLimits(db, workspace_id, { set: { points_per_device_per_day: 5 } });

    await expect(publishData(deps, self, points(4), at('2026-03-05T08:00:02Z'))).resolves.toMatchObject({ accepted: 3, refused: 1 });
  });
});

describe('reporting events', () => {
  it('queues the events with their arrival, each timed at arrival when the device gives no ts', async () => {
    const { device, self } = await deviceOfNewAccount();
    const { deps, queued } = recordingDeps();

    const answer = await reportEvents(deps, self, [
      { type: 'manifest', payload: { jobs: ['reboot'] }, ts: '2026-01-02T03:04:05.000Z' },
      { type: 'os_info', payload: { version: '1.2' } },
    ]);

    expect(queued).toEqual([
      {
        kind: 'events',
        workspace_id: device.workspace_id,
        fleet_id: device.fleet_id,
        device_id: device.id,
        timestamp_in: answer.timestamp_in,
        events: [
          { type: 'manifest', payload: { jobs: ['reboot'] }, ts: '2026-01-02T03:04:05.000Z' },
          { type: 'os_info', payload: { version: '1.2' }, ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/) },
        ],
      },
    ]);
    expect(answer).toEqual({ accepted: 2, refused: 0, timestamp_in: expect.any(String) });
  });
});

describe('device status', () => {
  it('lists pending jobs with their values and the pending FOTA, and records a status event', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleJob(db, caller, device.id, 'reboot', { delay: 5 });
    await scheduleJob(db, caller, device.id, 'calibrate', {});
    await scheduleJob(db, caller, device.id, 'finished', {});
    await reportJobResult(recordingDeps().deps, self, 'finished', {});
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    const { deps, forwarded } = recordingDeps();

    const status = await getDeviceStatus(deps, self);

    expect(status.jobs.map((j) => [j.name, j.value]).sort()).toEqual([
      ['calibrate', {}],
      ['reboot', { delay: 5 }],
    ]);
    expect(status.fota).toEqual({ value: { firmware_id: 'fw', firmware_version: '2.0' }, scheduled_at: expect.any(String) });
    expect(forwarded).toEqual([
      expect.objectContaining({
        type: 'status',
        direction: 'd2c',
        device_id: device.id,
        payload: { pending_jobs: status.jobs.map((j) => j.name), pending_fota: { firmware_id: 'fw', firmware_version: '2.0' } },
      }),
    ]);
  });

  it('has no FOTA once it ended, and answers even when the forward queue fails', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    await reportFotaResult(recordingDeps().deps, self, { status: 'failed' });
    const deps: DeviceApiDeps = { ...recordingDeps().deps, forward: () => Promise.reject(new Error('SQS is down')) };

    const status = await getDeviceStatus(deps, self);

    expect(status).toEqual({ jobs: [], fota: null, state: { desired: {}, version: 0 } });
  });
});

describe('job results', () => {
  it('marks the job done with its result and completion time, and the registry stream forwards a d2c job event', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleJob(db, caller, device.id, 'reboot', { delay: 5 });
    const { deps, forwarded } = recordingDeps();

    const job = await reportJobResult(deps, self, 'reboot', { ok: true });

    expect(job).toEqual({
      name: 'reboot',
      status: 'done',
      scheduled_at: expect.any(String),
      value: { delay: 5 },
      result: { ok: true },
      completed_at: expect.any(String),
    });
    expect(await getJob(db, caller, device.id, 'reboot')).toEqual(job);
    expect((await itemsOf(listJobs(db, caller, device.id, 'done'))).map((j) => j.name)).toEqual(['reboot']);
    expect(forwarded).toEqual([]); // the request only writes
    const events = await streamedFor(device.id, (e) => e.some((x) => x.direction === 'd2c'));
    expect(events.filter((e) => e.direction === 'd2c')).toEqual([
      expect.objectContaining({
        type: 'job',
        direction: 'd2c',
        device_id: device.id,
        workspace_id: device.workspace_id,
        fleet_id: device.fleet_id,
        payload: job,
      }),
    ]);
  });

  it('answers a repeated report with the done job, and changes nothing, so no second event follows', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleJob(db, caller, device.id, 'reboot', {});
    const first = await reportJobResult(recordingDeps().deps, self, 'reboot', { ok: true });
    const { deps, forwarded } = recordingDeps();

    const again = await reportJobResult(deps, self, 'reboot', { ok: true });

    expect(again).toEqual(first);
    expect(forwarded).toEqual([]);
    // A job scheduled after the retry: once its event is out, the stream has handled every earlier change of the device.
    await scheduleJob(db, caller, device.id, 'marker', {});
    const events = await streamedFor(device.id, (e) => e.some((x) => (x.payload as { name?: string }).name === 'marker'));
    expect(events.map((e) => `${(e.payload as { name: string }).name} ${e.direction}`)).toEqual(['reboot c2d', 'reboot d2c', 'marker c2d']);
  });

  it('refuses another result for a done job and keeps the first', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleJob(db, caller, device.id, 'reboot', {});
    const first = await reportJobResult(recordingDeps().deps, self, 'reboot', { ok: true });
    const { deps, forwarded } = recordingDeps();

    await expect(reportJobResult(deps, self, 'reboot', { ok: false })).rejects.toThrow(ConflictError);

    expect(await getJob(db, caller, device.id, 'reboot')).toEqual(first);
    expect(forwarded).toEqual([]);
  });

  it('answers 404 for a job the device does not have, and creates nothing', async () => {
    const { caller, device, self } = await deviceOfNewAccount();

    await expect(reportJobResult(recordingDeps().deps, self, 'ghost', {})).rejects.toThrow(NotFoundError);

    expect(await itemsOf(listJobs(db, caller, device.id))).toEqual([]);
  });

  it('shows a rescheduled job pending again, without the old result', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleJob(db, caller, device.id, 'reboot', {});
    await reportJobResult(recordingDeps().deps, self, 'reboot', { ok: true });

    const again = await scheduleJob(db, caller, device.id, 'reboot', { n: 2 });

    expect(await getJob(db, caller, device.id, 'reboot')).toEqual(again);
    expect(again).not.toHaveProperty('result');
  });
});

describe('FOTA results', () => {
  it.each(['done', 'failed'] as const)('ends the FOTA as %s and the registry stream forwards a d2c fota event', async (outcome) => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    const { deps, forwarded } = recordingDeps();

    const fota = await reportFotaResult(deps, self, { status: outcome, firmware_version: '2.0', message: 'flash ok' });

    expect(fota.status).toBe(outcome);
    expect((await getFota(db, caller, device.id)).status).toBe(outcome);
    expect(forwarded).toEqual([]); // the request only writes
    const events = await streamedFor(device.id, (e) => e.some((x) => x.direction === 'd2c'));
    expect(events.filter((e) => e.direction === 'd2c')).toEqual([
      expect.objectContaining({
        type: 'fota',
        direction: 'd2c',
        payload: { ...fota, value: { firmware_id: 'fw', firmware_version: '2.0' }, status: outcome, message: 'flash ok' },
      }),
    ]);
  });

  it('refuses a report about another firmware and leaves the FOTA pending', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });

    await expect(reportFotaResult(recordingDeps().deps, self, { status: 'done', firmware_version: '1.0' })).rejects.toThrow(ConflictError);

    expect((await getFota(db, caller, device.id)).status).toBe('pending');
  });

  it('accepts the same outcome again and refuses a different one', async () => {
    const { caller, device, self } = await deviceOfNewAccount();
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    await reportFotaResult(recordingDeps().deps, self, { status: 'done' });

    const again = await reportFotaResult(recordingDeps().deps, self, { status: 'done' });

    expect(again.status).toBe('done');
    await expect(reportFotaResult(recordingDeps().deps, self, { status: 'failed' })).rejects.toThrow(ConflictError);
    expect((await getFota(db, caller, device.id)).status).toBe('done');
  });

  it('answers 404 when no FOTA was scheduled', async () => {
    const { self } = await deviceOfNewAccount();

    await expect(reportFotaResult(recordingDeps().deps, self, { status: 'done' })).rejects.toThrow(NotFoundError);
  });
});
