/**
 * Deleting devices, fleets and workspaces (spec/fleet-state.md §5) end to end: revocation over
 * both doors (an open MQTT session closed, reconnecting refused, HTTPS tokens refused), open jobs
 * canceled and counted in their rollout, a late message of a deleted device dropped, and the 409s
 * of a fleet or workspace that still holds devices. Another account's IDs: test/e2e/tenant-isolation.
 */
import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import mqtt from 'mqtt';
import { until } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';
import { startRuntime } from '../helpers/runtime';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
let ws: string;
let hook: WebhookReceiver;
const connections: MqttDevice[] = [];

beforeAll(async () => {
  runtime = await startRuntime({ sweepIntervalSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
  hook = await startWebhookReceiver();
  expect((await api.post(`/workspaces/${ws}/integrations`, { name: 'all', url: hook.url, data: true, events: true })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  for (const c of connections) c.client.end(true);
  await hook?.stop();
  await runtime?.stop();
});

const newDevice = async (fleet?: string) =>
  (await api.post(`/workspaces/${ws}/devices`, { name: 'doomed', ...(fleet ? { fleet_id: fleet } : {}) })).body.device;
const credentialsOf = async (device: string) => (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials as Credentials;

/** The CONNACK refusal of a connection attempt, or 'connected'. */
const connectOutcome = async (options: mqtt.IClientOptions) => {
  const client = mqtt.connect(runtime.mqtt_url, { protocolVersion: 4, clean: true, reconnectPeriod: 0, connectTimeout: 30_000, ...options });
  return new Promise<string | number>((resolve) => {
    client.once('connect', () => {
      client.end(true);
      resolve('connected');
    });
    client.once('error', (error) => {
      client.end(true);
      resolve((error as { code?: number }).code ?? error.message);
    });
  });
};

describe('deleting a device', () => {
  it('answers it as it was, closes its open MQTT session, and refuses it everywhere after', async () => {
    const device = await newDevice();
    const credentials = await credentialsOf(device.id);
    const usedToken = await deviceToken(credentials);
    expect((await deviceClient(runtime.base_url, usedToken).get('/status')).status).toBe(200);
    const session = await connectDevice(credentials, { url: runtime.mqtt_url });
    connections.push(session);
    await until(async () => (await api.get(`/workspaces/${ws}/devices/${device.id}`)).body.device.connected === true, 'connected state');
    const closed = new Promise<string>((resolve) => session.client.once('close', () => resolve('closed')));
    const usedBefore = (await api.get(`/workspaces/${ws}/limits`)).body.used;

    const deleted = await api.delete(`/workspaces/${ws}/devices/${device.id}`);
    const sessionOutcome = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve('still open'), 10_000))]);
    const reconnect = await connectOutcome({ clientId: device.id, username: device.id, password: await deviceToken(credentials) });
    const freshHttps = await deviceClient(runtime.base_url, await deviceToken(credentials, { expiresIn: 1800 })).post('/data', { tag: 't', payload: {} });
    const usedHttps = await deviceClient(runtime.base_url, usedToken).post('/data', { tag: 't', payload: {} });

    expect(deleted.status).toBe(200);
    expect(deleted.body.device).toMatchObject({ id: device.id, name: 'doomed', workspace_id: ws, connected: true });
    expect(sessionOutcome).toBe('closed');
    expect(reconnect).toBe(5);
    expect(freshHttps.status).toBe(401);
    // The authorizer may still hold the used token's answer; the device API refuses the deleted device itself.
    expect([401, 404]).toContain(usedHttps.status);
    expect((await api.get(`/workspaces/${ws}/devices/${device.id}`)).status).toBe(404);
    expect((await api.get(`/devices/${device.id}/jobs`)).status).toBe(404);
    expect((await api.get(`/workspaces/${ws}/devices`)).body.devices.map((d: { id: string }) => d.id)).not.toContain(device.id);
    expect((await api.delete(`/workspaces/${ws}/devices/${device.id}`)).status).toBe(404);
    // Its places in the quotas of devices and identities are free at once.
    const usedAfter = (await api.get(`/workspaces/${ws}/limits`)).body.used;
    expect([usedAfter.devices, usedAfter.identities]).toEqual([usedBefore.devices - 1, usedBefore.identities - 1]);
  });

  it('cancels its open jobs, a queued one of a rate-limited rollout too, and its rollout counts them canceled', async () => {
    const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'staged' })).body.fleet.id as string;
    const devices = [await newDevice(fleet), await newDevice(fleet)].map((d) => d.id as string).sort();
    const answer = await api.post(`/workspaces/${ws}/jobs/stage?fleet=${fleet}`, { value: {}, rollout: { max_per_minute: 1 } });
    const rolloutId = answer.body.job.rollout_id as string;
    const rollout = async () => (await api.get(`/workspaces/${ws}/rollouts/${rolloutId}`)).body.rollout;
    await until(async () => (await rollout()).counts.queued === 1 && (await rollout()).counts.pending === 1, 'one pending, one queued');
    const queued = (await api.get(`/workspaces/${ws}/rollouts/${rolloutId}/devices?status=queued`)).body.devices[0].device_id as string;
    await api.post(`/devices/${queued}/jobs/single`, { value: {}, timeout_seconds: 3600 });

    expect((await api.delete(`/workspaces/${ws}/devices/${queued}`)).status).toBe(200);

    await until(async () => (await rollout()).counts.canceled === 1, 'the deleted device counted canceled', 30_000);
    const counted = await rollout();
    expect(counted.counts).toMatchObject({ queued: 0, canceled: 1, pending: 1 });
    const listed = (await api.get(`/workspaces/${ws}/rollouts/${rolloutId}/devices?status=canceled`)).body.devices;
    expect(listed.map((d: { device_id: string }) => d.device_id)).toEqual([queued]);
    // Its cancels are no events: a deleted device's webhooks stop.
    expect(hook.accepted().filter((e) => e.device_id === queued && e.type === 'job' && (e.payload as { status?: string }).status === 'canceled')).toEqual([]);
    expect(devices).toContain(queued);
  });

  it('drops a late MQTT data publish of the deleted device: nothing stored, nothing forwarded', async () => {
    const device = await newDevice();
    expect((await api.delete(`/workspaces/${ws}/devices/${device.id}`)).status).toBe(200);
    const sqs = new SQSClient({ endpoint: runtime.sqs_endpoint, useQueueUrlAsEndpoint: false });
    const body = JSON.stringify({
      payload: Buffer.from(JSON.stringify({ n: 1 })).toString('base64'),
      topic: `j/data/${device.id}/late`,
      received_at: Date.now(),
      client_id: device.id,
    });
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: runtime.queue_urls.ingest, Entries: [{ Id: '0', MessageBody: body }] }));
    await until(
      async () => {
        const { Attributes = {} } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: runtime.queue_urls.ingest,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        );
        return Attributes.ApproximateNumberOfMessages === '0' && Attributes.ApproximateNumberOfMessagesNotVisible === '0';
      },
      'the ingest queue drained',
      30_000,
    );
    sqs.destroy();

    expect((await api.get(`/timeseries/${ws}/data?device=${device.id}`)).body.result).toEqual([]);
    expect(hook.accepted().filter((e) => e.device_id === device.id && e.type === 'data')).toEqual([]);
  });
});

