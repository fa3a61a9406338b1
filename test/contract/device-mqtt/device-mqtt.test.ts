import { createDevice } from '../../../lambdas/domain/registry/devices';
import { authorizeMqttConnect, devicePolicy, handleMqttQueueMessages, type DeviceMqttDeps, type RuleMessage } from '../../../lambdas/domain/doors/device-mqtt';
import { deviceQuota, hundredthOf } from '../../../lambdas/domain/limits/device-quota';
import { limitsMemory } from '../../../lambdas/domain/limits/limits';
import { recordUsage } from '../../../lambdas/domain/limits/usage';
import { createIdentity } from '../../../lambdas/domain/registry/identities';
import { CONDITION_PAYLOAD_MAX_BYTES, EVENT_PAYLOAD_MAX_BYTES, type IngestMessage } from '../../../lambdas/schemas/device-api';
import type { EventMessage } from '../../../lambdas/schemas/forward';
import type { Db } from '../../../lambdas/shared/clients';
import type { DownMessage } from '../../../lambdas/stores/device-channel';
import { listOpenConditionsOfDevice } from '../../../lambdas/stores/device-mqtt-store';
import { getDeviceOfWorkspace } from '../../../lambdas/stores/device-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { deviceToken } from '../../helpers/device-token';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const ARN = 'arn:aws:iot:eu-west-1:123456789012';
const HTTPS = 'http://127.0.0.1:3000/v3/device';

const recordingDeps = (failPublish = false) => {
  const queued: IngestMessage[] = [];
  const forwarded: EventMessage[] = [];
  const published: Array<{ deviceId: string; message: DownMessage }> = [];
  const relayed: RuleMessage[] = [];
  const deps: DeviceMqttDeps = {
    db,
    enqueue: async (messages) => void queued.push(...messages),
    relayData: async (messages) => void relayed.push(...messages),
    forward: async (messages) => void forwarded.push(...messages),
    publish: async (deviceId, message) => {
      if (failPublish) throw new Error('data plane down');
      published.push({ deviceId, message });
    },
    // The devices' daily quotas as deployed, at their defaults (test/e2e/device-quotas.test.ts holds them to their limits).
    quotas: {
      events: deviceQuota(db, 'events', { limits: limitsMemory(db, { ttlMs: 0 }), slice: hundredthOf, max: 100 }),
      upMessages: deviceQuota(db, 'up_messages', { limits: limitsMemory(db, { ttlMs: 0 }), slice: hundredthOf, max: 100 }),
      usage: async (tally) => void (await recordUsage(db, tally)),
    },
  };
  return { deps, queued, forwarded, published, relayed };
};

const newDevice = async () => {
  const account = await newAccount(db);
  const device = await createDevice(db, account.caller, account.workspace_id, { name: 'sensor', phys_id: '' });
  const { credentials } = await createIdentity(db, account.caller, account.workspace_id, device.id, { type: 'sym' }, HTTPS, { url: '', cacert: '' });
  return { ...account, device, credentials };
};

let sequence = 0;
const record = (body: unknown) => ({ messageId: `m-${(sequence += 1)}`, body: typeof body === 'string' ? body : JSON.stringify(body) });
const publish = (topic: string, payload: unknown, receivedAt = Date.parse('2026-03-01T10:00:00.000Z')) =>
  record({ topic, payload: Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)).toString('base64'), received_at: receivedAt });

describe('the custom authorizer’s answer', () => {
  it('grants a device its own policy, with IoT Core’s answer fields', async () => {
    const { device, credentials } = await newDevice();
    const { deps, forwarded } = recordingDeps();

    const answer = await authorizeMqttConnect(db, deps.forward, { clientId: device.id, username: device.id, password: await deviceToken(credentials) }, ARN);

    expect(answer).toEqual({
      isAuthenticated: true,
      principalId: device.id.replace('-', ''),
      disconnectAfterInSeconds: 86_400,
      refreshAfterInSeconds: 600,
      policyDocuments: [JSON.stringify(devicePolicy(device.id, ARN))],
      context: expect.objectContaining({ deviceId: device.id }),
    });
    expect(answer.principalId).toMatch(/^[A-Za-z0-9]{1,128}$/);
    expect(forwarded.map((e) => e.payload)).toEqual([{ clientid: device.id, proto: 'mqtt', error: '', verified: 'true', result: 'granted' }]);
  });

  it.each([
    ['a client ID other than the username', (id: string) => ({ clientId: 'someone', username: id })],
    ['no username', () => ({ clientId: undefined, username: undefined })],
  ])('denies %s', async (_what, names) => {
    const { device, credentials } = await newDevice();
    const { deps } = recordingDeps();

    const answer = await authorizeMqttConnect(db, deps.forward, { ...names(device.id), password: await deviceToken(credentials) }, ARN);

    expect(answer).toMatchObject({ isAuthenticated: false, policyDocuments: [] });
  });

  it('refuses a token expired past the 60 s clock tolerance, as the HTTPS door does, and takes one within it', async () => {
    const { device, credentials } = await newDevice();
    const { deps, forwarded } = recordingDeps();
    const connect = async (expiresIn: number) =>
      authorizeMqttConnect(db, deps.forward, { clientId: device.id, username: device.id, password: await deviceToken(credentials, { expiresIn }) }, ARN);

    const late = await connect(-90);
    const skewed = await connect(-30);

    expect([late.isAuthenticated, skewed.isAuthenticated]).toEqual([false, true]);
    expect(forwarded.map((e) => e.payload)).toEqual([
      { clientid: device.id, proto: 'mqtt', error: 'token expired', verified: 'false', result: 'denied' },
      { clientid: device.id, proto: 'mqtt', error: '', verified: 'true', result: 'granted' },
    ]);
  });
});

