import { SetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { until } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { STREAM_DLQ_NAME } from '../../../lambdas/streams';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { depthOf } from '../../helpers/sqs';
import { startRuntime } from '../../helpers/runtime';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
let sqs: SQSClient;
const receivers: WebhookReceiver[] = [];
const streamErrors: string[] = [];

beforeAll(async () => {
  runtime = await startRuntime({
    queues: { forward: { visibilityTimeoutSeconds: 5, consumerTimeoutSeconds: 4, retry: { baseSeconds: 1, maxSeconds: 1 } } },
    webhookTimeoutMs: 1000,
    onStreamError: (_error, what) => void streamErrors.push(what),
  });
  api = apiClient(runtime.base_url, runtime.api_key);
  sqs = new SQSClient({ endpoint: runtime.sqs_endpoint, useQueueUrlAsEndpoint: false });
}, 120_000);
afterAll(async () => {
  sqs?.destroy();
  await Promise.all(receivers.map((r) => r.stop()));
  await runtime?.stop();
});

/** A new workspace with a second fleet `field`, one device in each fleet, each with device credentials, and a webhook for its events. */
const fleetSetup = async () => {
  const { body } = await api.post('/workspaces', { name: `ws-${Date.now()}` });
  const workspaceId: string = body.workspace.id;
  const field = (await api.post(`/workspaces/${workspaceId}/fleets`, { name: 'field', description: '' })).body.fleet;
  const inDefault = (await api.post(`/workspaces/${workspaceId}/devices`, { name: 'd0' })).body.device;
  const inField = (await api.post(`/workspaces/${workspaceId}/devices`, { name: 'd1', fleet_id: field.id })).body.device;
  const clientOf = async (deviceId: string) => {
    const { credentials } = (await api.post(`/workspaces/${workspaceId}/devices/${deviceId}/identities`)).body;
    return deviceClient(runtime.base_url, await deviceToken(credentials));
  };
  const hook = await startWebhookReceiver();
  receivers.push(hook);
  await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url, data: false });
  type Entry = { device_id: string; workspace_id: string; fleet_id: string; type: string; direction: string; ts: string; payload: unknown };
  const serviceEvents = () => (hook.accepted() as Entry[]).filter((e) => e.type === 'job' || e.type === 'fota');
  return { workspaceId, field, inDefault, inField, clientOf, hook, serviceEvents };
};

const nameOf = (e: { payload: unknown }) =>
  (e.payload as { name?: string; value?: { firmware_version?: string } }).name ?? (e.payload as { value: { firmware_version: string } }).value.firmware_version;
const summary = (events: Array<{ device_id: string; type: string; direction: string; payload: unknown }>) =>
  events.map((e) => `${e.device_id} ${e.type} ${e.direction} ${nameOf(e)}`).sort();

describe('a continuous rollout through the registry stream (local runtime or cloud assembly)', () => {
  it('gives a device created in its fleet its job from the stream, once, with its event, and counts it', async () => {
    const { workspaceId, field, inField, serviceEvents } = await fleetSetup();
    const answer = await api.post(`/workspaces/${workspaceId}/jobs/late?fleet=${field.id}`, { value: { v: 1 }, rollout: { continuous: true } });
    expect(answer.body.job.devices).toEqual([inField.id]);
    const id = answer.body.job.rollout_id as string;

    const late = (await api.post(`/workspaces/${workspaceId}/devices`, { name: 'late', fleet_id: field.id })).body.device.id as string;

    await until(async () => (await api.get(`/devices/${late}/jobs/late`)).body.job?.rollout_id === id, 'the late device holds the job', 30_000);
    await until(async () => (await api.get(`/workspaces/${workspaceId}/rollouts/${id}`)).body.rollout.total === 2, 'the rollout counts it', 30_000);
    await until(async () => serviceEvents().some((e) => e.device_id === late), 'its c2d job event', 30_000);
    expect(summary(serviceEvents().filter((e) => e.device_id === late))).toEqual([`${late} job c2d late`]);
    expect((await api.get(`/workspaces/${workspaceId}/rollouts/${id}`)).body.rollout).toMatchObject({ status: 'in_progress', settings: { continuous: true } });
    expect(streamErrors).toEqual([]);
  });
});

