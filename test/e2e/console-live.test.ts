import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { until } from '../../local/ports';
import { IOT_RULES_CALLER, requestCounter } from '../../local/request-counter';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { codeFor, cognitoClient } from '../helpers/cognito';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';
import { cloudAssemblyDir, startRuntime } from '../helpers/runtime';

// The console's live updates on npm start's runtime (docs/console.md, "Live updates"): MQTT over
// the broker's WebSocket listener, a signed-in user's access token as password, one workspace.

const PASSWORD = 'Correct-horse-42';
let runtime: LocalRuntime;
let api: ApiClient;
let cognito: ReturnType<typeof cognitoClient>;
const clients: MqttClient[] = [];
const devices: MqttDevice[] = [];

beforeAll(async () => {
  runtime = await startRuntime({ consoleDistDir: mkdtempSync(join(tmpdir(), 'console-dist-')), authorizerCacheTtlSeconds: 0 });
  api = apiClient(runtime.base_url, runtime.api_key);
  cognito = cognitoClient(runtime.cognito_endpoint!, runtime.user_pool_client_id!);
}, 120_000);
afterAll(async () => {
  for (const c of clients) c.end(true);
  for (const d of devices) d.client.end(true);
  await runtime?.stop();
});

const accessTokenOf = async (email: string, password: string) => {
  const signedIn = await cognito.signIn(email, password);
  expect(signedIn.status).toBe(200);
  return signedIn.body.AuthenticationResult.AccessToken as string;
};

/** A user of a new account (the sign-up trigger makes it), signed in, and its workspace. */
const otherUser = async (email: string) => {
  expect((await cognito.signUp(email, PASSWORD)).status).toBe(200);
  expect((await cognito.confirmSignUp(email, await codeFor(runtime.console_url!, email))).status).toBe(200);
  const token = await accessTokenOf(email, PASSWORD);
  const listed = await api.call('GET', '/workspaces', undefined, { 'x-api-key': '', authorization: `Bearer ${token}` });
  return { token, workspaceId: listed.body.workspaces[0].id as string };
};

let seq = 0;
/** Connects as the console does; resolves with the client, or rejects with the CONNACK refusal. */
const consoleClient = async (workspaceId: string, token: string, clientId = `console-e2e${(seq += 1)}${Date.now()}`) => {
  const client = mqtt.connect(runtime.mqtt_ws_url!, {
    clientId,
    username: workspaceId,
    password: token,
    protocolVersion: 4,
    clean: true,
    reconnectPeriod: 0,
    connectTimeout: 30_000,
  });
  clients.push(client);
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', (error) => {
      client.end(true);
      reject(error);
    });
  });
  const received: Array<{ topic: string; message: any }> = [];
  client.on('message', (topic, payload) => received.push({ topic, message: JSON.parse(payload.toString('utf8')) }));
  return { client, received };
};