describe('deleting a fleet', () => {
  it('refuses the default fleet and one that holds a device (409), then deletes it once empty', async () => {
    const workspace = (await api.get(`/workspaces/${ws}`)).body.workspace;
    const fleets = (await api.get(`/workspaces/${ws}/fleets`)).body.fleets as Array<{ id: string; name: string }>;
    const defaultFleet = fleets.find((f) => f.name === 'default')!.id;
    const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'short-lived' })).body.fleet;
    const device = await newDevice(fleet.id);

    const ofDefault = await api.delete(`/workspaces/${ws}/fleets/${defaultFleet}`);
    const holding = await api.delete(`/workspaces/${ws}/fleets/${fleet.id}`);
    await api.delete(`/workspaces/${ws}/devices/${device.id}`);
    const empty = await api.delete(`/workspaces/${ws}/fleets/${fleet.id}`);

    expect([ofDefault.status, ofDefault.body.error.code]).toEqual([409, 'conflict']);
    expect([holding.status, holding.body.error.code]).toEqual([409, 'conflict']);
    expect(empty.status).toBe(200);
    expect(empty.body.fleet).toEqual(fleet);
    expect((await api.get(`/workspaces/${ws}/fleets/${fleet.id}`)).status).toBe(404);
    expect((await api.post(`/workspaces/${ws}/devices`, { name: 'late', fleet_id: fleet.id })).status).toBe(404);
    expect(workspace.id).toBe(ws);
  });
});

describe('deleting a workspace', () => {
  it('refuses one that holds a device (409, nothing changed), then deletes it and all it holds: its routes answer 404 and its keys stop', async () => {
    const made = (await api.post('/workspaces', { name: 'temporary' })).body.workspace;
    const fleet = (await api.post(`/workspaces/${made.id}/fleets`, { name: 'f' })).body.fleet;
    const key = (await api.post(`/workspaces/${made.id}/api-keys`, { name: 'k' })).body.key as string;
    const device = (await api.post(`/workspaces/${made.id}/devices`, { name: 'd', fleet_id: fleet.id })).body.device;

    const holding = await api.delete(`/workspaces/${made.id}`);
    const stillThere = await api.get(`/workspaces/${made.id}/fleets`);
    await api.delete(`/workspaces/${made.id}/devices/${device.id}`);
    const deleted = await api.delete(`/workspaces/${made.id}`);

    expect([holding.status, holding.body.error.code]).toEqual([409, 'conflict']);
    expect(stillThere.body.fleets).toHaveLength(2);
    expect(deleted.status).toBe(200);
    expect(deleted.body.workspace).toMatchObject({ id: made.id, name: 'temporary' });
    for (const path of [`/workspaces/${made.id}`, `/workspaces/${made.id}/fleets`, `/workspaces/${made.id}/devices`, `/workspaces/${made.id}/api-keys`]) {
      expect([path, (await api.get(path)).status]).toEqual([path, 404]);
    }
    expect((await api.get('/workspaces')).body.workspaces.map((w: { id: string }) => w.id)).not.toContain(made.id);
    expect((await apiClient(runtime.base_url, key, { retryRateLimited: false }).get('/workspaces')).status).toBe(401);
    expect((await api.delete(`/workspaces/${made.id}`)).status).toBe(404);
  });
});
