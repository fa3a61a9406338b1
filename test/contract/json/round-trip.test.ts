/**
 * Issue 8: every JSON value the API accepts travels every queue and store and comes back exactly,
 * and what it refuses is a 400 naming the limit that changes nothing. The real handlers, on
 * DynamoDB Local and fauxqs (which, like SQS, refuses U+FFFE and U+FFFF in a message body, and
 * unlike SQS everything above U+FFFF).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import type { DataPoint, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { installAwsLambdaGlobal } from '../../../local/lambda-streaming';
import { invokeApi, lambdaContext, proxyEvent } from '../../helpers/proxy-event';
import { forwardEntries, freshQueue, receiveAll, type TestQueue } from '../../helpers/sqs';
import { until } from '../../../local/ports';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type Json = Record<string, unknown>;

/** `levels` objects and arrays within each other, alternating, around `leaf` (an object: one more level). */
const nested = (levels: number, leaf: Json): unknown => (levels === 0 ? leaf : levels % 2 ? [nested(levels - 1, leaf)] : { a: nested(levels - 1, leaf) });

// What used to answer 500: characters above U+FFFF, the non-characters U+FFFE/U+FFFF, an empty
// key, doubles DynamoDB numbers cannot hold.
const LEAF: Json = { '': 'empty key', emoji: 'emoji 😀', nonCharacters: '\uFFFE\uFFFF', big: 1e300, tiny: 1e-200, max: 9007199254740991 };
/** A free-form value exactly at the depth limit (32). */
const DEEP_32 = nested(31, LEAF);
/** A job value or result at the limit: an object holding 31 more levels. */
const DEEP_VALUE: Json = { ...LEAF, deep: nested(30, LEAF) };
const EMOJI_NAME = 'emoji 😀 \uFFFF';

let ingestQueue: TestQueue;
let forwardQueue: TestQueue;
let handlers: { devices: Handler; jobs: Handler; fota: Handler; device: Handler };
let store: TimeseriesStore;
let ingest: (bodies: string[]) => Promise<string[]>;
let db: { doc: import('@aws-sdk/lib-dynamodb').DynamoDBDocumentClient; table: string };
let owner: { accountId: string; workspaceId: string; keyId: string };
let streamPoller: { stop: () => Promise<void> };

