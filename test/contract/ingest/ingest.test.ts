import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { devicePlaces, workspaceSettings, type DevicePlacesLookup } from '../../../lambdas/domain/registry/device-places';
import { createDevice } from '../../../lambdas/domain/registry/devices';
import { limitsMemory } from '../../../lambdas/domain/limits/limits';
import { changeWorkspaceLimits } from '../../../lambdas/domain/limits/limits-views';
import { deviceQuota, hundredthOf } from '../../../lambdas/domain/limits/device-quota';
import { getWorkspaceUsage, recordUsage } from '../../../lambdas/domain/limits/usage';
import { ingestBatch, type IngestDeps, type QueuedIngest } from '../../../lambdas/domain/data/ingest';
import { shutDown } from '../../../lambdas/shared/shutdown';
import { CloudStamper } from '../../../lambdas/shared/timestamps';
import type { IngestDataMessage, IngestEventsMessage, IngestMessage } from '../../../lambdas/schemas/device-api';
import type { DataMessage, EventMessage, ForwardMessage } from '../../../lambdas/schemas/forward';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { toQueueBody } from '../../../lambdas/shared/json';
import { sendMessages } from '../../../lambdas/stores/queue-store';
import type { DataPoint, PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { ensureTable } from '../../../local/dynamodb-local';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { waitFor } from '../../../local/ports';
import { startSqsPoller } from '../../../local/sqs-poller';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { depthOf, freshQueue, receiveAll, sendRaw, type TestQueue } from '../../helpers/sqs';

const WORKSPACE = 'wks-ingest0000000000000';
const FLEET = 'flt-ingest0000000000000';
const ACCOUNT = 'acc-ingest0000000000000';

let store: TimeseriesStore;
beforeAll(async () => {
  const client = new DynamoDBClient({});
  const table = `ts-${randomUUID()}`;
  await ensureTable(client, table);
  store = dynamoDbTimeseriesStore({ doc: documentClient(client), table }, { writeConcurrency: 2 });
});

/** A device of its own per test, so that tests share the table but not their points. */
const newDevice = () => `dev-${randomUUID().replaceAll('-', '').slice(0, 20)}`;

/** Where MQTT devices are: every device of these tests is in WORKSPACE, but `dev-unknown…`. */
const knownDevices: DevicePlacesLookup = async (ids) =>
  new Map(
    [...ids].map((id) => [
      id,
      id.startsWith('dev-unknown') ? undefined : { workspace_id: WORKSPACE, fleet_id: FLEET, device_id: id, device_name: `name-${id}`, account_id: ACCOUNT },
    ]),
  );

/** A data publish as the MQTT door's data rule puts it on the ingest queue. */
const published = (deviceId: string, tag: string, payload: unknown, receivedAt: number) =>
  JSON.stringify({
    topic: `j/data/${deviceId}/${tag}`,
    payload: Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)).toString('base64'),
    received_at: receivedAt,
  });
const RECEIVED = Date.parse('2026-03-01T00:00:00.000Z');

const dataOf = (
  deviceId: string,
  points: Array<{ tag: string; at: string; payload: unknown }>,
  timestamp_in = '2026-03-01T00:00:00.000Z',
): IngestDataMessage => ({
  kind: 'data',
  account_id: ACCOUNT,
  workspace_id: WORKSPACE,
  fleet_id: FLEET,
  device_id: deviceId,
  device_name: 'sensor',
  timestamp_in,
  points: points.map(({ tag, at, payload }) => ({ tag, timestamp_device: at, payload })),
});

const queued = (...messages: Array<IngestMessage | string>): QueuedIngest[] =>
  messages.map((m) => ({ messageId: randomUUID(), body: typeof m === 'string' ? m : toQueueBody(m) }));

const storedOf = async (deviceId: string) => {
  const points: DataPoint[] = [];
  for await (const point of store.query({ workspaceId: WORKSPACE, devices: [deviceId], from: 0, size: 10_000, order: 'asc' })) points.push(point);
  return points;
};

