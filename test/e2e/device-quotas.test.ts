import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { until } from '../../local/ports';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { fleetstreamArgs } from '../helpers/cli';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';
import { connectDevice, type Credentials } from '../helpers/mqtt-device';
import { webhookReceivers } from '../helpers/webhook-receiver';

// A device's daily quotas of events and of its other messages (issue 32, finding 6), as for its
// points: a device that bursts hundreds of events, over MQTT and over HTTPS, gets exactly its limit
// forwarded; the rest are dropped (MQTT) or refused 429 (HTTPS), and all are counted in the usage.

const run = promisify(execFile);

let stack: LocalStack;
let api: ApiClient;
const receivers = webhookReceivers();

beforeAll(async () => {
  // Usage written as it is counted, limits applied at once: what a test can wait for.
  stack = await startLocalStack({ USAGE_FLUSH_SECONDS: '0', LIMITS_CACHE_SECONDS: '0' }, undefined, { readyTimeoutMs: 170_000 });
  api = apiClient(stack.base_url, stack.api_key);
}, 180_000);
afterAll(async () => {
  await receivers.stopAll();
  await stack?.stop();
});

const today = () => new Date().toISOString().slice(0, 10);
const secondsToMidnight = () => (Date.parse(`${today()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000;

/** A workspace with the operator's limits, a device with its credentials, and a webhook that takes its events. */
const meteredDevice = async (name: string, ...limits: string[]) => {
  const workspace = (await api.post('/workspaces', { name })).body.workspace.id as string;
  await run(
    process.execPath,
    fleetstreamArgs('limits', ['--local', '--data-dir', stack.dataDir, '--workspace', workspace, ...limits.flatMap((l) => ['--set', l])]),
  );
  const receiver = await receivers.start();
  await api.post(`/workspaces/${workspace}/integrations`, { url: receiver.url, data: false });
  const device = (await api.post(`/workspaces/${workspace}/devices`, { name: `${name}-device` })).body.device.id as string;
  const { credentials } = (await api.post(`/workspaces/${workspace}/devices/${device}/identities`)).body;
  return { workspace, device, credentials: credentials as Credentials, receiver };
};

const usageTotals = async (workspace: string) => (await api.get(`/workspaces/${workspace}/usage?start=${today()}&end=${today()}`)).body.usage.totals;

/** Waits until the day's usage holds `counts` exactly, and answers the totals. */
const usageReaches = async (workspace: string, counts: Record<string, number>) => {
  let totals: Record<string, number> = {};
  await until(
    async () => {
      totals = await usageTotals(workspace);
      return Object.entries(counts).every(([name, n]) => totals[name] === n);
    },
    `the usage ${JSON.stringify(counts)}`,
    90_000,
  );
  return totals;
};

describe('over MQTT', () => {
  it('forwards exactly events_per_device_per_day of 300 events a device bursts on j/up, drops the rest, and counts them all', async () => {
    const { workspace, device, credentials, receiver } = await meteredDevice('mqtt-events', 'events_per_device_per_day=20');
    const mqtt = await connectDevice(credentials);
    try {
      await Promise.all(Array.from({ length: 300 }, (_, n) => mqtt.up('__flood', { n })));
    } finally {
      await mqtt.end();
    }

    // Every event counted (the 20 forwarded by the ingest, the 280 dropped by the MQTT door): the 20 have been sent on by then.
    const totals = await usageReaches(workspace, { events_in: 300, events_refused: 280 });
    const flood = () => receiver.accepted().filter((e) => e.device_id === device && e.type === 'private_strong');
    await until(() => flood().length >= 20, 'the admitted events at the webhook', 60_000);

    expect(new Set(flood().map((e) => JSON.stringify(e.payload))).size).toBe(20);
    expect(flood()).toHaveLength(20);
    expect(totals).toMatchObject({ events_in: 300, events_refused: 280, up_messages_in: 0 });
  });

  it('answers exactly up_messages_per_device_per_day of 60 #now requests, drops the rest, and counts them all', async () => {
    const { workspace, credentials } = await meteredDevice('mqtt-requests', 'up_messages_per_device_per_day=10');
    const mqtt = await connectDevice(credentials);
    try {
      await Promise.all(Array.from({ length: 60 }, () => mqtt.up('#now', {})));
      const totals = await usageReaches(workspace, { up_messages_in: 60, up_messages_refused: 50 });
      await mqtt.next('#now', 10);

      // All 60 were counted, 10 of them admitted: no more answers can come.
      expect(mqtt.received.filter((m) => m.key === '#now')).toHaveLength(10);
      expect(totals).toMatchObject({ up_messages_in: 60, up_messages_refused: 50, events_in: 0 });
    } finally {
      await mqtt.end();
    }
  });
});

describe('over HTTPS', () => {
  it('accepts exactly events_per_device_per_day of 250 events sent in 25 requests at once, says how many it refused, then answers 429', async () => {
    const { workspace, device, credentials, receiver } = await meteredDevice('https-events', 'events_per_device_per_day=20');
    const me = deviceClient(stack.base_url, await deviceToken(credentials));
    const batch = (r: number) => Array.from({ length: 10 }, (_, i) => ({ type: 'private_weak' as const, payload: { key: '_flood', value: r * 10 + i } }));

    const before = secondsToMidnight();
    const answers = await Promise.all(Array.from({ length: 25 }, (_, r) => me.post('/events', batch(r))));
    const after = secondsToMidnight();

    const accepted = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    expect(accepted.length + refused.length).toBe(25);
    expect(accepted.reduce((sum, a) => sum + a.body.accepted, 0)).toBe(20);
    expect(accepted.reduce((sum, a) => sum + a.body.refused, 0) + refused.length * 10).toBe(230);
    for (const { body } of accepted) expect(body).toEqual({ accepted: expect.any(Number), refused: expect.any(Number), timestamp_in: expect.any(String) });
    expect(refused[0].body.error).toEqual({
      code: 'quota_exceeded',
      message: expect.stringContaining('(limits.events_per_device_per_day = 20); it starts afresh at midnight UTC.'),
      details: [{ field: 'limits.events_per_device_per_day', message: expect.any(String), value: 20 }],
    });
    // The seconds to midnight UTC from the request's arrival, which came between the two readings.
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(Math.floor(after));
    expect(Number(refused[0].headers.get('retry-after'))).toBeLessThanOrEqual(Math.ceil(before));
    await usageReaches(workspace, { events_in: 250, events_refused: 230 });
    const flood = () => receiver.accepted().filter((e) => e.device_id === device && e.type === 'private_weak');
    await until(() => flood().length >= 20, 'the accepted events at the webhook', 60_000);
    expect(flood()).toHaveLength(20);
  });

  it('answers exactly up_messages_per_device_per_day of 15 status requests at once, the rest 429, and counts them all', async () => {
    const { workspace, credentials } = await meteredDevice('https-requests', 'up_messages_per_device_per_day=5');
    const me = deviceClient(stack.base_url, await deviceToken(credentials));

    const answers = await Promise.all(Array.from({ length: 15 }, () => me.get('/status')));
    const result = await me.post('/jobs/none/result', { result: {} });

    expect(answers.map((a) => a.status).sort()).toEqual([...Array(5).fill(200), ...Array(10).fill(429)]);
    expect(answers.find((a) => a.status === 429)!.body.error.details).toEqual([
      { field: 'limits.up_messages_per_device_per_day', message: expect.stringContaining('midnight UTC'), value: 5 },
    ]);
    // A job's result is such a message too: refused before it is looked at.
    expect([result.status, result.body.error.code]).toEqual([429, 'quota_exceeded']);
    await usageReaches(workspace, { up_messages_in: 16, up_messages_refused: 11 });
  });
});