const newDevice = async () => {
  const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'live-sensor' })).body.device;
  const created = await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`);
  return { id: device.id as string, credentials: created.body.credentials as Credentials };
};

describe('the console’s live updates', () => {
  it('tell a signed-in user’s console of a device connecting and disconnecting', async () => {
    const live = await consoleClient(runtime.workspace_id, await accessTokenOf(runtime.user_email!, runtime.user_password!));
    const granted = await live.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/+`, { qos: 0 });
    expect(granted.map((g) => g.qos)).toEqual([0]);
    const { id, credentials } = await newDevice();

    const device = await connectDevice(credentials, { url: runtime.mqtt_url });
    devices.push(device);
    const connection = (connected: boolean) => live.received.find((r) => r.message.device_id === id && r.message.connected === connected);
    await until(() => connection(true) !== undefined, 'the connection message', 30_000);
    await device.end();
    await until(() => connection(false) !== undefined, 'the disconnection message', 30_000);

    expect(connection(true)).toEqual({
      topic: `fleetstream/console/${runtime.workspace_id}/connection`,
      message: { device_id: id, fleet_id: expect.stringMatching(/^flt-/), connected: true, at: expect.any(String) },
    });
    expect(connection(false)!.message.connected).toBe(false);
  });

  it('tell it of a burst of data points in fewer messages than points, counting every point', async () => {
    const live = await consoleClient(runtime.workspace_id, await accessTokenOf(runtime.user_email!, runtime.user_password!));
    await live.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/data`, { qos: 0 });
    const { id, credentials } = await newDevice();
    const device = await connectDevice(credentials, { url: runtime.mqtt_url });
    devices.push(device);

    await Promise.all(Array.from({ length: 20 }, (_, i) => device.data(i % 2 ? 'temp' : 'hum', { value: i })));
    const data = () => live.received.filter((r) => r.message.device_id === id);
    const counted = () => data().reduce((sum, r) => sum + r.message.count, 0);
    await until(() => counted() >= 20, '20 points told', 30_000);

    expect(counted()).toBe(20);
    expect(data().length).toBeLessThan(20);
    expect(new Set(data().flatMap((r) => r.message.tags))).toEqual(new Set(['hum', 'temp']));
  });

  it('tell it of a webhook whose delivery failed, with the error', async () => {
    const live = await consoleClient(runtime.workspace_id, await accessTokenOf(runtime.user_email!, runtime.user_password!));
    await live.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/webhook`, { qos: 0 });
    // a port nothing listens on: the POST is refused
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const integration = (await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { name: 'dead', url: `http://127.0.0.1:${port}/`, data: true }))
      .body.integration;
    const { credentials } = await newDevice();
    const device = await connectDevice(credentials, { url: runtime.mqtt_url });
    devices.push(device);

    await device.data('temp', { value: 1 });
    const failed = () => live.received.find((r) => r.message.integration_id === integration.id);
    await until(() => failed() !== undefined, 'the webhook status message', 30_000);
    await api.delete(`/workspaces/${runtime.workspace_id}/integrations/${integration.id}`);

    expect(failed()).toEqual({
      topic: `fleetstream/console/${runtime.workspace_id}/webhook`,
      message: { integration_id: integration.id, ok: false, at: expect.any(String), error: expect.any(String) },
    });
  });

  it('tell it of an export until it is ready, the last message counting every point of the file', async () => {
    const live = await consoleClient(runtime.workspace_id, await accessTokenOf(runtime.user_email!, runtime.user_password!));
    await live.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/export`, { qos: 0 });
    const { id, credentials } = await newDevice();
    const device = await connectDevice(credentials, { url: runtime.mqtt_url });
    devices.push(device);
    await Promise.all(Array.from({ length: 5 }, (_, i) => device.data('temp', { value: i })));
    const storage = apiClient(runtime.storage_url, runtime.api_key);
    const stored = async () => (await storage.get(`/timeseries/${runtime.workspace_id}/data?device=${id}`)).body.result?.length ?? 0;
    await until(async () => (await stored()) === 5, 'the 5 points stored', 30_000);

    const started = await storage.post(`/timeseries/${runtime.workspace_id}/exports`, { format: 'csv', device: [id] });
    expect(started.status).toBe(202);
    const exportId = started.body.export.id as string;
    const updates = () => live.received.filter((r) => r.message.export_id === exportId);
    await until(() => updates().some((r) => r.message.status !== 'running'), 'the export’s end told', 60_000);

    const shown = (await storage.get(`/timeseries/${runtime.workspace_id}/exports/${exportId}`)).body.export;
    expect(shown).toMatchObject({ status: 'ready', rows: 5 });
    expect(updates().at(-1)).toEqual({
      topic: `fleetstream/console/${runtime.workspace_id}/export`,
      message: { export_id: exportId, status: 'ready', points_written: 5, at: expect.any(String) },
    });
    expect(updates().every((r) => r.message.status === 'running' || r === updates().at(-1))).toBe(true);
  });

  it('tell it of each transition of an alarm: opened by a device’s condition, then acknowledged', async () => {
    const live = await consoleClient(runtime.workspace_id, await accessTokenOf(runtime.user_email!, runtime.user_password!));
    await live.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/alarm`, { qos: 0 });
    const rule = (
      await api.post(`/workspaces/${runtime.workspace_id}/alarm-rules`, { name: 'door open', kind: 'condition', severity: 'major', tag: 'door-live' })
    ).body.alarm_rule;
    const { id, credentials } = await newDevice();
    const https = deviceClient(runtime.base_url, await deviceToken(credentials));

    // The rule is watched within its cache's 10 s: a condition opened before then opens no alarm,
    // so another is opened each 12 s until one does.
    const opened = () => live.received.find((r) => r.message.device_id === id && r.message.event === 'opened');
    for (let n = 1; n <= 5 && !opened(); n++) {
      expect((await https.post('/conditions', { uuid: `door-${n}`, tag: 'door-live' })).status).toBeLessThan(300);
      await until(() => opened() !== undefined, 'the opened alarm told', 12_000).catch(() => undefined);
    }
    expect(opened()).toBeDefined();
    const alarmId = opened()!.message.alarm_id as string;
    expect((await api.post(`/workspaces/${runtime.workspace_id}/alarms/${alarmId}/acknowledge`, { note: 'on it' })).status).toBe(200);
    const acknowledged = () => live.received.find((r) => r.message.alarm_id === alarmId && r.message.event === 'acknowledged');
    await until(() => acknowledged() !== undefined, 'the acknowledgement told', 30_000);
    await api.delete(`/workspaces/${runtime.workspace_id}/alarm-rules/${rule.id}`);

    expect(opened()).toEqual({
      topic: `fleetstream/console/${runtime.workspace_id}/alarm`,
      message: {
        alarm_id: expect.stringMatching(/^alm-/),
        rule_id: rule.id,
        device_id: id,
        fleet_id: expect.stringMatching(/^flt-/),
        event: 'opened',
        status: 'open',
        severity: 'major',
        at: expect.any(String),
      },
    });
    expect(acknowledged()!.message).toMatchObject({ event: 'acknowledged', status: 'acknowledged', rule_id: rule.id, device_id: id });
  });

  // The runtime's request counter is this process's on npm start's runtime only.
  (cloudAssemblyDir() ? it.skip : it)('cost nothing downstream when a console connects: its lifecycle events reach no queue', async () => {
    const token = await accessTokenOf(runtime.user_email!, runtime.user_password!);
    const watcher = await consoleClient(runtime.workspace_id, token);
    await watcher.client.subscribeAsync(`fleetstream/console/${runtime.workspace_id}/connection`, { qos: 0 });
    const { id, credentials } = await newDevice();
    const before = requestCounter().rows();
    const since = (match: (r: { service: string; operation: string; resource: string; caller: string }) => boolean) =>
      requestCounter()
        .since(before)
        .filter(match)
        .reduce((sum, r) => sum + r.requests, 0);
    const presenceRuns = () => since((r) => r.operation === 'RuleTriggered' && r.resource === '$aws/events/presence/+/+');
    const ruleSends = () => since((r) => r.service === 'SQS' && r.caller === IOT_RULES_CALLER);

    // A console connects and leaves; then a device does, told to the watcher once handled.
    const passing = await consoleClient(runtime.workspace_id, token);
    await passing.client.endAsync();
    const device = await connectDevice(credentials, { url: runtime.mqtt_url });
    devices.push(device);
    await device.end();
    await until(() => watcher.received.some((r) => r.message.device_id === id && r.message.connected === false), 'the device’s disconnection told', 30_000);
    await until(() => presenceRuns() >= 4, 'four lifecycle events through the presence rule', 30_000);

    // The rule saw the console's two events and the device's two; only the device's were sent on.
    expect(presenceRuns()).toBe(4);
    expect(ruleSends()).toBe(2);
  });

  it('refuse another account’s user on this workspace, and its subscribe to this workspace’s topics', async () => {
    const other = await otherUser('eve@example.com');

    await expect(consoleClient(runtime.workspace_id, other.token)).rejects.toMatchObject({ code: 5 });
    const own = await consoleClient(other.workspaceId, other.token);
    // mqtt.js rejects a subscribe its SUBACK refuses (0x80).
    const suback = (filter: string) =>
      own.client.subscribeAsync(filter, { qos: 0 }).then(
        (granted) => granted[0].qos,
        (error: Error) => error.message,
      );

    expect([
      await suback(`fleetstream/console/${runtime.workspace_id}/+`),
      await suback('fleetstream/console/#'),
      await suback(`fleetstream/console/${other.workspaceId}/+`),
    ]).toEqual(['Subscribe error: Unspecified error', 'Subscribe error: Unspecified error', 0]);
  });

  it('refuse a console that publishes (the connection is closed), a bad token, and a device on the WebSocket door', async () => {
    const token = await accessTokenOf(runtime.user_email!, runtime.user_password!);
    const live = await consoleClient(runtime.workspace_id, token);
    const closed = new Promise<void>((resolve) => live.client.once('close', () => resolve()));

    live.client.publish(`fleetstream/console/${runtime.workspace_id}/connection`, JSON.stringify({ device_id: 'dev-fake', connected: false }), { qos: 1 });
    await closed;
    await expect(consoleClient(runtime.workspace_id, `${token.slice(0, -4)}AAAA`)).rejects.toMatchObject({ code: 5 });
    await expect(consoleClient(runtime.workspace_id, token, 'dev-aaaaaaaaaaaaaaaaaaaa')).rejects.toMatchObject({ code: 5 });
  });
});
