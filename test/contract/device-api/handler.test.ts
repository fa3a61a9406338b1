import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { DeviceCaller } from '../../../lambdas/domain/registry/identities';
import type { IngestMessage } from '../../../lambdas/schemas/device-api';
import { isCloudStamp, parseTime } from '../../../lambdas/shared/timestamps';
import { lambdaContext, proxyEvent } from '../../helpers/proxy-event';
import { freshQueue, receiveAll, type TestQueue } from '../../helpers/sqs';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

let ingestQueue: TestQueue;
let handler: Handler;
let self: DeviceCaller;
beforeAll(async () => {
  // The handler reads its queue and table from the environment when it loads, as in Lambda.
  ingestQueue = await freshQueue();
  process.env.INGEST_QUEUE_URL = ingestQueue.url;
  process.env.FORWARD_QUEUE_URL = '';
  // one at a time: jest's ESM loader cannot link modules imported concurrently
  const { REGISTRY_TABLE } = await import('../../../lambdas/shared/env');
  const { freshTable } = await import('../../helpers/db');
  const { newAccount } = await import('../../helpers/callers');
  const { createDevice } = await import('../../../lambdas/domain/registry/devices');
  handler = (await import('../../../lambdas/handlers/device-api/handler')).handler as unknown as Handler;
  const db = await freshTable(REGISTRY_TABLE);
  const account = await newAccount(db);
  const device = await createDevice(db, account.caller, account.workspace_id, { name: 'sensor', phys_id: '' });
  self = { accountId: account.account_id, workspaceId: account.workspace_id, deviceId: device.id, identityId: 'idn-00000000000000000000' };
});

const call = async (method: string, path: string, body?: unknown, authorizer: object | null = self) => {
  const result = await handler(
    proxyEvent(method, path, body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body), authorizer),
    lambdaContext,
  );
  return { status: result.statusCode, body: JSON.parse(result.body) };
};

const queuedMessages = async () => (await receiveAll(ingestQueue.url)).map((m) => JSON.parse(m.Body!) as IngestMessage);

const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();

describe('device API handler', () => {
  /** A cloud stamp: six fractional digits, never `000` below the millisecond, in the millisecond of `arrival` or just after it. */
  const cloudStampIn = (arrival: string) => ({
    asymmetricMatch: (stamp: string) => {
      const time = parseTime(stamp);
      const since = time && (time.ms - Date.parse(arrival)) * 1000 + time.us;
      return /\.\d{6}Z$/.test(stamp) && isCloudStamp(time!) && since! > 0 && since! < 2000;
    },
    toString: () => `a cloud stamp just after ${arrival}`,
  });

  it('answers 202 and puts the points on the ingest queue', async () => {
    const { status, body } = await call('POST', '/device/data', [
      { tag: 'weather', payload: { temp: 21 }, timestamp_device: '2026-01-02T04:00:00.123+01:00' },
      { tag: 'weather.hourly', payload: 'text' },
    ]);

    expect(status).toBe(202);
    expect(body).toEqual({ accepted: 2, refused: 0, timestamp_in: expect.any(String) });
    expect(await queuedMessages()).toEqual([
      expect.objectContaining({
        kind: 'data',
        device_id: self.deviceId,
        timestamp_in: body.timestamp_in,
        points: [
          { tag: 'weather', payload: { temp: 21 }, timestamp_device: '2026-01-02T03:00:00.123Z' },
          // A cloud stamp: the arrival, to the microsecond.
          { tag: 'weather.hourly', payload: 'text', timestamp_device: cloudStampIn(body.timestamp_in) },
        ],
      }),
    ]);
  });

  it('takes a single point as well as a batch', async () => {
    const { status, body } = await call('POST', '/device/data', { tag: 't', payload: null });

    expect([status, body.accepted]).toEqual([202, 1]);
    expect((await queuedMessages()).map((m) => m.kind === 'data' && m.points)).toEqual([
      [{ tag: 't', payload: null, timestamp_device: cloudStampIn(body.timestamp_in) }],
    ]);
  });

  it.each([
    ['a bad tag', { tag: 'a b', payload: 1 }, 'body.tag'],
    ['a missing payload', { tag: 't' }, 'body.payload'],
    ['a payload over 1536 bytes', { tag: 't', payload: 'x'.repeat(1535) }, 'body.payload'],
    ['a timestamp more than 15 minutes ahead', { tag: 't', payload: 1, timestamp_device: inMinutes(20) }, 'body.timestamp_device'],
    ['a timestamp that is no date', { tag: 't', payload: 1, timestamp_device: 'yesterday' }, 'body.timestamp_device'],
    ['an unknown field', { tag: 't', payload: 1, qos: 1 }, 'body.qos'],
    ['an empty batch', [], 'body'],
    ['a batch of 101 points', Array.from({ length: 101 }, () => ({ tag: 't', payload: 1 })), 'body'],
    [
      'a bad point in a batch',
      [
        { tag: 't', payload: 1 },
        { tag: '', payload: 1 },
      ],
      'body.1.tag',
    ],
  ])('refuses %s with 400 naming the field, and queues nothing', async (_name, body, field) => {
    const answer = await call('POST', '/device/data', body);

    expect(answer.status).toBe(400);
    expect(answer.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await queuedMessages()).toEqual([]);
  });

  it('accepts a timestamp a few minutes ahead (device clocks drift)', async () => {
    const { status } = await call('POST', '/device/data', { tag: 't', payload: 1, timestamp_device: inMinutes(5) });

    expect(status).toBe(202);
    expect(await queuedMessages()).toHaveLength(1);
  });

  it('refuses a body that is not JSON with 400', async () => {
    const { status, body } = await call('POST', '/device/data', '{"tag":');

    expect([status, body.error.code]).toEqual([400, 'validation_error']);
  });

  it('refuses an event type that only the service emits', async () => {
    const { status, body } = await call('POST', '/device/events', { type: 'authentication', payload: {} });

    expect(status).toBe(400);
    expect(body.error.details[0].field).toBe('body.type');
    expect(await queuedMessages()).toEqual([]);
  });

  it('answers 401 without the device authorizer’s context', async () => {
    const { status, body } = await call('GET', '/device/status', undefined, null);

    expect([status, body.error.code]).toEqual([401, 'unauthorized']);
  });

  it('answers 404 for a job the device does not have', async () => {
    const { status } = await call('POST', '/device/jobs/ghost/result', { result: {} });

    expect(status).toBe(404);
  });
});