beforeAll(async () => {
  // The handlers read their queues and table from the environment when they load, as in Lambda.
  [ingestQueue, forwardQueue] = await Promise.all([freshQueue(), freshQueue()]);
  process.env.INGEST_QUEUE_URL = ingestQueue.url;
  process.env.FORWARD_QUEUE_URL = forwardQueue.url;
  // one at a time: jest's ESM loader cannot link modules imported concurrently
  const { REGISTRY_TABLE } = await import('../../../lambdas/shared/env');
  const { freshTable } = await import('../../helpers/db');
  const { newAccount } = await import('../../helpers/callers');
  const { ensureTable } = await import('../../../local/dynamodb-local');
  const { documentClient } = await import('../../../lambdas/shared/clients');
  const { dynamoDbTimeseriesStore } = await import('../../../lambdas/stores/timeseries/dynamodb');
  const { ingestBatch } = await import('../../../lambdas/domain/data/ingest');
  const { publishForward } = await import('../../../lambdas/domain/webhooks/events');
  const { devicePlaces, workspaceSettings } = await import('../../../lambdas/domain/registry/device-places');
  const { limitsMemory } = await import('../../../lambdas/domain/limits/limits');
  const { deviceQuota, hundredthOf } = await import('../../../lambdas/domain/limits/device-quota');
  const { recordUsage } = await import('../../../lambdas/domain/limits/usage');
  const { readClosedSessions } = await import('../../../lambdas/stores/device-session-store');
  const { CloudStamper } = await import('../../../lambdas/shared/timestamps');
  // The devices and jobs handlers stream (they serve lists): they call awslambda.streamifyResponse as they load.
  installAwsLambdaGlobal();
  handlers = {
    devices: (await import('../../../lambdas/handlers/devices/handler')).handler as unknown as Handler,
    jobs: (await import('../../../lambdas/handlers/jobs/handler')).handler as unknown as Handler,
    fota: (await import('../../../lambdas/handlers/fota/handler')).handler as unknown as Handler,
    device: (await import('../../../lambdas/handlers/device-api/handler')).handler as unknown as Handler,
  };
  db = await freshTable(REGISTRY_TABLE, { stream: true });
  // Job and FOTA events follow their writes through the table's stream, into the real consumer.
  const { startDynamoDbStreamPoller, streamFilterOf } = await import('../../../local/dynamodb-stream-poller');
  const { REGISTRY_STREAM } = await import('../../../lambdas/streams');
  const { handler: streamHandler } = await import('../../../lambdas/handlers/registry-stream/handler');
  streamPoller = await startDynamoDbStreamPoller({
    tableName: REGISTRY_TABLE,
    batchSize: REGISTRY_STREAM.batchSize,
    maxBatchingWindowMs: 50,
    retryAttempts: 0,
    bisectBatchOnError: false,
    timeoutMs: 10_000,
    functionName: REGISTRY_STREAM.consumer,
    handler: streamHandler,
    filter: streamFilterOf(REGISTRY_STREAM),
    startingPosition: 'TRIM_HORIZON',
  });
  const account = await newAccount(db);
  owner = account.caller;
  const client = new DynamoDBClient({});
  const table = `ts-${randomUUID()}`;
  await ensureTable(client, table);
  store = dynamoDbTimeseriesStore({ doc: documentClient(client), table }, { writeConcurrency: 2 });
  // The ingest Lambda's work, on the messages as fauxqs delivered them.
  ingest = (bodies) =>
    ingestBatch(
      {
        store,
        forward: publishForward,
        concurrency: 2,
        places: devicePlaces(db, { settings: workspaceSettings(db, { ttlMs: 0, max: 10 }), ttlMs: 0, max: 10 }),
        settings: workspaceSettings(db, { ttlMs: 0, max: 10 }),
        stamper: new CloudStamper(),
        points: deviceQuota(db, 'points', { limits: limitsMemory(db, { ttlMs: 0 }), slice: hundredthOf, max: 10 }),
        recordUsage: (tally) => recordUsage(db, tally),
        closedSessions: (deviceIds) => readClosedSessions(db, deviceIds),
      },
      bodies.map((body) => ({ messageId: randomUUID(), body })),
    );
});

afterAll(() => streamPoller?.stop());

/** Calls a handler as API Gateway would: the raw body text, the authorizer's context. */
const call = async (handler: Handler, method: string, path: string, body: string | undefined, authorizer: object) => {
  const result = await invokeApi(handler, proxyEvent(method, path, body ?? null, authorizer), lambdaContext);
  return { status: result.statusCode, body: JSON.parse(result.body) };
};

const newDevice = async (name = 'sensor') => {
  const created = await call(handlers.devices, 'POST', `/workspaces/${owner.workspaceId}/devices`, JSON.stringify({ name }), owner);
  expect(created.status).toBe(200);
  const device = created.body.device as { id: string; name: string; fleet_id: string };
  const self = { accountId: owner.accountId, workspaceId: owner.workspaceId, deviceId: device.id, identityId: 'idn-00000000000000000000' };
  return { device, self };
};

/** Takes every message off a queue: their bodies, as SQS delivered them. */
const drain = async (queue: TestQueue) => (await receiveAll(queue.url)).map((m) => m.Body!);
const forwarded = async () => forwardEntries(await drain(forwardQueue)) as Json[];

/**
 * The job and FOTA events of a device, once the stream has handled a marker job scheduled now:
 * records of one device's items come in order, so every earlier change has been handled then.
 */
