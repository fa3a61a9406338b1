import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import mqtt from 'mqtt';
import { until, waitFor } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { connectDevice, type Credentials, type MqttDevice } from '../../helpers/mqtt-device';
import { cloudAssemblyDir, itOnTheSources, startRuntime } from '../../helpers/runtime';
import { depthOf } from '../../helpers/sqs';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
let hook: WebhookReceiver;
const devices: MqttDevice[] = [];

beforeAll(async () => {
  // The ingest reads a workspace again every 2 s (DEVICE_PLACE_CACHE_SECONDS): the bound within which a move shows.
  runtime = await startRuntime({ queues: { forward: { retry: { baseSeconds: 1, maxSeconds: 1 } } }, devicePlaceCacheSeconds: 2 });
  api = apiClient(runtime.base_url, runtime.api_key);
  hook = await startWebhookReceiver();
  const created = await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { name: 'all', url: hook.url, data: true, events: true });
  expect(created.status).toBe(200);
}, 120_000);
afterAll(async () => {
  for (const d of devices) d.client.end(true);
  await hook?.stop();
  await runtime?.stop();
});

const newDevice = async (): Promise<{ id: string; credentials: Credentials; identityId: string }> => {
  const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'mqtt-sensor' })).body.device;
  const created = await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`);
  return { id: device.id, credentials: created.body.credentials, identityId: created.body.identity.id };
};

const connected = async (credentials: Credentials, options: Parameters<typeof connectDevice>[1] = {}) => {
  const device = await connectDevice(credentials, options);
  devices.push(device);
  return device;
};

/** Events the webhook received for a device, of a type. */
const eventsOf = (deviceId: string, type: string) => hook.accepted().filter((e) => e.device_id === deviceId && e.type === type);
const waitForEvents = async (deviceId: string, type: string, count = 1) => {
  await until(() => eventsOf(deviceId, type).length >= count, `${count} ${type} event(s) of ${deviceId}`, 30_000);
  return eventsOf(deviceId, type);
};

/** The CONNACK refusal of a connection attempt, or 'connected'. */
const connectOutcome = async (url: string, options: mqtt.IClientOptions) => {
  const client = mqtt.connect(url, { protocolVersion: 4, clean: true, reconnectPeriod: 0, connectTimeout: 30_000, ...options });
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

describe('the MQTT door', () => {
  it('hands out credentials that name the TLS broker, with its CA, and keep the HTTPS address', async () => {
    const { credentials } = await newDevice();

    expect(credentials.endpoint).toEqual({
      host: '127.0.0.1',
      port: Number(new URL(runtime.mqtts_url).port),
      mode: 'secure',
      url: `${runtime.base_url}/device`,
    });
    expect(credentials.cacert).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('connects over TLS with the credentials file alone, and over the plain port, recording granted authentications', async () => {
    const { id, credentials } = await newDevice();

    const overTls = await connected(credentials);
    const tlsWasConnected = overTls.client.connected;
    await overTls.end();
    const overPlain = await connected(credentials, { url: runtime.mqtt_url });

    expect([tlsWasConnected, overPlain.client.connected]).toEqual([true, true]);
    const granted = await waitForEvents(id, 'authentication', 2);
    expect(granted[0].payload).toEqual({ clientid: id, proto: 'mqtt', error: '', verified: 'true', result: 'granted' });
  });

  itOnTheSources('refuses a TLS connection to a client that does not trust the broker (no cacert)', async () => {
    const { id, credentials } = await newDevice();

    const outcome = await connectOutcome(runtime.mqtts_url, { clientId: id, username: id, password: await deviceToken(credentials), rejectUnauthorized: true });

    expect(outcome).not.toBe('connected');
  });

  itOnTheSources.each([
    ['a bad signature', { prvkey: Buffer.alloc(32, 1).toString('base64') }, {}, 'bad signature'],
    ['a token too long-lived', {}, { expiresIn: 3 * 3600 }, 'token lifetime exceeds 3600 s'],
  ])('refuses %s with CONNACK 5 and a denied authentication event', async (_what, credentialChange, tokenOptions, reason) => {
    const { id, credentials } = await newDevice();
    const token = await deviceToken({ ...credentials, ...credentialChange }, tokenOptions);

    const outcome = await connectOutcome(runtime.mqtt_url, { clientId: id, username: id, password: token });

    expect(outcome).toBe(5);
    const [event] = await waitForEvents(id, 'authentication');
    expect(event.payload).toEqual({ clientid: id, proto: 'mqtt', error: reason, verified: 'false', result: 'denied' });
  });

  it('refuses a revoked identity and another device’s token, recording both on the device named', async () => {
    const revoked = await newDevice();
    await api.delete(`/workspaces/${runtime.workspace_id}/devices/${revoked.id}/identities/${revoked.identityId}`);
    const victim = await newDevice();
    const intruder = await newDevice();

    const revokedOutcome = await connectOutcome(runtime.mqtt_url, {
      clientId: revoked.id,
      username: revoked.id,
      password: await deviceToken(revoked.credentials),
    });
    const foreignOutcome = await connectOutcome(runtime.mqtt_url, {
      clientId: victim.id,
      username: victim.id,
      password: await deviceToken(intruder.credentials),
    });

    expect([revokedOutcome, foreignOutcome]).toEqual([5, 5]);
    expect((await waitForEvents(revoked.id, 'authentication'))[0].payload).toMatchObject({ error: 'identity revoked', result: 'denied' });
    expect((await waitForEvents(victim.id, 'authentication'))[0].payload).toMatchObject({ error: 'token of another device', result: 'denied' });
  });

  it('answers forged tokens naming a victim, over HTTPS and MQTT, with at most one authentication event a minute at its webhook', async () => {
    const victim = await newDevice();
    const forged = () => deviceToken({ ...victim.credentials, prvkey: Buffer.alloc(32, Math.floor(Math.random() * 256)).toString('base64') });
    const minutes = new Set([Math.floor(Date.now() / 60_000)]);

    const https = [];
    for (let i = 0; i < 40; i++) https.push((await deviceClient(runtime.base_url, await forged()).get('/status')).status);
    const overMqtt = [];
    for (let i = 0; i < 10; i++) overMqtt.push(await connectOutcome(runtime.mqtt_url, { clientId: victim.id, username: victim.id, password: await forged() }));
    minutes.add(Math.floor(Date.now() / 60_000));
    // Every refusal's event, if any, was sent before its answer: once the forward queue is empty, the receiver has them all.
    await until(async () => {
      const depth = await depthOf(runtime.queue_urls.forward);
      return depth.visible + depth.inFlight + depth.delayed === 0;
    }, 'the forward queue drained');

    expect([new Set(https), new Set(overMqtt)]).toEqual([new Set([401]), new Set([5])]);
    const sampled = eventsOf(victim.id, 'authentication');
    expect(sampled.length).toBeGreaterThanOrEqual(1);
    expect(sampled.length).toBeLessThanOrEqual(minutes.size);
    expect(sampled.every((e) => (e.payload as { verified: string }).verified === 'false')).toBe(true);
    // The device's own token is still recorded, whatever forgeries came before it.
    await connected(victim.credentials);
    await until(() => eventsOf(victim.id, 'authentication').some((e) => (e.payload as { result: string }).result === 'granted'), 'the granted event');
  });

  it('closes the open session of an identity as it is revoked, before the revocation answers, and refuses its token after', async () => {
    const { id, credentials, identityId } = await newDevice();
    const device = await connected(credentials);
    await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === true, 'connected state');
    const closed = new Promise<string>((resolve) => device.client.once('close', () => resolve('closed')));

    const revoked = await api.delete(`/workspaces/${runtime.workspace_id}/devices/${id}/identities/${identityId}`);
    // What the session sends once the revocation answered is never answered: the session is gone.
    device.client.publish(`j/up/${id}`, JSON.stringify({ key: '#now', value: {} }), { qos: 1 });
    const outcome = await Promise.race([closed, device.next('#now').then(() => 'answered')]);
    const again = await connectOutcome(runtime.mqtt_url, { clientId: id, username: id, password: await deviceToken(credentials) });

    expect(revoked.status).toBe(200);
    expect([outcome, again]).toEqual(['closed', 5]);
    const [disconnection] = await waitForEvents(id, 'disconnection');
    expect(disconnection.payload).toMatchObject({ reason: 'API_INITIATED_DISCONNECT' });
    await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === false, 'disconnected state');
  });

  itOnTheSources('drops what a revoked session sent as it was being closed (points, a manifest), and keeps what it sent before', async () => {
    const { id, credentials, identityId } = await newDevice();
    await connected(credentials);
    const revoked = await api.delete(`/workspaces/${runtime.workspace_id}/devices/${id}/identities/${identityId}`);
    const at = Date.parse(revoked.body.identity.revoked_at);
    // The broker received these from the session as it was being closed (from the revocation on) or
    // just before, and they were still on their queues: the rules' messages, as IoT Core sends them.
    const ruleMessage = (topic: string, value: unknown, receivedAt: number) =>
      JSON.stringify({ payload: Buffer.from(JSON.stringify(value)).toString('base64'), topic, received_at: receivedAt, client_id: id });
    const sqs = new SQSClient({ endpoint: runtime.sqs_endpoint, useQueueUrlAsEndpoint: false });
    const send = (queue: string, bodies: string[]) =>
      sqs.send(new SendMessageBatchCommand({ QueueUrl: runtime.queue_urls[queue], Entries: bodies.map((MessageBody, i) => ({ Id: String(i), MessageBody })) }));
    const drained = async (queue: string) => {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: runtime.queue_urls[queue],
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return Attributes.ApproximateNumberOfMessages === '0' && Attributes.ApproximateNumberOfMessagesNotVisible === '0';
    };

    await send('ingest', [ruleMessage(`j/data/${id}/late`, { n: 1 }, at), ruleMessage(`j/data/${id}/before`, { n: 0 }, at - 1)]);
    await send('mqtt', [
      ruleMessage(`j/up/${id}`, { key: '__manifest', value: { jobs: ['reboot'], conditions: [] } }, at),
      ruleMessage(`j/up/${id}`, { key: '__info', value: { v: 1 } }, at - 1),
    ]);
    await waitForEvents(id, 'os_info');
    const points = await waitFor(async () => {
      const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}`);
      if (!body.result.length) throw new Error('no point yet');
      return body.result;
    }, 'the point sent before the revocation');
    await until(async () => (await drained('ingest')) && (await drained('mqtt')), 'the ingest and MQTT queues drained', 30_000);
    sqs.destroy();

    expect(points.map((p: { tag: string }) => p.tag)).toEqual(['before']);
    expect((await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}`)).body.result.map((p: { tag: string }) => p.tag)).toEqual(['before']);
    expect((await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.manifest).toBeNull();
    expect(eventsOf(id, 'manifest')).toEqual([]);
  });

  itOnTheSources(
    'refuses a token that expired 10 days ago (CONNACK 5) as the HTTPS door refuses it (401), and takes one within the 60 s clock tolerance',
    async () => {
      const { id, credentials } = await newDevice();
      const stale = await deviceToken(credentials, { expiresIn: -10 * 86_400 });
      const skewed = await deviceToken(credentials, { expiresIn: -20 });

      const overMqtt = await connectOutcome(runtime.mqtt_url, { clientId: id, username: id, password: stale });
      const overHttps = await deviceClient(runtime.base_url, stale).get('/status');
      const withinTolerance = await connectOutcome(runtime.mqtt_url, { clientId: id, username: id, password: skewed });

      expect([overMqtt, overHttps.status, withinTolerance]).toEqual([5, 401, 'connected']);
      const events = (await waitForEvents(id, 'authentication', 3)).filter((e) => (e.payload as { proto: string }).proto === 'mqtt');
      expect(events.map((e) => e.payload)).toEqual(
        expect.arrayContaining([
          { clientid: id, proto: 'mqtt', error: 'token expired', verified: 'false', result: 'denied' },
          { clientid: id, proto: 'mqtt', error: '', verified: 'true', result: 'granted' },
        ]),
      );
    },
  );

  // IoT Core reports a refused subscribe only in its own logs: the template's door has no event for
  // it, so the event is npm start's alone.
  it('refuses a subscription to another device’s topic (SUBACK 0x80), with an authorization event on the sources', async () => {
    const me = await newDevice();
    const other = await newDevice();
    const device = await connected(me.credentials);

    const refusal = await device.client.subscribeAsync(`j/dn/${other.id}`, { qos: 1 }).then(
      () => undefined,
      (error: { packet?: { granted?: number[] } }) => error.packet?.granted,
    );

    expect(refusal).toEqual([128]);
    if (cloudAssemblyDir()) return;
    const [event] = await waitForEvents(me.id, 'authorization');
    expect(event.payload).toMatchObject({ clientid: me.id, result: 'denied', action: 'subscribe', topic: `j/dn/${other.id}` });
  });

  it('closes a connection that publishes on another device’s topic, records authorization and disconnection, and stores nothing', async () => {
    const me = await newDevice();
    const other = await newDevice();
    const device = await connected(me.credentials);
    const closed = new Promise<void>((resolve) => device.client.once('close', () => resolve()));

    device.client.publish(`j/data/${other.id}/temp`, JSON.stringify({ t: 1 }), { qos: 1 });
    await closed;

    const [authorization] = await waitForEvents(me.id, 'authorization');
    expect(authorization.payload).toMatchObject({ result: 'denied' });
    const [disconnection] = await waitForEvents(me.id, 'disconnection');
    expect(disconnection.payload).toMatchObject({ reason: 'AUTH_ERROR' });
    const stored = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${other.id}`);
    expect(stored.body.result).toEqual([]);
  });

  itOnTheSources('closes the connection of a publish over 128 KB, as IoT Core does (CLIENT_ERROR), and takes one of 128 KB', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const limit = 128 * 1024;

    // At the limit the broker takes it (the door then drops it: not a JSON point); the device stays connected.
    await device.client.publishAsync(`j/data/${id}/big`, Buffer.alloc(limit, 0x61), { qos: 1 });
    await device.up('#now', {});
    await device.next('#now');
    const closed = new Promise<string>((resolve) => device.client.once('close', () => resolve('closed')));
    device.client.publish(`j/up/${id}`, JSON.stringify({ key: '__manifest', value: { jobs: ['x'.repeat(limit)], conditions: [] } }), { qos: 1 });
    device.client.publish(`j/up/${id}`, JSON.stringify({ key: '#now', value: {} }), { qos: 1 });
    const outcome = await Promise.race([closed, device.next('#now', 2).then(() => 'answered')]);

    expect(outcome).toBe('closed');
    const [disconnection] = await waitForEvents(id, 'disconnection');
    expect(disconnection.payload).toMatchObject({ reason: 'CLIENT_ERROR' });
    expect((await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.manifest).toBeNull();
  });

  it('stores published data points (stamped at their arrival, to the microsecond) and forwards them to the webhook', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);

    await device.data('weather', { temp: 21.5 });
    await device.data('weather', { temp: 21.7 });

    const points = await waitFor(async () => {
      const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}&sort=timestamp_device`);
      if (body.result.length < 2) throw new Error(`${body.result.length} points`);
      return body.result;
    }, 'two stored points');
    expect(points.map((p: { payload: unknown }) => p.payload)).toEqual([{ temp: 21.5 }, { temp: 21.7 }]);
    // A cloud stamp: the millisecond of arrival (timestamp_in), and microseconds that keep points apart.
    expect(
      points.every(
        (p: { timestamp_device: string; timestamp_in: string }) =>
          p.timestamp_device.startsWith(p.timestamp_in.slice(0, -1)) && /\.\d{6}Z$/.test(p.timestamp_device),
      ),
    ).toBe(true);
    await until(() => hook.accepted().filter((e) => e.device_id === id && e.tag === 'weather').length >= 2, 'two data entries on the webhook');
  });

  itOnTheSources('carries a device’s new fleet and name in its published points once the ingest has read its workspace again after the move', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const fleet = (await api.post(`/workspaces/${runtime.workspace_id}/fleets`, { name: 'field' })).body.fleet;
    const storedOf = async () =>
      (await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}&sort=timestamp_device`)).body.result as Array<{
        fleet_id: string;
        payload: { n: number };
      }>;

    await device.data('place', { n: 0 });
    const before = await waitFor(async () => {
      const points = await storedOf();
      if (!points.length) throw new Error('no point yet');
      return points;
    }, 'the point before the move');
    const { status } = await api.put(`/workspaces/${runtime.workspace_id}/devices/${id}`, { name: 'moved-sensor', fleet_id: fleet.id });
    // A point a poll until one lands in the new fleet: within the 2 s bound, plus the data path's time.
    let sent = 0;
    await waitFor(async () => {
      await device.data('place', { n: ++sent });
      const points = await storedOf();
      if (!points.some((p) => p.fleet_id === fleet.id)) throw new Error(`${points.length} points, none in the new fleet`);
    }, 'a point in the new fleet');
    const after = await waitFor(async () => {
      const points = await storedOf();
      if (points.length < sent + 1) throw new Error(`${points.length} of ${sent + 1} points`);
      return points;
    }, 'every point sent');

    expect(status).toBe(200);
    expect(before[0].fleet_id).not.toBe(fleet.id);
    // Every point kept, in the order sent; once in the new fleet, the points stay there.
    expect(after.map((p) => p.payload.n)).toEqual(Array.from({ length: after.length }, (_, n) => n));
    const firstMoved = after.findIndex((p) => p.fleet_id === fleet.id);
    expect(after.slice(firstMoved).every((p) => p.fleet_id === fleet.id)).toBe(true);
    await until(
      () => hook.accepted().some((e) => e.device_id === id && e.tag === 'place' && e.device_name === 'moved-sensor' && e.fleet_id === fleet.id),
      'a webhook entry with the new name and fleet',
    );
  });

  it('keeps a burst of 500 QoS-1 publishes from one device whole, each with its own stamp, in the order they arrived', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const count = 500;

    // As fast as the client goes: on an idle machine many publishes share a millisecond (the
    // ingest's contract test covers a whole burst of one millisecond; a loaded machine spreads them).
    await Promise.all(Array.from({ length: count }, (_, n) => device.data('level', { n })));

    const points: Array<{ timestamp_device: string; timestamp_in: string; payload: { n: number } }> = await waitFor(
      async () => {
        const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}&sort=timestamp_device&size=1000`);
        if (body.result.length < count) throw new Error(`${body.result.length} of ${count} points`);
        return body.result;
      },
      `${count} stored points`,
      60_000,
    );
    expect(points.map((p) => p.payload.n).sort((a, b) => a - b)).toEqual(Array.from({ length: count }, (_, n) => n));
    expect(new Set(points.map((p) => p.timestamp_device)).size).toBe(count);
    // In arrival order: a point that arrived in a later millisecond is later. Within one
    // millisecond no order is known (IoT Core's timestamp() stops at milliseconds).
    for (let i = 1; i < count; i++) {
      if (points[i].timestamp_in !== points[i - 1].timestamp_in) expect(points[i].timestamp_in > points[i - 1].timestamp_in).toBe(true);
    }
    const byArrival = [...points].sort((a, b) => a.payload.n - b.payload.n);
    for (let n = 1; n < count; n++) expect(byArrival[n].timestamp_in >= byArrival[n - 1].timestamp_in).toBe(true);
    await until(() => hook.accepted().filter((e) => e.device_id === id && e.tag === 'level').length >= count, `${count} data entries on the webhook`, 60_000);
  });

  itOnTheSources('drops a malformed message stream without blocking the device’s other messages or changing anything else', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);

    await device.data('temp', 'not json {');
    await device.data('bad tag!', { v: 1 });
    await device.data('big', { blob: 'x'.repeat(4000) });
    await device.up('#status', 'x'.repeat(10)); // a status request with an odd value is still one
    device.client.publish(`j/up/${id}`, 'garbage', { qos: 1 });
    device.client.publish(`j/up/${id}`, JSON.stringify({ key: 'no-such-key', value: 1 }), { qos: 1 });
    device.client.publish(`j/up/${id}`, JSON.stringify({ key: '@unknown_job', value: {} }), { qos: 1 });
    await device.data('temp', { v: 42 });
    await device.up('#now', {});

    await device.next('#now');
    const points = await waitFor(async () => {
      const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${id}`);
      if (!body.result.length) throw new Error('no point yet');
      return body.result;
    }, 'the valid point');
    expect(points.map((p: { tag: string; payload: unknown }) => [p.tag, p.payload])).toEqual([['temp', { v: 42 }]]);
    expect(device.client.connected).toBe(true);
    const jobs = await api.get(`/devices/${id}/jobs`);
    expect(jobs.body.jobs).toEqual([]);
  });

  it('publishes a job scheduled while the device is connected at once, and completes it with the device’s @job result', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === true, 'connected state');

    await api.post(`/devices/${id}/jobs/reboot`, { value: { delay: 5 } });
    const delivered = await device.next('@reboot');
    await device.up('@reboot', { rebooted: true });

    expect(delivered.value).toEqual({ args: { delay: 5 } });
    const done = await waitFor(async () => {
      const { body } = await api.get(`/devices/${id}/jobs/reboot`);
      if (body.job.status !== 'done') throw new Error('still pending');
      return body.job;
    }, 'the job done');
    expect(done).toMatchObject({ status: 'done', result: { rebooted: true }, completed_at: expect.any(String) });
    const jobEvents = await waitForEvents(id, 'job', 2);
    expect(jobEvents.map((e) => e.direction).sort()).toEqual(['c2d', 'd2c']);
  });

  it('publishes a fleet job at once to the fleet’s connected devices, and to an offline one through #status', async () => {
    const fleet = (await api.post(`/workspaces/${runtime.workspace_id}/fleets`, { name: `live-${Date.now()}` })).body.fleet;
    const members = [await newDevice(), await newDevice(), await newDevice()];
    for (const m of members) await api.put(`/workspaces/${runtime.workspace_id}/devices/${m.id}`, { name: 'member', fleet_id: fleet.id });
    const online = [await connected(members[0].credentials), await connected(members[1].credentials)];
    for (const m of members.slice(0, 2)) {
      await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${m.id}`)).body.device.connected === true, 'connected state');
    }

    const scheduled = await api.post(`/workspaces/${runtime.workspace_id}/jobs/sync?fleet=${fleet.id}`, { value: { full: true } });
    const delivered = await Promise.all(online.map((d) => d.next('@sync')));
    const late = await connected(members[2].credentials);
    await late.up('#status', {});
    const status = await late.next('#status');

    expect(scheduled.body.job.devices.sort()).toEqual(members.map((m) => m.id).sort());
    expect(delivered.map((m) => m.value)).toEqual([{ args: { full: true } }, { args: { full: true } }]);
    expect(late.received.filter((m) => m.key === '@sync')).toEqual([]);
    expect(status.value.expected).toEqual({ '@sync': { v: { args: { full: true } } } });
  });

  itOnTheSources('keeps a device connected when the same client ID connects again and takes over', async () => {
    const { id, credentials } = await newDevice();
    const first = await connected(credentials);
    const closed = new Promise<void>((resolve) => first.client.once('close', () => resolve()));

    const second = await connected(credentials);
    await closed;
    const [disconnection] = await waitForEvents(id, 'disconnection');
    await waitForEvents(id, 'connection', 2);

    expect(disconnection.payload).toMatchObject({ reason: 'DUPLICATE_CLIENTID' });
    expect(second.client.connected).toBe(true);
    expect((await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected).toBe(true);
  });

  itOnTheSources('delivers a job scheduled while the device was offline in the answer to its #status, and keeps a non-object result', async () => {
    const { id, credentials } = await newDevice();
    await api.post(`/devices/${id}/jobs/calibrate`, { value: { level: 3 } });
    const device = await connected(credentials);

    await device.up('#status', {});
    const status = await device.next('#status');
    await device.up('@calibrate', 7);

    expect(status.value).toEqual({ expected: { '@calibrate': { v: { args: { level: 3 } } } }, current: {} });
    const done = await waitFor(async () => {
      const { body } = await api.get(`/devices/${id}/jobs/calibrate`);
      if (body.job.status !== 'done') throw new Error('still pending');
      return body.job;
    }, 'the job done');
    expect(done.result).toEqual({ value: 7 });
    expect((await waitForEvents(id, 'status'))[0].payload).toEqual({ pending_jobs: ['calibrate'], pending_fota: null });
  });

  it('delivers FOTA both ways: live, in #status after the jobs, and completed by the device’s @fota outcome', async () => {
    const { id, credentials } = await newDevice();
    await api.post(`/devices/${id}/jobs/prepare`, { value: {} });
    await api.post(`/devices/${id}/fota/fw-main/versions/1.2.3`);
    const device = await connected(credentials);

    await device.up('#status', {});
    const status = await device.next('#status');
    const fotaApart = await device.next('@fota');
    await device.up('@fota', { fw_version: '1.2.3', result: 'fail', msg: 'flash write error' });

    // A simple client ignores an answer holding @fota: with jobs pending, the FOTA comes apart.
    expect(status.value.expected).toEqual({ '@prepare': { v: { args: {} } } });
    expect(fotaApart.value).toEqual({ args: { firmware_id: 'fw-main', firmware_version: '1.2.3', fw_version: '1.2.3' } });
    await until(async () => (await api.get(`/devices/${id}/fota`)).body.fota.status === 'failed', 'the FOTA failed');
    const [outcome] = (await waitForEvents(id, 'fota', 2)).filter((e) => e.direction === 'd2c');
    expect(outcome.payload).toMatchObject({ status: 'failed', message: 'flash write error' });

    await api.post(`/devices/${id}/fota/fw-main/versions/1.3.0`);
    const live = await device.next('@fota', 2);
    expect(live.value.args).toMatchObject({ firmware_version: '1.3.0' });
    await device.up('#status', {});
    expect((await device.next('#status', 2)).value.expected).toEqual({
      '@prepare': { v: { args: {} } },
    });
    await device.up('@prepare', {});
    await until(async () => (await api.get(`/devices/${id}/jobs/prepare`)).body.job.status === 'done', 'the job done');
    await device.up('#status', {});
    expect((await device.next('#status', 3)).value.expected).toEqual({
      '@fota': { v: { args: { firmware_id: 'fw-main', firmware_version: '1.3.0', fw_version: '1.3.0' } } },
    });
    await device.up('@fota', { fw_version: '1.3.0', result: 'success' });
    await until(async () => (await api.get(`/devices/${id}/fota`)).body.fota.status === 'done', 'the FOTA done');
  });

  itOnTheSources('answers #now with the time and records a timestamp event', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const before = Date.now();

    await device.up('#now', {});
    const now = await device.next('#now');

    expect(now.value.ms).toBeGreaterThanOrEqual(before);
    expect(now.value.ms).toBeLessThanOrEqual(Date.now());
    expect(now.value.s).toBe(Math.floor(now.value.ms / 1000));
    await waitForEvents(id, 'timestamp');
  });

  it('keeps open conditions per device and answers #conditions', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);

    await device.up('condition', { uuid: 'c-1', tag: 'overheat', payload: { t: 90 }, start: '2026-02-01T10:00:00Z' });
    await device.up('condition', { uuid: 'c-2', tag: 'door', payload: {}, start: '2026-02-01T10:01:00Z' });
    await device.up('condition', { uuid: 'c-1', payloadf: { t: 60 }, finish: '2026-02-01T10:05:00Z' });
    await device.up('condition', { uuid: 'broken' });

    await until(
      async () => {
        await device.up('#conditions', {});
        const answers = device.received.filter((m) => m.key === '#conditions');
        await until(() => device.received.filter((m) => m.key === '#conditions').length > answers.length, 'an answer', 20_000);
        const last = device.received.filter((m) => m.key === '#conditions').at(-1)!;
        return JSON.stringify(last.value) === JSON.stringify({ 'c-2': { tag: 'door', start: '2026-02-01T10:01:00.000Z' } });
      },
      'only c-2 open',
      30_000,
    );
    // The workspace's list keeps the closed one too, newest first (spec/fleet-state.md §4).
    const listed = await api.get(`/workspaces/${runtime.workspace_id}/conditions?device=${id}`);
    expect(listed.status).toBe(200);
    expect(
      listed.body.conditions.map((c: { uuid: string; status: string; duration_seconds: number | null }) => [c.uuid, c.status, c.duration_seconds]),
    ).toEqual([
      ['c-2', 'open', null],
      ['c-1', 'closed', 300],
    ]);
    expect(listed.body.conditions[1]).toMatchObject({
      device_id: id,
      tag: 'overheat',
      payload: { t: 90 },
      finish_payload: { t: 60 },
      finish: '2026-02-01T10:05:00.000Z',
    });
  });

  itOnTheSources('opens and closes conditions over HTTPS too, the same records as MQTT’s, and refuses bad ones writing nothing', async () => {
    const { id, credentials } = await newDevice();
    const https = deviceClient(runtime.base_url, await deviceToken(credentials));
    const listOf = async (query: string) =>
      (await api.get(`/workspaces/${runtime.workspace_id}/conditions?device=${id}${query}`)).body.conditions.map((c: { uuid: string }) => c.uuid);

    const refused = [
      await https.post('/conditions', { uuid: 'bad', tag: 'has space' }),
      await https.post('/conditions', { uuid: 'bad', tag: 'overheat', finish: '2026-02-01T10:00:00Z' }),
      await https.post('/conditions', { uuid: 'bad', tag: 'overheat', start: '2999-01-01T00:00:00Z' }),
    ];
    const unknown = await https.post('/conditions', { uuid: 'never-opened' });
    const opened = await https.post('/conditions', { uuid: 'h-1', tag: 'overheat', payload: { t: 9 }, start: '2026-03-01T10:00:00Z' });
    const untimed = await https.post('/conditions', { uuid: 'h-2', tag: 'door' });
    const closed = await https.post('/conditions', { uuid: 'h-1', finish_payload: { t: 4 }, finish: '2026-03-01T10:00:42.5Z' });
    const closedAgain = await https.post('/conditions', { uuid: 'h-1', finish: '2026-03-01T11:00:00Z' });

    expect(refused.map((r) => [r.status, r.body.error.code])).toEqual(Array(3).fill([400, 'validation_error']));
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
    expect(opened.status).toBe(200);
    expect(opened.body.condition).toMatchObject({ uuid: 'h-1', device_id: id, status: 'open', start: '2026-03-01T10:00:00.000Z', finish: null });
    expect(Date.parse(untimed.body.condition.start)).toBeGreaterThan(Date.now() - 60_000);
    expect(closed.body.condition).toMatchObject({ status: 'closed', finish_payload: { t: 4 }, duration_seconds: 42.5 });
    expect(closedAgain.body.condition).toEqual(closed.body.condition);
    expect(await listOf('')).toEqual(['h-2', 'h-1']);
    expect(await listOf('&status=closed&min_duration_seconds=40')).toEqual(['h-1']);
    expect(await listOf('&status=closed&min_duration_seconds=43')).toEqual([]);
    const device = await connected(credentials);
    await device.up('#conditions', {});
    expect(Object.keys((await device.next('#conditions')).value)).toEqual(['h-2']);
  });

  itOnTheSources('keeps nothing of a manifest or a condition payload over 8 KB: sizes are checked before anything is stored', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const large = 'x'.repeat(8 * 1024);

    await device.up('__manifest', { jobs: [large] });
    await device.up('condition', { uuid: 'large', tag: 'overheat', payload: large, start: '2026-02-01T10:00:00Z' });
    await device.up('condition', { uuid: 'small', tag: 'door', payload: { open: true }, start: '2026-02-01T10:01:00Z' });
    // Each publish was on the MQTT queue before its PUBACK: once the queue is empty, each was handled.
    await until(async () => {
      const depth = await depthOf(runtime.queue_urls.mqtt);
      return depth.visible + depth.inFlight + depth.delayed === 0;
    }, 'the MQTT queue drained');
    await device.up('#conditions', {});
    const answer = await device.next('#conditions');

    expect(answer.value).toEqual({ small: { tag: 'door', start: '2026-02-01T10:01:00.000Z' } });
    expect((await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.manifest).toBeNull();
    expect(eventsOf(id, 'manifest')).toEqual([]);
  });

  it('keeps the manifest on the device and forwards it, and reports the private and system keys as their events', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);
    const manifest = { jobs: ['reboot', 'calibrate'], conditions: ['overheat'] };

    await device.up('__manifest', manifest);
    await device.up('__info', { version: '1.0' });
    await device.up('__stats', { mem: 1 });
    await device.up('__gnss', { lat: 1 });
    await device.up('__cellular', { rssi: -70 });
    await device.up('__custom', { a: 1 });
    await device.up('_weak', { b: 2 });

    expect((await waitForEvents(id, 'manifest'))[0].payload).toEqual(manifest);
    for (const type of ['os_info', 'stats_info', 'gnss_info', 'cellular_info']) await waitForEvents(id, type);
    expect((await waitForEvents(id, 'private_strong'))[0].payload).toEqual({ key: '__custom', value: { a: 1 } });
    expect((await waitForEvents(id, 'private_weak'))[0].payload).toEqual({ key: '_weak', value: { b: 2 } });
    const { body } = await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`);
    expect(body.device.manifest).toEqual(manifest);
  });

  it('records connection and disconnection with their payloads, and shows the state on the device', async () => {
    const { id, credentials } = await newDevice();
    const before = (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device;
    const device = await connected(credentials);

    const [connection] = await waitForEvents(id, 'connection');
    await until(async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === true, 'connected');
    await device.end();
    const [disconnection] = await waitForEvents(id, 'disconnection');
    const after = await waitFor(async () => {
      const { body } = await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`);
      if (body.device.connected) throw new Error('still connected');
      return body.device;
    }, 'disconnected');

    expect(before).toMatchObject({ connected: false, last_connected_at: null, last_disconnected_at: null, manifest: null });
    expect(connection.payload).toEqual({ device_ip: '127.0.0.1', connected_at: expect.any(String) });
    expect(disconnection.payload).toMatchObject({ reason: 'CLIENT_INITIATED_DISCONNECT' });
    expect(after.last_connected_at).toBe((connection.payload as { connected_at: string }).connected_at);
    expect(Date.parse(after.last_disconnected_at)).toBeGreaterThanOrEqual(Date.parse(after.last_connected_at));
  });
});

describe('device state (spec/fleet-state.md §3) over the API and both device doors', () => {
  const stateUrl = (id: string) => `/workspaces/${runtime.workspace_id}/devices/${id}/state`;
  const patchState = (id: string, body: unknown) => api.call('PATCH', stateUrl(id), body);
  const isConnected = (id: string) => async () => (await api.get(`/workspaces/${runtime.workspace_id}/devices/${id}`)).body.device.connected === true;

  it('merges desired keys with a version check, answers the delta, and refuses bad input with nothing written', async () => {
    const { id } = await newDevice();
    const empty = await api.get(stateUrl(id));

    const first = await patchState(id, { desired: { interval: 60, mode: 'eco' } });
    const stale = await patchState(id, { desired: { interval: 10 }, version: 0 });
    const bad = await Promise.all([
      patchState(id, { desired: { '@x': 1 } }),
      patchState(id, { desired: { big: 'x'.repeat(17 * 1024) } }),
      patchState(id, { desired: { deep: { a: { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } } } } }),
      patchState(id, { desired: { a: 1 }, version: 1.5 }),
    ]);
    const second = await patchState(id, { desired: { mode: null, cfg: { a: [1] } }, version: 1 });
    const missing = await patchState('dev-00000000000000000000', { desired: { a: 1 } });

    expect(empty.body.state).toEqual({ desired: {}, reported: {}, delta: {}, version: 0, desired_at: {}, reported_at: {} });
    expect(first.body.state).toMatchObject({ desired: { interval: 60, mode: 'eco' }, delta: { interval: 60, mode: 'eco' }, version: 1 });
    expect([stale.status, stale.body.error.code]).toEqual([409, 'conflict']);
    expect(bad.map((r) => [r.status, r.body.error.details[0].field])).toEqual([
      [400, 'body.desired.@x'],
      [400, 'body.desired'],
      [400, 'body.desired.deep'],
      [400, 'body.version'],
    ]);
    expect(second.body.state).toMatchObject({ desired: { interval: 60, cfg: { a: [1] } }, version: 2 });
    expect(missing.status).toBe(404);
    expect((await api.get(stateUrl(id))).body.state).toEqual(second.body.state);
  });

  it('tells a connected device its desired changes on j/dn (#state), answers #status with state keys, and takes #state reports', async () => {
    const { id, credentials } = await newDevice();
    await patchState(id, { desired: { interval: 60, mode: 'eco' } });
    const device = await connected(credentials);
    await until(isConnected(id), 'connected state');

    await device.up('#status', {});
    const status = await device.next('#status');
    await patchState(id, { desired: { interval: 30, mode: null } });
    const live = await device.next('#state');
    await device.up('#state', { reported: { interval: 30, fw: '1.2.0' } });
    const reported = await waitFor(async () => {
      const { body } = await api.get(stateUrl(id));
      if (!body.state.reported.interval) throw new Error('not reported yet');
      return body.state;
    }, 'the report stored');
    await device.up('#status', {});
    const again = await device.next('#status', 2);

    expect(status.value).toEqual({ expected: { interval: { v: 60 }, mode: { v: 'eco' } }, current: {} });
    expect(live.value).toEqual({ desired: { interval: 30, mode: null }, version: 2 });
    expect(reported).toMatchObject({ desired: { interval: 30 }, reported: { interval: 30, fw: '1.2.0' }, delta: {}, version: 2 });
    expect(again.value).toEqual({ expected: { interval: { v: 30 } }, current: { interval: { v: 30 }, fw: { v: '1.2.0' } } });
    // Two #status requests, two desired changes and a report: five status events.
    const events = await waitForEvents(id, 'status', 5);
    expect(events.filter((e) => e.direction === 'c2d').map((e) => e.payload)).toEqual([
      { desired: { interval: 60, mode: 'eco' }, version: 1 },
      { desired: { interval: 30, mode: null }, version: 2 },
    ]);
    expect(events.filter((e) => e.direction === 'd2c' && 'reported' in (e.payload as object)).map((e) => e.payload)).toEqual([
      { reported: { interval: 30, fw: '1.2.0' } },
    ]);
  });

  itOnTheSources('drops a bad #state report, keeping nothing of it, and records it as a status event with its error', async () => {
    const { id, credentials } = await newDevice();
    const device = await connected(credentials);

    await device.up('#state', { reported: { ok: 1, '@x': 2 } });
    await device.up('#state', { reported: { good: true } });

    const errors = () => eventsOf(id, 'status').filter((e) => 'error' in (e.payload as object));
    await until(() => errors().length > 0, 'the bad report recorded', 30_000);
    const [event] = errors();
    expect(event).toMatchObject({ direction: 'd2c', payload: { error: expect.stringContaining('value.reported.@x') } });
    await until(async () => (await api.get(stateUrl(id))).body.state.reported.good === true, 'the good report stored');
    expect((await api.get(stateUrl(id))).body.state.reported).toEqual({ good: true });
  });

  it('serves the state over HTTPS: GET and POST /device/state, and the desired state in GET /device/status', async () => {
    const { id, credentials } = await newDevice();
    const https = deviceClient(runtime.base_url, await deviceToken(credentials));
    await patchState(id, { desired: { interval: 60 } });

    const status = await https.get('/status');
    const posted = await https.post('/state', { reported: { interval: 60, extra: 'x' } });
    const bad = await https.post('/state', { reported: { _hidden: 1 } });
    const read = await https.get('/state');

    expect(status.body.state).toEqual({ desired: { interval: 60 }, version: 1 });
    expect(posted.body.state).toEqual({ desired: { interval: 60 }, reported: { interval: 60, extra: 'x' }, delta: {}, version: 1 });
    expect([bad.status, bad.body.error.details[0].field]).toEqual([400, 'body.reported._hidden']);
    expect(read.body).toEqual(posted.body);
  });

  itOnTheSources('finds devices by their reported and desired state (search over state.*)', async () => {
    const [slow, fast] = [await newDevice(), await newDevice()];
    // Named apart from the other tests' devices, which report and desire intervals too.
    const name = `state-search-${Date.now()}`;
    for (const d of [slow, fast]) await api.call('PATCH', `/workspaces/${runtime.workspace_id}/devices/${d.id}`, { name });
    const https = async (d: { credentials: Credentials }) => deviceClient(runtime.base_url, await deviceToken(d.credentials));
    await (await https(slow)).post('/state', { reported: { interval: 30 } });
    await (await https(fast)).post('/state', { reported: { interval: 60 } });
    await patchState(slow.id, { desired: { interval: 60 } });

    const q = (query: string) => api.get(`/workspaces/${runtime.workspace_id}/devices?q=${encodeURIComponent(`name = "${name}" AND ${query}`)}`);
    const stillSlow = await q('state.reported.interval = 30');
    const wanted = await q('state.desired.interval = 60');

    expect(stillSlow.body.devices.map((d: { id: string }) => d.id)).toEqual([slow.id]);
    expect(wanted.body.devices.map((d: { id: string }) => d.id)).toEqual([slow.id]);
  });

  itOnTheSources('lets a client that knows only jobs (ZDM-style) run its jobs when desired keys are in #status', async () => {
    const { id, credentials } = await newDevice();
    await patchState(id, { desired: { interval: 60 } });
    await api.post(`/devices/${id}/jobs/reboot`, { value: { delay: 1 } });
    const device = await connected(credentials);

    await device.up('#status', {});
    const { value } = await device.next('#status');
    // The ZDM client runs each `@` key of `expected` and ignores the others.
    for (const [key, entry] of Object.entries(value.expected as Record<string, { v: { args?: unknown } }>)) {
      if (key.startsWith('@')) await device.up(key, { ran: entry.v.args });
    }

    expect(Object.keys(value.expected).sort()).toEqual(['@reboot', 'interval']);
    await until(async () => (await api.get(`/devices/${id}/jobs/reboot`)).body.job.status === 'done', 'the job done');
    expect((await api.get(`/devices/${id}/jobs/reboot`)).body.job.result).toEqual({ ran: { delay: 1 } });
  });
});