/** A forward queue of the test's own, and deps that forward to it. */
const withForwardQueue = async (overrides: Partial<IngestDeps> = {}) => {
  const queue = await freshQueue();
  const deps: IngestDeps = {
    store,
    forward: (messages) => sendMessages(queue.url, messages),
    concurrency: 4,
    places: knownDevices,
    settings: async () => undefined,
    stamper: new CloudStamper(),
    // Quotas and usage have tests of their own (below, on a registry table): here every point is in.
    points: async (_deviceId, n) => ({ accepted: n, refused: 0, workspace_id: WORKSPACE }),
    recordUsage: async () => [],
    // Sessions closed by a revocation have a test of their own (below, on a registry table): here none is.
    closedSessions: async () => new Map(),
    ...overrides,
  };
  const forwarded = async () => (await receiveAll(queue.url)).map((m) => JSON.parse(m.Body!) as ForwardMessage);
  return { queue, deps, forwarded };
};

const at = (second: number) => `2026-03-01T00:00:${String(second).padStart(2, '0')}.000Z`;

describe('ingest', () => {
  it('stores each point once, first write winning, and forwards every point with its data event', async () => {
    const device = newDevice();
    const { deps, forwarded } = await withForwardQueue();
    const batch = queued(
      dataOf(device, [
        { tag: 'temp', at: at(2), payload: { v: 1 } },
        { tag: 'temp', at: at(1), payload: { v: 0 } },
        { tag: 'temp', at: at(2), payload: { v: 'dup in message' } },
      ]),
      // A later request, queued in the same batch.
      dataOf(
        device,
        [
          { tag: 'temp', at: at(1), payload: { v: 'dup across messages' } },
          { tag: 'hum', at: at(1), payload: 40 },
        ],
        '2026-03-01T00:00:00.250Z',
      ),
    );

    const failed = await ingestBatch(deps, batch);

    expect(failed).toEqual([]);
    expect((await storedOf(device)).map((p) => [p.timestamp_device, p.tag, p.payload])).toEqual([
      [at(1), 'hum', 40],
      [at(1), 'temp', { v: 0 }],
      [at(2), 'temp', { v: 1 }],
    ]);
    const messages = await forwarded();
    const data = messages.filter((m): m is DataMessage => m.kind === 'data');
    const events = messages.filter((m): m is EventMessage => m.kind === 'event');
    expect(data).toHaveLength(5);
    expect(data).toContainEqual({
      kind: 'data',
      workspace_id: WORKSPACE,
      fleet_id: FLEET,
      device_id: device,
      device_name: 'sensor',
      timestamp_device: at(1),
      timestamp_in: '2026-03-01T00:00:00.250Z',
      tag: 'hum',
      payload: 40,
    });
    expect(events.map((e) => [e.type, e.direction, e.payload])).toContainEqual(['data', 'd2c', { tag: 'hum', size: 2 }]);
    expect(events).toHaveLength(5);
  });

  it('forwards device events as d2c events at their own time', async () => {
    const device = newDevice();
    const { deps, forwarded } = await withForwardQueue();
    const events: IngestEventsMessage = {
      kind: 'events',
      workspace_id: WORKSPACE,
      fleet_id: FLEET,
      device_id: device,
      events: [
        { type: 'manifest', ts: '2026-03-01T00:00:00.000001Z', payload: { jobs: ['reboot'] } },
        { type: 'os_info', ts: '2026-03-01T00:00:01.000Z', payload: { version: '1.2' } },
      ],
    };

    const failed = await ingestBatch(deps, queued(events));

    expect(failed).toEqual([]);
    expect((await forwarded()).sort((a, b) => (a as EventMessage).ts.localeCompare((b as EventMessage).ts))).toEqual([
      {
        kind: 'event',
        ts: '2026-03-01T00:00:00.000001Z',
        workspace_id: WORKSPACE,
        fleet_id: FLEET,
        device_id: device,
        type: 'manifest',
        direction: 'd2c',
        payload: { jobs: ['reboot'] },
      },
      {
        kind: 'event',
        ts: '2026-03-01T00:00:01.000Z',
        workspace_id: WORKSPACE,
        fleet_id: FLEET,
        device_id: device,
        type: 'os_info',
        direction: 'd2c',
        payload: { version: '1.2' },
      },
    ]);
    expect(await storedOf(device)).toEqual([]);
  });

  it('writes every point with its workspace’s retention, whether its message names the account, predates that, or is an MQTT publish', async () => {
    const [https, older, mqtt] = [newDevice(), newDevice(), newDevice()];
    const written: PointToStore[] = [];
    const asked: string[] = [];
    const { deps } = await withForwardQueue({
      store: { ...store, write: async (points) => (written.push(...points), store.write(points)) },
      settings: async (accountId, workspaceId) => (asked.push(`${accountId}/${workspaceId}`), { data_retention_days: 30, places_version: 0 }),
    });

    const failed = await ingestBatch(deps, [
      ...queued(dataOf(https, [{ tag: 't', at: at(1), payload: 1 }]), { ...dataOf(older, [{ tag: 't', at: at(2), payload: 2 }]), account_id: undefined }),
      { messageId: randomUUID(), body: published(mqtt, 't', 3, RECEIVED) },
    ]);

    expect(failed).toEqual([]);
    expect(written.map((p) => [p.device_id, p.retention_days])).toEqual(
      expect.arrayContaining([
        [https, 30],
        [older, 30],
        [mqtt, 30],
      ]),
    );
    expect(written).toHaveLength(3);
    expect(new Set(asked)).toEqual(new Set([`${ACCOUNT}/${WORKSPACE}`]));
    // What webhooks receive carries no retention.
    expect(await storedOf(https)).toEqual([expect.not.objectContaining({ retention_days: expect.anything() })]);
  });

  it('retries the messages whose workspace’s retention cannot be read, and stores nothing of them', async () => {
    const device = newDevice();
    const { deps } = await withForwardQueue({ settings: async () => Promise.reject(new Error('ProvisionedThroughputExceededException')) });
    const batch = queued(dataOf(device, [{ tag: 't', at: at(1), payload: 1 }]));

    const failed = await ingestBatch(deps, batch);

    expect(failed).toEqual([batch[0].messageId]);
    expect(await storedOf(device)).toEqual([]);
  });

  it('reports unreadable messages for retry (and so the DLQ) and handles the others', async () => {
    const device = newDevice();
    const { deps, forwarded } = await withForwardQueue();
    const batch = queued('{"kind":', JSON.stringify({ kind: 'data', points: [] }), dataOf(device, [{ tag: 't', at: at(1), payload: 1 }]));

    const failed = await ingestBatch(deps, batch);

    expect(failed.sort()).toEqual([batch[0].messageId, batch[1].messageId].sort());
    expect(await storedOf(device)).toHaveLength(1);
    expect(await forwarded()).toHaveLength(2);
  });

  it('fails only the message whose points the store refuses, and stores and forwards the others', async () => {
    const [good, bad] = [newDevice(), newDevice()];
    const { deps, forwarded } = await withForwardQueue();
    const batch = queued(
      dataOf(good, [{ tag: 'ok', at: at(1), payload: 1 }]),
      dataOf(bad, [{ tag: 'not a tag', at: at(1), payload: 1 }]),
      dataOf(good, [{ tag: 'ok', at: at(2), payload: 2 }]),
    );

    const failed = await ingestBatch(deps, batch);

    expect(failed).toEqual([batch[1].messageId]);
    expect((await storedOf(good)).map((p) => p.payload)).toEqual([1, 2]);
    expect(await storedOf(bad)).toEqual([]);
    expect((await forwarded()).map((m) => m.device_id)).not.toContain(bad);
  });

  it('fails only the message whose forward fails, and forwards it on the retry although its points are stored', async () => {
    const [flaky, steady] = [newDevice(), newDevice()];
    const { deps, forwarded } = await withForwardQueue();
    let refuse = true;
    const failing: IngestDeps = {
      ...deps,
      forward: async (messages) => {
        if (refuse && messages.some((m) => m.device_id === flaky)) throw new Error('SQS refused');
        await deps.forward(messages);
      },
    };
    const batch = queued(dataOf(flaky, [{ tag: 't', at: at(1), payload: 1 }]), dataOf(steady, [{ tag: 't', at: at(1), payload: 2 }]));

    const failed = await ingestBatch(failing, batch);
    const firstForwards = await forwarded();
    refuse = false;
    const retried = await ingestBatch(
      failing,
      batch.filter((m) => failed.includes(m.messageId)),
    );

    expect(failed).toEqual([batch[0].messageId]);
    expect(firstForwards.map((m) => m.device_id)).toEqual([steady, steady]);
    expect(retried).toEqual([]);
    expect((await forwarded()).map((m) => m.device_id)).toEqual([flaky, flaky]);
    expect(await storedOf(flaky)).toHaveLength(1);
  });

  it('loses nothing and duplicates nothing in the store when a batch crashes midway, through the event source', async () => {
    const device = newDevice();
    const { deps, forwarded } = await withForwardQueue();
    const ingestQueue: TestQueue = await freshQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 5 });
    // The first invocation stores half of its points, then dies as a Lambda would (timeout, OOM).
    let crashes = 1;
    const crashingStore: TimeseriesStore = {
      query: (q) => store.query(q),
      readRange: (r) => store.readRange(r),
      write: async (points) => {
        if (crashes-- <= 0) return store.write(points);
        await store.write(points.slice(0, Math.ceil(points.length / 2)));
        throw new Error('Runtime exited');
      },
    };
    const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
      const failedIds = await ingestBatch(
        { ...deps, store: crashingStore },
        event.Records.map(({ messageId, body }) => ({ messageId, body })),
      );
      return { batchItemFailures: failedIds.map((itemIdentifier) => ({ itemIdentifier })) };
    };
    const messages = Array.from({ length: 20 }, (_, i) =>
      toQueueBody(
        dataOf(
          device,
          [0, 1, 2, 3, 4].map((j) => ({ tag: `t${j}`, at: at(i), payload: { i, j } })),
        ),
      ),
    );
    await sendRaw(ingestQueue.url, messages);

    const poller = startSqsPoller({
      queueUrl: ingestQueue.url,
      queueArn: ingestQueue.arn,
      batchSize: 100,
      maxBatchingWindowMs: 200,
      timeoutMs: 10_000,
      functionName: 'ingest',
      handler,
      onError: () => undefined,
    });
    try {
      await waitFor(
        async () => {
          const depth = await depthOf(ingestQueue.url);
          if (depth.visible + depth.inFlight > 0) throw new Error(`ingest queue holds ${JSON.stringify(depth)}`);
        },
        'the ingest queue to drain',
        30_000,
      );
    } finally {
      await poller.stop();
    }

    const stored = await storedOf(device);
    expect(stored).toHaveLength(100);
    expect(new Set(stored.map((p) => `${p.timestamp_device} ${p.tag}`)).size).toBe(100);
    const forwards = await forwarded();
    const forwardedPoints = new Set(forwards.filter((m): m is DataMessage => m.kind === 'data').map((m) => `${m.timestamp_device} ${m.tag}`));
    expect(forwardedPoints.size).toBe(100);
    expect((await depthOf(ingestQueue.dlqUrl)).visible).toBe(0);
    expect(crashes).toBeLessThan(0);
  });

  describe('MQTT data publishes', () => {
    it('stores a burst of publishes of one millisecond whole, each with its own stamp, in the order they came', async () => {
      const device = newDevice();
      const { deps, forwarded } = await withForwardQueue();
      const burst = queued(...Array.from({ length: 300 }, (_, i) => published(device, 'temp', { n: i }, RECEIVED + Math.floor(i / 100))));

      const failed = await ingestBatch(deps, burst);

      const stored = await storedOf(device);
      expect(failed).toEqual([]);
      expect(stored.map((p) => (p.payload as { n: number }).n)).toEqual(Array.from({ length: 300 }, (_, i) => i));
      expect(new Set(stored.map((p) => p.timestamp_device)).size).toBe(300);
      expect(stored.every((p) => /\.\d{6}Z$/.test(p.timestamp_device))).toBe(true);
      expect(stored[0]).toMatchObject({ timestamp_device: '2026-03-01T00:00:00.000001Z', timestamp_in: '2026-03-01T00:00:00.000Z', fleet_id: FLEET });
      const data = (await forwarded()).filter((m): m is DataMessage => m.kind === 'data');
      expect(data).toHaveLength(300);
      expect(data[0]).toMatchObject({ device_name: `name-${device}`, timestamp_device: stored[0].timestamp_device });
    });

    it('drops publishes that can never be stored, and those of unknown devices, without retrying them', async () => {
      const device = newDevice();
      const { deps } = await withForwardQueue();
      const batch = queued(
        published(device, 'temp', { v: 1 }, RECEIVED),
        published(device, 'temp', 'not json {', RECEIVED),
        published(device, 'bad tag', { v: 2 }, RECEIVED),
        published(device, 'big', { blob: 'x'.repeat(2000) }, RECEIVED),
        published(`dev-unknown${device.slice(11)}`, 'temp', { v: 3 }, RECEIVED),
        JSON.stringify({ topic: `j/data/${device}/a/b`, payload: 'e30=', received_at: RECEIVED }),
      );

      const failed = await ingestBatch(deps, batch);

      expect(failed).toEqual([]);
      expect((await storedOf(device)).map((p) => p.payload)).toEqual([{ v: 1 }]);
    });

    it('retries the publishes of a batch whose devices could not be looked up, and handles the rest', async () => {
      const device = newDevice();
      const { deps } = await withForwardQueue({ places: () => Promise.reject(new Error('DynamoDB is down')) });
      const batch = queued(published(device, 't', 1, RECEIVED), dataOf(device, [{ tag: 'h', at: at(1), payload: 2 }]));

      const failed = await ingestBatch(deps, batch);

      expect(failed).toEqual([batch[0].messageId]);
      expect((await storedOf(device)).map((p) => p.payload)).toEqual([2]);
    });

    it('stores each publish once when a batch crashes midway and another container stamps it again', async () => {
      const device = newDevice();
      const { deps } = await withForwardQueue();
      const ingestQueue: TestQueue = await freshQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 5 });
      // The first container stores half of its points, then dies as a Lambda would (timeout, OOM):
      // its whole batch comes back, to a container of its own (its own stamper).
      let containers = 0;
      const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
        const first = containers++ === 0;
        let writes = 0;
        const dying: TimeseriesStore = {
          query: (q) => store.query(q),
          readRange: (r) => store.readRange(r),
          write: async (points) => {
            if (writes++ > 0) throw new Error('Runtime exited');
            return store.write(points.slice(0, Math.ceil(points.length / 2)));
          },
        };
        const container = { ...deps, store: first ? dying : store, stamper: new CloudStamper() };
        const failedIds = await ingestBatch(
          container,
          event.Records.map(({ messageId, body }) => ({ messageId, body })),
        );
        if (first) throw new Error('Runtime exited');
        return { batchItemFailures: failedIds.map((itemIdentifier) => ({ itemIdentifier })) };
      };
      await sendRaw(
        ingestQueue.url,
        Array.from({ length: 60 }, (_, i) => published(device, `t${i % 3}`, { i }, RECEIVED + Math.floor(i / 30))),
      );

      const poller = startSqsPoller({
        queueUrl: ingestQueue.url,
        queueArn: ingestQueue.arn,
        batchSize: 100,
        maxBatchingWindowMs: 200,
        timeoutMs: 10_000,
        functionName: 'ingest',
        handler,
        onError: () => undefined,
      });
      try {
        await waitFor(
          async () => {
            const depth = await depthOf(ingestQueue.url);
            if (depth.visible + depth.inFlight > 0) throw new Error(`ingest queue holds ${JSON.stringify(depth)}`);
          },
          'the ingest queue to drain',
          30_000,
        );
      } finally {
        await poller.stop();
      }

      const stored = await storedOf(device);
      expect(containers).toBeGreaterThan(1);
      expect(stored).toHaveLength(60);
      expect(stored.map((p) => (p.payload as { i: number }).i).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    });
  });
});

