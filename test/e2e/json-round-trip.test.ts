/**
 * Issue 8's regression on the local runtime: a device named with an emoji publishes, its points
 * come back through the storage query and reach a webhook unchanged, and a job value and result
 * with every awkward JSON value round-trip through the HTTP API, events included.
 */
import { until, waitFor } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { startRuntime } from '../helpers/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
let hook: WebhookReceiver;
let secret: string;

beforeAll(async () => {
  runtime = await startRuntime({ authorizerCacheTtlSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
  hook = await startWebhookReceiver();
  const created = await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { name: 'json', url: hook.url, data: true, events: true });
  expect(created.status).toBe(200);
  secret = created.body.secret;
}, 120_000);
afterAll(async () => {
  await hook?.stop();
  await runtime?.stop();
});

type Json = Record<string, unknown>;
const nested = (levels: number, leaf: Json): unknown => (levels === 0 ? leaf : levels % 2 ? [nested(levels - 1, leaf)] : { a: nested(levels - 1, leaf) });
const LEAF: Json = { '': 'empty key', emoji: 'emoji 😀', nonCharacters: '\uFFFE\uFFFF', big: 1e300, tiny: 1e-200 };
const EMOJI_NAME = 'emoji 😀 \uFFFF';

const newDevice = async (name: string) => {
  const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name })).body.device;
  const { credentials } = (await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`)).body;
  return { device, me: deviceClient(runtime.base_url, await deviceToken(credentials)) };
};

/** Webhook entries for a device, from POSTs answered 2xx and correctly signed. */
const delivered = (deviceId: string) =>
  hook.posts
    .filter((p) => p.status === 200 && verifySignature(secret, p.headers, p.raw))
    .flatMap((p) => p.body.result)
    .filter((e) => e.device_id === deviceId);

describe('awkward JSON on the local runtime', () => {
  it('a device named with an emoji and U+FFFF publishes: the storage query and the webhook give its points back unchanged', async () => {
    const { device, me } = await newDevice(EMOJI_NAME);
    const point = { tag: 'deep', payload: nested(31, LEAF), timestamp_device: '2026-02-01T00:00:01.000Z' };
    const storage = apiClient(runtime.storage_url, runtime.api_key);

    const published = await me.post('/data', [point]);
    const events = await me.post('/events', { type: 'os_info', payload: { ...LEAF, note: 'rebooted 🔁' } });
    const points = await waitFor(
      async () => {
        const { body } = await storage.get(`/timeseries/${runtime.workspace_id}/data?device=${device.id}`);
        if (!body.result.length) throw new Error('no point stored yet');
        return body.result;
      },
      'the point to be stored',
      30_000,
    );
    await until(
      () => delivered(device.id).some((e) => e.tag === 'deep') && delivered(device.id).some((e) => e.type === 'os_info'),
      'the data point and the event at the webhook',
      30_000,
    );

    expect(device.name).toBe(EMOJI_NAME);
    expect([published.status, events.status]).toEqual([202, 202]);
    expect(points).toEqual([expect.objectContaining({ device_id: device.id, tag: 'deep', timestamp_device: point.timestamp_device, payload: point.payload })]);
    const entries = delivered(device.id);
    expect(entries.find((e) => e.tag === 'deep')).toMatchObject({ device_name: EMOJI_NAME, payload: point.payload });
    expect(entries.find((e) => e.type === 'os_info')?.payload).toEqual({ ...LEAF, note: 'rebooted 🔁' });
  });

  it('a job value and result with emoji, U+FFFF, an empty key, 1e300 and 32 levels round-trip through the API and reach the webhook', async () => {
    const { device, me } = await newDevice('worker 🛠');
    const value = { ...LEAF, deep: nested(30, LEAF) };
    const result = { ...LEAF, outcome: 'done ✅' };

    const scheduled = await api.post(`/devices/${device.id}/jobs/update`, { value });
    const status = await me.get('/status');
    const answered = await me.post('/jobs/update/result', { result });
    const retried = await me.post('/jobs/update/result', { result });
    const read = await api.get(`/devices/${device.id}/jobs/update`);
    await until(() => delivered(device.id).filter((e) => e.type === 'job' && e.direction === 'd2c').length >= 1, 'the job result event at the webhook', 30_000);

    expect([scheduled.status, status.status, answered.status, retried.status, read.status]).toEqual([200, 200, 200, 200, 200]);
    expect(status.body.jobs).toEqual([{ name: 'update', value, scheduled_at: scheduled.body.job.scheduled_at }]);
    expect(read.body.job).toEqual({
      name: 'update',
      status: 'done',
      scheduled_at: scheduled.body.job.scheduled_at,
      value,
      result,
      completed_at: expect.any(String),
    });
    expect(retried.body.job).toEqual(read.body.job);
    const jobEvent = delivered(device.id).find((e) => e.type === 'job' && e.direction === 'd2c');
    expect(jobEvent?.payload).toEqual(read.body.job);
  });

  it('refuses 2^53 + 1 and 33 levels with 400s naming the limit, leaving the job as it was', async () => {
    const { device } = await newDevice('strict');
    await api.post(`/devices/${device.id}/jobs/update`, { value: { keep: 1 } });

    const big = await api.post(`/devices/${device.id}/jobs/update`, '{"value":{"n":9007199254740993}}');
    const deep = await api.post(`/devices/${device.id}/jobs/update`, { value: { v: nested(31, LEAF) } });
    const read = await api.get(`/devices/${device.id}/jobs/update`);

    expect([big.status, deep.status]).toEqual([400, 400]);
    expect(big.body.error.details).toEqual([{ field: 'body.value.n', message: expect.stringMatching(/2\^53/) }]);
    expect(deep.body.error.details).toEqual([{ field: 'body.value', message: expect.stringMatching(/at most 32 levels/) }]);
    expect(read.body.job.value).toEqual({ keep: 1 });
  });
});