const streamedEvents = async (deviceId: string) => {
  const marker = await call(handlers.jobs, 'POST', `/devices/${deviceId}/jobs/marker`, JSON.stringify({ value: {} }), owner);
  expect(marker.status).toBe(200);
  const events: Json[] = [];
  const isMarker = (m: Json) => (m.payload as { name?: string }).name === 'marker';
  await until(async () => {
    events.push(...(await forwarded()).filter((m) => m.device_id === deviceId));
    return events.some(isMarker);
  }, 'the marker job’s event');
  return events.filter((m) => !isMarker(m));
};

const stored = async (deviceId: string) => {
  const points: DataPoint[] = [];
  for await (const p of store.query({ workspaceId: owner.workspaceId, devices: [deviceId], from: 0, size: 100, order: 'asc' })) points.push(p);
  return points;
};

const at = (second: number) => `2026-03-01T00:00:${String(second).padStart(2, '0')}.000Z`;

beforeEach(async () => {
  // Each test sees only its own messages.
  await Promise.all([drain(ingestQueue), drain(forwardQueue)]);
});

describe('what the API accepts comes back unchanged', () => {
  it('a device named with an emoji and U+FFFF publishes; its points are stored and forwarded exactly', async () => {
    const { device, self } = await newDevice(EMOJI_NAME);
    const points = [
      { tag: 'deep', payload: DEEP_32, timestamp_device: at(1) },
      { tag: 'flat', payload: LEAF, timestamp_device: at(2) },
      { tag: 'text', payload: '😀\uFFFE', timestamp_device: at(3) },
    ];

    const published = await call(handlers.device, 'POST', '/device/data', JSON.stringify(points), self);
    const bodies = await drain(ingestQueue);
    const failed = await ingest(bodies);

    expect(device.name).toBe(EMOJI_NAME);
    expect(published.status).toBe(202);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatch(/^[\x20-\x7f]*$/); // the one encoding of every body: pure ASCII
    expect(failed).toEqual([]);
    expect((await stored(device.id)).map((p) => [p.tag, p.timestamp_device, p.payload])).toEqual(points.map((p) => [p.tag, p.timestamp_device, p.payload]));
    const data = (await forwarded()).filter((m) => m.kind === 'data');
    expect(data.map((m) => [m.device_name, m.tag, m.payload])).toEqual(points.map((p) => [EMOJI_NAME, p.tag, p.payload]));
  });

  it('device events carry such payloads to the forward queue', async () => {
    const { self } = await newDevice();
    const events = [{ type: 'os_info', payload: DEEP_32, ts: at(4) }];

    const reported = await call(handlers.device, 'POST', '/device/events', JSON.stringify(events), self);
    const failed = await ingest(await drain(ingestQueue));

    expect(reported.status).toBe(202);
    expect(failed).toEqual([]);
    expect((await forwarded()).filter((m) => m.type === 'os_info').map((m) => m.payload)).toEqual([DEEP_32]);
  });

  it('a job value and result round-trip through the store, the device status and the events; a retried result succeeds', async () => {
    const { device, self } = await newDevice(EMOJI_NAME);
    const result = { ...DEEP_VALUE, outcome: 'done ✅' };

    const scheduled = await call(handlers.jobs, 'POST', `/devices/${device.id}/jobs/update`, JSON.stringify({ value: DEEP_VALUE }), owner);
    const status = await call(handlers.device, 'GET', '/device/status', undefined, self);
    const answered = await call(handlers.device, 'POST', '/device/jobs/update/result', JSON.stringify({ result }), self);
    const retried = await call(handlers.device, 'POST', '/device/jobs/update/result', JSON.stringify({ result }), self);
    const read = await call(handlers.jobs, 'GET', `/devices/${device.id}/jobs/update`, undefined, owner);
    const listed = await call(handlers.jobs, 'GET', `/devices/${device.id}/jobs`, undefined, owner);

    expect([scheduled.status, status.status, answered.status, retried.status, read.status]).toEqual([200, 200, 200, 200, 200]);
    expect(scheduled.body.job.value).toEqual(DEEP_VALUE);
    expect(status.body.jobs).toEqual([{ name: 'update', value: DEEP_VALUE, scheduled_at: scheduled.body.job.scheduled_at }]);
    expect(answered.body.job).toEqual({ ...scheduled.body.job, status: 'done', result, completed_at: expect.any(String) });
    expect(retried.body.job).toEqual(answered.body.job);
    expect(read.body.job).toEqual(answered.body.job);
    expect(listed.body.jobs).toEqual([answered.body.job]);
    // The retried result changes nothing, so the stream sends its event once.
    const jobEvents = (await streamedEvents(device.id)).filter((m) => m.type === 'job');
    expect(jobEvents.map((m) => [m.direction, m.payload])).toEqual([
      ['c2d', scheduled.body.job],
      ['d2c', answered.body.job],
    ]);
  });

  it('a FOTA message with an emoji and U+FFFF reaches the fota event; a retried outcome succeeds', async () => {
    const { device, self } = await newDevice();
    const message = 'flash 😀 failed \uFFFE\uFFFF';

    const scheduled = await call(handlers.fota, 'POST', `/devices/${device.id}/fota/fw-main/versions/1.2.3`, undefined, owner);
    const outcome = JSON.stringify({ status: 'failed', firmware_version: '1.2.3', message });
    const reported = await call(handlers.device, 'POST', '/device/fota/result', outcome, self);
    const retried = await call(handlers.device, 'POST', '/device/fota/result', outcome, self);

    expect([scheduled.status, reported.status, retried.status]).toEqual([200, 200, 200]);
    expect(retried.body.fota).toEqual(reported.body.fota);
    // The retried outcome changes nothing, so the stream sends its event once.
    const fotaEvents = (await streamedEvents(device.id)).filter((m) => m.type === 'fota' && m.direction === 'd2c');
    expect(fotaEvents.map((m) => m.payload)).toEqual([{ ...reported.body.fota, message }]);
  });

  it('reads jobs written before values were stored as JSON text (DynamoDB maps), and completes them', async () => {
    const { device, self } = await newDevice();
    const { jobKey } = await import('../../../lambdas/stores/keys');
    const legacy = {
      name: 'legacy',
      status: 'pending',
      scheduled_at: '2026-01-01T00:00:00.000Z',
      value: { delay: 5, nested: { list: [1, 'a'] } },
      device_id: device.id,
    };
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...jobKey(device.id, 'legacy'), ...legacy } }));

    const read = await call(handlers.jobs, 'GET', `/devices/${device.id}/jobs/legacy`, undefined, owner);
    const answered = await call(handlers.device, 'POST', '/device/jobs/legacy/result', JSON.stringify({ result: { ok: '😀' } }), self);

    expect(read.body.job).toEqual({ name: 'legacy', status: 'pending', scheduled_at: legacy.scheduled_at, value: legacy.value });
    expect(answered.body.job).toEqual({ ...read.body.job, status: 'done', result: { ok: '😀' }, completed_at: expect.any(String) });
  });
});