describe('job and FOTA events through the registry stream (local runtime or cloud assembly, webhook receiver)', () => {
  it('delivers a job scheduled on a device and on a fleet, the job’s result and a FOTA outcome, each exactly once', async () => {
    const { workspaceId, field, inDefault, inField, clientOf, serviceEvents } = await fleetSetup();
    const [d0, d1] = [await clientOf(inDefault.id), await clientOf(inField.id)];

    expect((await api.post(`/devices/${inDefault.id}/jobs/reboot`, { value: { delay: 1 } })).status).toBe(200);
    expect((await api.post(`/workspaces/${workspaceId}/jobs/update?fleet=${field.id}`, { value: { to: '2.1' } })).body.job.devices).toEqual([inField.id]);
    expect((await api.post(`/devices/${inField.id}/fota/fw/versions/2.0`)).status).toBe(200);
    const result = await d0.post('/jobs/reboot/result', { result: { rebooted: true } });
    const fota = await d1.post('/fota/result', { status: 'failed', firmware_version: '2.0', message: 'flash error' });
    // A device retrying after a lost answer: the same result answers the same job and changes nothing.
    const retried = await d0.post('/jobs/reboot/result', { result: { rebooted: true } });
    await api.post(`/devices/${inDefault.id}/jobs/marker`, { value: {} });
    const expected = [
      `${inDefault.id} job c2d reboot`,
      `${inField.id} job c2d update`,
      `${inField.id} fota c2d 2.0`,
      `${inDefault.id} job d2c reboot`,
      `${inField.id} fota d2c 2.0`,
    ].sort();
    // The forward queue is a standard queue and the stream invokes as soon as it reads (no window):
    // events sent in separate messages arrive in any order, so the marker may come before the others.
    const others = () => serviceEvents().filter((e) => nameOf(e) !== 'marker');
    await until(
      () => serviceEvents().some((e) => nameOf(e) === 'marker') && others().length >= expected.length,
      'every event, and the marker job scheduled after them',
    );

    expect(result.status).toBe(200);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual(result.body);
    const events = others();
    expect(summary(events)).toEqual(expected);
    const d2cJob = events.find((e) => e.type === 'job' && e.direction === 'd2c')!;
    expect(d2cJob).toEqual(
      expect.objectContaining({ workspace_id: workspaceId, fleet_id: inDefault.fleet_id, device_id: inDefault.id, payload: result.body.job }),
    );
    expect(events.find((e) => e.type === 'fota' && e.direction === 'd2c')).toEqual(
      expect.objectContaining({ fleet_id: field.id, payload: { ...fota.body.fota, message: 'flash error' } }),
    );
    expect(events.find((e) => e.type === 'job' && nameOf(e) === 'update')).toEqual(expect.objectContaining({ fleet_id: field.id }));
  });

  it('loses no event while the forward queue refuses them: requests answer at once, and the events follow once it takes them again', async () => {
    const { workspaceId, inDefault, inField, serviceEvents } = await fleetSetup();
    const QueueUrl = runtime.queue_urls.forward;
    const errorsBefore = streamErrors.length;
    // SQS refuses a message larger than the queue's MaximumMessageSize; these events carry a 2 KB value.
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { MaximumMessageSize: '1024' } }));
    const big = { blob: 'x'.repeat(2048) };
    try {
      const single = await api.post(`/devices/${inDefault.id}/jobs/big`, { value: big });
      const fleet = await api.post(`/workspaces/${workspaceId}/jobs/bigger`, { value: big });
      expect(single.status).toBe(200);
      expect(fleet.body.job.devices.sort()).toEqual([inDefault.id, inField.id].sort());
      expect((await api.get(`/devices/${inField.id}/jobs/bigger`)).body.job.status).toBe('pending');
      await until(() => streamErrors.length >= errorsBefore + 2, 'the stream consumer failing twice on the refused events');
      expect(serviceEvents()).toEqual([]);
    } finally {
      await sqs.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: { MaximumMessageSize: '1048576' } }));
    }

    await until(() => new Set(summary(serviceEvents())).size === 3, 'the three job events');
    expect([...new Set(summary(serviceEvents()))]).toEqual(
      [`${inDefault.id} job c2d big`, `${inDefault.id} job c2d bigger`, `${inField.id} job c2d bigger`].sort(),
    );
    expect(serviceEvents().every((e) => JSON.stringify((e.payload as { value: unknown }).value) === JSON.stringify(big))).toBe(true);
    expect(await depthOf(runtime.queue_urls[STREAM_DLQ_NAME])).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});