describe('the MQTT queue’s messages', () => {
  it('passes j/data publishes a deployment before the data rule’s own queue left here on to the ingest queue, unchanged', async () => {
    const { device } = await newDevice();
    const { deps, queued, relayed } = recordingDeps();
    const data = [publish(`j/data/${device.id}/temp`, { v: 1 }), publish(`j/data/${device.id}/temp`, 'not json {')];

    const failed = await handleMqttQueueMessages(deps, [...data, publish(`j/up/${device.id}`, { key: 'whatever', value: 1 })]);

    expect(failed).toEqual([]);
    expect(relayed).toEqual(data.map((d) => JSON.parse(d.body)));
    expect(queued).toEqual([]);
  });

  it('retries the data publishes it could not pass on', async () => {
    const { device } = await newDevice();
    const { deps } = recordingDeps();
    const data = publish(`j/data/${device.id}/temp`, { v: 1 });

    const failed = await handleMqttQueueMessages({ ...deps, relayData: () => Promise.reject(new Error('SQS is down')) }, [
      data,
      publish(`j/up/${device.id}`, { key: 'whatever', value: 1 }),
    ]);

    expect(failed).toEqual([data.messageId]);
  });

  it('answers #status with pending jobs and the FOTA apart, and #now, on the device’s j/dn', async () => {
    const { device, caller } = await newDevice();
    const { scheduleJob } = await import('../../../lambdas/domain/fleet-ops/jobs');
    const { scheduleFota } = await import('../../../lambdas/domain/fleet-ops/fota');
    await scheduleJob(db, caller, device.id, 'reboot', { delay: 1 });
    await scheduleFota(db, caller, device.id, { firmwareId: 'fw', firmwareVersion: '2.0' });
    const { deps, published, forwarded } = recordingDeps();

    await handleMqttQueueMessages(deps, [publish(`j/up/${device.id}`, { key: '#status', value: {} })]);
    await handleMqttQueueMessages(deps, [publish(`j/up/${device.id}`, { key: '#now', value: {} })]);

    expect(published.map((p) => p.message)).toEqual([
      { key: '#status', value: { expected: { '@reboot': { v: { args: { delay: 1 } } } }, current: {} } },
      { key: '@fota', value: { args: { firmware_id: 'fw', firmware_version: '2.0', fw_version: '2.0' } } },
      { key: '#now', value: { s: expect.any(Number), ms: expect.any(Number) } },
    ]);
    expect(published.every((p) => p.deviceId === device.id)).toBe(true);
    expect(forwarded.map((e) => e.type)).toEqual(['status', 'timestamp']);
  });

  it('retries a j/up message whose answer could not be published, and not the others of the batch', async () => {
    const { device } = await newDevice();
    const { deps } = recordingDeps(true);
    const status = publish(`j/up/${device.id}`, { key: '#status', value: {} });

    const failed = await handleMqttQueueMessages(deps, [
      status,
      publish(`j/up/${device.id}`, { key: 'whatever', value: 1 }),
      publish(`j/data/${device.id}/t`, 1),
    ]);

    expect(failed).toEqual([status.messageId]);
  });

  it('completes a job with the device’s result (as the HTTPS result route does) and ignores an unknown job without failing', async () => {
    const { device, caller } = await newDevice();
    const { scheduleJob, getJob } = await import('../../../lambdas/domain/fleet-ops/jobs');
    await scheduleJob(db, caller, device.id, 'calibrate', {});
    const { deps, forwarded } = recordingDeps();

    const failed = await handleMqttQueueMessages(deps, [
      publish(`j/up/${device.id}`, { key: '@calibrate', value: { ok: true } }),
      publish(`j/up/${device.id}`, { key: '@nosuchjob', value: {} }),
    ]);

    expect(failed).toEqual([]);
    expect(await getJob(db, caller, device.id, 'calibrate')).toMatchObject({ status: 'done', result: { ok: true } });
    // Its d2c event comes from the registry stream, as for the HTTPS door's result route.
    expect(forwarded.filter((e) => e.type === 'job')).toEqual([]);
  });

  it(`keeps and forwards nothing of a manifest over ${EVENT_PAYLOAD_MAX_BYTES} bytes, and takes one at the limit`, async () => {
    const { device } = await newDevice();
    const { deps, queued } = recordingDeps();
    // `{"jobs":["xx…"]}`: 13 bytes around the name.
    const manifest = (bytes: number) => ({ jobs: ['x'.repeat(bytes - 13)] });
    expect(Buffer.byteLength(JSON.stringify(manifest(EVENT_PAYLOAD_MAX_BYTES)))).toBe(EVENT_PAYLOAD_MAX_BYTES);

    const kept = async () => ((await getDeviceOfWorkspace(db, device.workspace_id, device.id)) as { manifest?: unknown } | undefined)?.manifest;

    await handleMqttQueueMessages(deps, [publish(`j/up/${device.id}`, { key: '__manifest', value: manifest(EVENT_PAYLOAD_MAX_BYTES + 1) })]);
    const afterTooLarge = await kept();
    await handleMqttQueueMessages(deps, [publish(`j/up/${device.id}`, { key: '__manifest', value: manifest(EVENT_PAYLOAD_MAX_BYTES) })]);

    expect(afterTooLarge).toBeUndefined();
    expect(await kept()).toEqual(manifest(EVENT_PAYLOAD_MAX_BYTES));
    expect(queued.flatMap((m) => (m.kind === 'events' ? m.events.map((e) => e.type) : []))).toEqual(['manifest']);
  });

  it(`opens no condition whose payload is over ${CONDITION_PAYLOAD_MAX_BYTES} bytes, and opens one at the limit`, async () => {
    const { device } = await newDevice();
    const { deps } = recordingDeps();
    const payload = (bytes: number) => 'x'.repeat(bytes - 2); // a JSON string: its two quotes count
    const open = (uuid: string, bytes: number) =>
      publish(`j/up/${device.id}`, { key: 'condition', value: { uuid, tag: 'overheat', payload: payload(bytes), start: '2026-03-01T10:00:00Z' } });

    const failed = await handleMqttQueueMessages(deps, [open('too-large', CONDITION_PAYLOAD_MAX_BYTES + 1), open('at-limit', CONDITION_PAYLOAD_MAX_BYTES)]);

    expect(failed).toEqual([]);
    expect((await listOpenConditionsOfDevice(db, device.id)).map((c) => c.uuid)).toEqual(['at-limit']);
  });

  it('applies presence in timestamp order: a late connected event does not undo a newer disconnection', async () => {
    const { device } = await newDevice();
    const { deps, forwarded } = recordingDeps();
    const presence = (eventType: 'connected' | 'disconnected', timestamp: number, extra = {}) =>
      record({ topic: `$aws/events/presence/${eventType}/${device.id}`, clientId: device.id, timestamp, eventType, ...extra });

    await handleMqttQueueMessages(deps, [presence('disconnected', 2000, { disconnectReason: 'AUTH_ERROR' })]);
    await handleMqttQueueMessages(deps, [presence('connected', 1000, { ipAddress: '192.0.2.7' })]);

    const stored = (await getDeviceOfWorkspace(db, device.workspace_id, device.id)) as unknown as Record<string, unknown>;
    expect(stored).toMatchObject({ connected: false, last_disconnected_at: new Date(2000).toISOString() });
    expect(forwarded.map((e) => [e.type, e.payload])).toEqual([
      ['authorization', expect.objectContaining({ result: 'denied' })],
      ['disconnection', { disconnected_at: new Date(2000).toISOString(), reason: 'AUTH_ERROR' }],
      ['connection', { device_ip: '192.0.2.7', connected_at: new Date(1000).toISOString() }],
    ]);
  });

  it('keeps a device connected when its older connection is closed for a duplicate client ID, in either order', async () => {
    const { device } = await newDevice();
    const { deps, forwarded } = recordingDeps();
    const presence = (eventType: 'connected' | 'disconnected', timestamp: number, extra = {}) =>
      record({ topic: `$aws/events/presence/${eventType}/${device.id}`, clientId: device.id, timestamp, eventType, ...extra });

    await handleMqttQueueMessages(deps, [presence('connected', 5000, { ipAddress: '192.0.2.8' })]);
    await handleMqttQueueMessages(deps, [presence('disconnected', 5001, { disconnectReason: 'DUPLICATE_CLIENTID' })]);

    expect(await getDeviceOfWorkspace(db, device.workspace_id, device.id)).toMatchObject({ connected: true });
    expect(forwarded.map((e) => e.type)).toEqual(['connection', 'disconnection']);
  });

  it('sends unreadable queue messages back (to reach the DLQ), and ignores presence of clients that are not devices', async () => {
    const { deps, forwarded } = recordingDeps();
    const garbage = record('{not json');

    const failed = await handleMqttQueueMessages(deps, [
      garbage,
      record({ topic: '$aws/events/presence/connected/x', clientId: 'x', timestamp: 1, eventType: 'connected' }),
    ]);

    expect(failed).toEqual([garbage.messageId]);
    expect(forwarded).toEqual([]);
  });
});