describe('what cannot round-trip is a 400 naming the limit, and changes nothing', () => {
  const LIMITS = {
    integer: /2\^53/,
    depth: /at most 32 levels/,
    unicode: /well-formed Unicode/,
  };
  const TOO_BIG = '9007199254740993'; // 2^53 + 1: JSON.parse would read 9007199254740992
  const TOO_DEEP = JSON.stringify({ v: nested(31, LEAF) }); // 33 levels as a job value
  const LONE = '"\\ud800"';

  it.each([
    ['a job value with 2^53 + 1', `{"value":{"n":${TOO_BIG}}}`, 'body.value.n', LIMITS.integer],
    ['a job value 33 levels deep', `{"value":${TOO_DEEP}}`, 'body.value', LIMITS.depth],
    ['a job value with an unpaired surrogate', `{"value":{"s":${LONE}}}`, 'body.value.s', LIMITS.unicode],
  ])('scheduling %s leaves the job as it was', async (_what, body, field, limit) => {
    const { device } = await newDevice();
    const before = await call(handlers.jobs, 'POST', `/devices/${device.id}/jobs/update`, JSON.stringify({ value: { keep: 1 } }), owner);
    await streamedEvents(device.id); // the scheduling's event is out of the way

    const refused = await call(handlers.jobs, 'POST', `/devices/${device.id}/jobs/update`, body, owner);
    const after = await call(handlers.jobs, 'GET', `/devices/${device.id}/jobs/update`, undefined, owner);

    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field, message: expect.stringMatching(limit) }]);
    expect(after.body.job).toEqual(before.body.job);
    expect(await streamedEvents(device.id)).toEqual([]);
  });

  it.each([
    ['2^53 + 1', `{"result":{"n":${TOO_BIG}}}`, 'body.result.n', LIMITS.integer],
    ['33 levels', `{"result":${TOO_DEEP.replace('"v"', '"r"')}}`, 'body.result', LIMITS.depth],
    ['an unpaired surrogate key', `{"result":{${LONE}:1}}`, 'body.result.\ud800', LIMITS.unicode],
  ])('a job result with %s leaves the job pending', async (_what, body, field, limit) => {
    const { device, self } = await newDevice();
    const before = await call(handlers.jobs, 'POST', `/devices/${device.id}/jobs/update`, JSON.stringify({ value: { keep: 1 } }), owner);
    await streamedEvents(device.id); // the scheduling's event is out of the way

    const refused = await call(handlers.device, 'POST', '/device/jobs/update/result', body, self);
    const after = await call(handlers.jobs, 'GET', `/devices/${device.id}/jobs/update`, undefined, owner);

    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field, message: expect.stringMatching(limit) }]);
    expect(after.body.job).toEqual(before.body.job);
    expect(await streamedEvents(device.id)).toEqual([]);
  });

  it.each([
    ['2^53 + 1 in a point', '/device/data', `{"tag":"t","payload":{"n":${TOO_BIG}}}`, 'body.payload.n', LIMITS.integer],
    ['a point 33 levels deep', '/device/data', JSON.stringify({ tag: 't', payload: nested(32, LEAF) }), 'body.payload', LIMITS.depth],
    ['an unpaired surrogate in a batch', '/device/data', `[{"tag":"t","payload":1},{"tag":"t","payload":${LONE}}]`, 'body.1.payload', LIMITS.unicode],
    ['an event 33 levels deep', '/device/events', JSON.stringify({ type: 'os_info', payload: nested(32, LEAF) }), 'body.payload', LIMITS.depth],
    ['a FOTA message with an unpaired surrogate', '/device/fota/result', `{"status":"done","message":${LONE}}`, 'body.message', LIMITS.unicode],
  ])('publishing %s queues nothing', async (_what, path, body, field, limit) => {
    const { device, self } = await newDevice();
    if (path === '/device/fota/result') await call(handlers.fota, 'POST', `/devices/${device.id}/fota/fw/versions/1`, undefined, owner);
    await streamedEvents(device.id); // the scheduling's event is out of the way

    const refused = await call(handlers.device, 'POST', path, body, self);

    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field, message: expect.stringMatching(limit) }]);
    expect(await drain(ingestQueue)).toEqual([]);
    expect(await streamedEvents(device.id)).toEqual([]);
    const fota = await call(handlers.fota, 'GET', `/devices/${device.id}/fota`, undefined, owner);
    if (path === '/device/fota/result') expect(fota.body.fota.status).toBe('pending');
  });

  it('naming a device with an unpaired surrogate creates no device', async () => {
    const before = await call(handlers.devices, 'GET', `/workspaces/${owner.workspaceId}/devices`, undefined, owner);

    const refused = await call(handlers.devices, 'POST', `/workspaces/${owner.workspaceId}/devices`, `{"name":${LONE}}`, owner);
    const after = await call(handlers.devices, 'GET', `/workspaces/${owner.workspaceId}/devices`, undefined, owner);

    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field: 'body.name', message: expect.stringMatching(LIMITS.unicode) }]);
    expect(after.body.devices).toEqual(before.body.devices);
  });
});