describe('ingest: devices’ daily points and the workspaces’ usage, on a registry table', () => {
  let registry: Db;
  beforeAll(async () => {
    registry = await freshTable();
  });

  /** The ingest handler's deps on the registry, as deployed: real claims, real usage writes. */
  const deployed = async (now = () => Date.now()) => {
    const { deps, forwarded } = await withForwardQueue({
      places: devicePlaces(registry, { settings: workspaceSettings(registry, { ttlMs: 60_000, max: 100 }), ttlMs: 60_000, max: 100 }),
      points: deviceQuota(registry, 'points', { limits: limitsMemory(registry, { ttlMs: 0 }), slice: hundredthOf, max: 100, now }),
      recordUsage: (tally) => recordUsage(registry, tally),
    });
    return { deps, forwarded };
  };

  const newWorkspace = async (pointsPerDay: number) => {
    const account = await newAccount(registry);
    await changeWorkspaceLimits(registry, account.workspace_id, { set: { points_per_device_per_day: pointsPerDay } });
    const device = await createDevice(registry, account.caller, account.workspace_id, { name: 'meter', phys_id: '' });
    return { ...account, device };
  };

  const usageOn = async (account: Awaited<ReturnType<typeof newWorkspace>>, day: string) =>
    (await getWorkspaceUsage(registry, account.caller, account.workspace_id, { start: day, end: day })).totals;

  it('stores a device’s publishes up to its daily limit, refuses the rest of the day without storing or forwarding them, and counts them all', async () => {
    const account = await newWorkspace(5);
    const { deps, forwarded } = await deployed();
    const now = Date.now();
    const first = queued(...Array.from({ length: 3 }, (_, i) => published(account.device.id, 't', { i }, now)));
    const second = queued(...Array.from({ length: 4 }, (_, i) => published(account.device.id, 't', { i: 3 + i }, now)));

    expect(await ingestBatch(deps, first)).toEqual([]);
    expect(await ingestBatch(deps, second)).toEqual([]);

    const stored: DataPoint[] = [];
    const store = deps.store;
    for await (const point of store.query({ workspaceId: account.workspace_id, devices: [account.device.id], from: 0, size: 100, order: 'asc' }))
      stored.push(point);
    expect(stored.map((p) => (p.payload as { i: number }).i).sort()).toEqual([0, 1, 2, 3, 4]);
    expect((await forwarded()).filter((m) => m.kind === 'data')).toHaveLength(5);
    expect(await usageOn(account, new Date(now).toISOString().slice(0, 10))).toMatchObject({ points_in: 7, points_stored: 5, points_refused: 2 });
  });

  it('counts an HTTPS message’s stored and refused points in its arrival day', async () => {
    const account = await newWorkspace(100);
    const { deps } = await deployed();
    const message = {
      ...dataOf(
        account.device.id,
        [
          { tag: 't', at: at(1), payload: 1 },
          { tag: 't', at: at(2), payload: 2 },
        ],
        '2026-03-07T23:59:59.999Z',
      ),
      workspace_id: account.workspace_id,
      refused: 3,
    };
    const refusedOnly = { ...message, points: [], refused: 4, timestamp_in: '2026-03-08T00:00:00.000Z' };

    expect(await ingestBatch(deps, queued(message, refusedOnly))).toEqual([]);

    expect(await usageOn(account, '2026-03-07')).toMatchObject({ points_in: 5, points_stored: 2, points_refused: 3 });
    expect(await usageOn(account, '2026-03-08')).toMatchObject({ points_in: 4, points_stored: 0, points_refused: 4 });
  });

  it('retries a batch whose usage could not be written, and counts it once when it is', async () => {
    const account = await newWorkspace(100);
    const { deps } = await deployed();
    const batch = queued({
      ...dataOf(account.device.id, [{ tag: 't', at: at(3), payload: 1 }], '2026-03-09T12:00:00.000Z'),
      workspace_id: account.workspace_id,
    });

    // Every day's write failed, after its retries.
    const failed = await ingestBatch({ ...deps, recordUsage: async (tally) => tally.entries() }, batch);
    const retried = await ingestBatch(deps, batch);

    expect(failed).toEqual([batch[0].messageId]);
    expect(retried).toEqual([]);
    expect(await usageOn(account, '2026-03-09')).toMatchObject({ points_in: 1, points_stored: 1, points_refused: 0 });
  });

  it('claims a device’s points in slices: one write for many batches, never more than the limit across containers', async () => {
    const account = await newWorkspace(1000);
    const containers = await Promise.all([deployed(), deployed()]);
    const now = Date.now();
    let sent = 0;
    const batches = Array.from({ length: 30 }, () => queued(...Array.from({ length: 40 }, () => published(account.device.id, 't', { i: sent++ }, now))));

    for (const [i, batch] of batches.entries()) expect(await ingestBatch(containers[i % 2].deps, batch)).toEqual([]);

    const totals = await usageOn(account, new Date(now).toISOString().slice(0, 10));
    expect(totals).toMatchObject({ points_in: 1200, points_refused: 1200 - totals.points_stored });
    // Each container claims 10 points at a time (a hundredth of 1,000; its first claim asks a hundredth of
    // the default and gives the rest back): what one held unused is the most refused early.
    expect(totals.points_stored).toBeLessThanOrEqual(1000);
    expect(totals.points_stored).toBeGreaterThanOrEqual(1000 - 10);
  });

  it('gives back the points a container claimed and did not use when it ends, so that another stores up to the limit', async () => {
    const account = await newWorkspace(1000);
    const [ending, next] = await Promise.all([deployed(), deployed()]);
    const now = Date.now();
    let sent = 0;
    const publishes = (n: number) => queued(...Array.from({ length: n }, () => published(account.device.id, 't', { i: sent++ }, now)));

    // The first container claims a slice of 10 and uses 3; its end gives the 7 back.
    expect(await ingestBatch(ending.deps, publishes(3))).toEqual([]);
    await shutDown();
    expect(await ingestBatch(next.deps, publishes(1000))).toEqual([]);

    expect(await usageOn(account, new Date(now).toISOString().slice(0, 10))).toMatchObject({ points_in: 1003, points_stored: 1000, points_refused: 3 });
  });
});
