import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ROUTES } from '../../lambdas/routes';
import { until, waitFor } from '../../local/ports';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { fleetstreamArgs } from '../helpers/cli';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { registryReader } from '../helpers/fuzz/registry-snapshot';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';
import { connectDevice, type Credentials } from '../helpers/mqtt-device';
import { webhookReceivers } from '../helpers/webhook-receiver';

// Quotas, rates and usage through the whole system, as a client and an operator meet them: the
// operator's command against the running stack, the API over HTTP, devices over HTTPS and MQTT.

const run = promisify(execFile);

let stack: LocalStack;
let api: ApiClient;
let registry: ReturnType<typeof registryReader>;
const receivers = webhookReceivers();

beforeAll(async () => {
  // Counts written a second after they happen, limits applied at once: what a test can wait for.
  stack = await startLocalStack({ USAGE_FLUSH_SECONDS: '1', LIMITS_CACHE_SECONDS: '0' }, undefined, { readyTimeoutMs: 170_000 });
  api = apiClient(stack.base_url, stack.api_key);
  registry = registryReader(stack.dataDir);
}, 180_000);
afterAll(async () => {
  registry?.close();
  await receivers.stopAll();
  await stack?.stop();
});

/** `npm run limits` against this stack, as an operator runs it. */
const limitsCommand = async (...args: string[]) => {
  try {
    const { stdout } = await run(process.execPath, fleetstreamArgs('limits', ['--local', '--data-dir', stack.dataDir, ...args]));
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
};

/** A new workspace of the stack's account, with a key bound to it. */
const newWorkspace = async (name: string) => {
  const workspace = (await api.post('/workspaces', { name })).body.workspace;
  const { key } = (await api.post(`/workspaces/${workspace.id}/api-keys`, { name: `${name}-key` })).body;
  return { id: workspace.id as string, key: key as string };
};

/** The registry's items of a workspace whose sort keys start with `prefix`, read from the table itself. */
const storedItems = async (workspaceId: string, prefix: string) =>
  [...(await registry.snapshot()).keys()].filter((key) => key.startsWith(`WKS#${workspaceId}|${prefix}`));

const today = () => new Date().toISOString().slice(0, 10);

describe('the operator’s command', () => {
  it('prints a workspace’s limits, sets some, resets one, and refuses what is not a limit', async () => {
    const { id } = await newWorkspace('operated');

    const shown = await limitsCommand('--workspace', id, '--json');
    const changed = await limitsCommand('--workspace', id, '--set', 'devices=5', '--set', 'integrations=2', '--json');
    const reset = await limitsCommand('--workspace', id, '--reset', 'integrations');
    const refused = await limitsCommand('--workspace', id, '--set', 'lasers=3');
    const unknown = await limitsCommand('--workspace', 'wks-123456789');

    expect(JSON.parse(shown.stdout)).toMatchObject({ workspace_id: id, own: {}, counts: { devices: 0, fleets: 1, api_keys: 1, integrations: 0 } });
    expect(JSON.parse(changed.stdout)).toMatchObject({ own: { devices: 5, integrations: 2 }, limits: { devices: 5, integrations: 2 } });
    expect(reset.stdout).toMatch(/^devices\s+5\s+workspace\s+0$/m);
    expect(reset.stdout).toMatch(/^integrations\s+10\s+default\s+0$/m);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/^limits: .*lasers.*known: devices, fleets/)]);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'limits: Workspace wks-123456789 not found.\n']);
    // The keys of before, as they were; the quotas added since stand beside them (test/e2e/quotas.test.ts).
    expect((await api.get(`/workspaces/${id}/limits`)).body.limits).toMatchObject({
      devices: 5,
      fleets: 1000,
      api_keys: 20,
      integrations: 10,
      points_per_device_per_day: 100_000,
      requests_per_second_per_key: 100,
    });
  });
});

describe('quotas', () => {
  it('lets exactly the quota of 50 concurrent device creates through, answers the rest 429 quota_exceeded naming the limit, and stores nothing for them', async () => {
    const { id } = await newWorkspace('crowded');
    for (let i = 0; i < 4; i++) await api.post(`/workspaces/${id}/devices`, { name: `before-${i}` });
    await limitsCommand('--workspace', id, '--set', 'devices=24');

    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post(`/workspaces/${id}/devices`, { name: `d${i}` })));

    const made = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect([made.length, refused.length]).toEqual([20, 30]);
    for (const { body } of refused) {
      expect(body.error).toEqual({
        code: 'quota_exceeded',
        message: expect.stringContaining('24 devices'),
        details: [{ field: 'limits.devices', message: expect.any(String), value: 24 }],
      });
    }
    expect(await storedItems(id, 'DEV#')).toHaveLength(24);
    expect((await api.get(`/workspaces/${id}/devices`)).body.devices).toHaveLength(24);
  });

  it('keeps fleets, API keys and integrations at their quotas; a revoked key or a deleted integration frees its place', async () => {
    const { id } = await newWorkspace('bounded');
    await limitsCommand('--workspace', id, '--set', 'fleets=2', '--set', 'api_keys=2', '--set', 'integrations=1');
    const receiver = await receivers.start();

    const fleets = [await api.post(`/workspaces/${id}/fleets`, { name: 'a' }), await api.post(`/workspaces/${id}/fleets`, { name: 'b' })];
    const keys = [await api.post(`/workspaces/${id}/api-keys`, { name: 'k2' }), await api.post(`/workspaces/${id}/api-keys`, { name: 'k3' })];
    const hooks = [
      await api.post(`/workspaces/${id}/integrations`, { url: receiver.url }),
      await api.post(`/workspaces/${id}/integrations`, { url: receiver.url }),
    ];

    // The default fleet and the workspace's first key were there already.
    expect(fleets.map((a) => a.status)).toEqual([200, 429]);
    expect(keys.map((a) => a.status)).toEqual([200, 429]);
    expect(hooks.map((a) => a.status)).toEqual([200, 429]);
    expect([fleets[1], keys[1], hooks[1]].map((a) => a.body.error.details[0])).toEqual([
      { field: 'limits.fleets', message: expect.any(String), value: 2 },
      { field: 'limits.api_keys', message: expect.any(String), value: 2 },
      { field: 'limits.integrations', message: expect.any(String), value: 1 },
    ]);
    expect(await storedItems(id, 'FLT#')).toHaveLength(2);

    await api.delete(`/workspaces/${id}/api-keys/${keys[0].body.api_key.id}`);
    await api.delete(`/workspaces/${id}/integrations/${hooks[0].body.integration.id}`);

    expect((await api.post(`/workspaces/${id}/api-keys`, { name: 'k4' })).status).toBe(200);
    expect((await api.post(`/workspaces/${id}/integrations`, { url: receiver.url })).status).toBe(200);
  });
});

describe('the rate of requests per key', () => {
  it('answers requests past requests_per_second_per_key 429 rate_limited with Retry-After, and serves the key again after it', async () => {
    const { id, key } = await newWorkspace('hasty');
    await limitsCommand('--workspace', id, '--set', 'requests_per_second_per_key=3');
    const hasty = apiClient(stack.base_url, key, { retryRateLimited: false });

    const answers = await Promise.all(Array.from({ length: 15 }, () => hasty.get(`/workspaces/${id}/fleets`)));

    const limited = answers.filter((a) => a.status === 429);
    // 15 at once fall in one second, or two when they straddle its end: 3 each at most.
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(3);
    expect(answers.filter((a) => a.status === 200).length).toBeLessThanOrEqual(6);
    expect(limited.length).toBe(15 - answers.filter((a) => a.status === 200).length);
    expect(limited[0].headers.get('retry-after')).toBe('1');
    expect(limited[0].body.error).toEqual({
      code: 'rate_limited',
      message: expect.stringContaining('at most 3 per second'),
      details: [{ field: 'limits.requests_per_second_per_key', message: expect.any(String), value: 3 }],
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await hasty.get(`/workspaces/${id}/fleets`)).status).toBe(200);
    // Another key of the same account keeps its own rate.
    expect((await api.get(`/workspaces/${id}/fleets`)).status).toBe(200);
  });

  it('applies the rate to every handler of the management and storage API alike (firmware and rollouts included)', async () => {
    const { id, key } = await newWorkspace('everywhere');
    await limitsCommand('--workspace', id, '--set', 'requests_per_second_per_key=1');
    const hasty = apiClient(stack.base_url, key, { retryRateLimited: false });
    // A list of each handler of the route table (the device API and the OpenAPI document have no rate).
    const lists = new Map(
      ROUTES.filter(
        (r) => r.method === 'GET' && !['device-api', 'openapi'].includes(r.handler) && /^\/(workspaces|timeseries)\/\{workspaceId\}\/[a-z-]+$/.test(r.path),
      ).map((r) => [r.handler, r.path]),
    );

    const limited = new Map<string, number>();
    for (const [handler, path] of lists) {
      const answers = await Promise.all(Array.from({ length: 6 }, () => hasty.get(path.replace('{workspaceId}', id))));
      limited.set(handler, answers.filter((a) => a.status === 429).length);
    }

    expect([...lists.keys()]).toEqual(expect.arrayContaining(['fleets', 'devices', 'firmwares', 'rollouts', 'integrations', 'timeseries']));
    // Six at once at 1 a second: some are refused whatever the handler, even if a slow machine spreads them over seconds.
    expect([...limited].filter(([, n]) => n < 1)).toEqual([]);
  });
});

describe('a device’s daily points', () => {
  const newDevice = async (workspaceId: string, name: string) => {
    const device = (await api.post(`/workspaces/${workspaceId}/devices`, { name })).body.device;
    const { credentials } = (await api.post(`/workspaces/${workspaceId}/devices/${device.id}/identities`)).body;
    return { id: device.id as string, credentials: credentials as Credentials };
  };
  const storedPoints = (workspaceId: string, deviceId: string, count: number) =>
    waitFor(async () => {
      const { result } = (await api.get(`/timeseries/${workspaceId}/data?device=${deviceId}&size=100`)).body;
      if (result.length < count) throw new Error(`${result.length} of ${count} points stored`);
      return result as Array<{ payload: unknown }>;
    }, `${count} points of ${deviceId}`);

  it('stores an HTTPS device’s points up to its limit, says how many it refused, then answers 429 until midnight UTC, and counts them all', async () => {
    const { id } = await newWorkspace('metered');
    await limitsCommand('--workspace', id, '--set', 'points_per_device_per_day=5');
    const { id: deviceId, credentials } = await newDevice(id, 'meter');
    const me = deviceClient(stack.base_url, await deviceToken(credentials));
    const points = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ tag: 'level', payload: { n: from + i } }));

    const first = await me.post('/data', points(0, 3));
    const second = await me.post('/data', points(3, 4));
    const third = await me.post('/data', points(7, 1));

    expect([first.status, first.body]).toEqual([202, { accepted: 3, refused: 0, timestamp_in: expect.any(String) }]);
    expect([second.status, second.body]).toEqual([202, { accepted: 2, refused: 2, timestamp_in: expect.any(String) }]);
    expect(third.status).toBe(429);
    expect(third.body.error.details).toEqual([{ field: 'limits.points_per_device_per_day', message: expect.stringContaining('midnight UTC'), value: 5 }]);
    const secondsToMidnight = (Date.parse(`${today()}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000;
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(secondsToMidnight - 60);
    expect(Number(third.headers.get('retry-after'))).toBeLessThanOrEqual(Math.ceil(secondsToMidnight) + 1);
    const stored = await storedPoints(id, deviceId, 5);
    expect(stored.map((p) => (p.payload as { n: number }).n).sort()).toEqual([0, 1, 2, 3, 4]);
    await until(
      async () => {
        const { totals } = (await api.get(`/workspaces/${id}/usage?start=${today()}&end=${today()}`)).body.usage;
        return totals.points_in === 8 && totals.points_stored === 5 && totals.points_refused === 3;
      },
      'the day’s points in the usage',
      30_000,
    );
  });

  it('stores an MQTT device’s publishes up to its limit, drops the rest, and counts them', async () => {
    const { id } = await newWorkspace('chatty');
    await limitsCommand('--workspace', id, '--set', 'points_per_device_per_day=4');
    const { id: deviceId, credentials } = await newDevice(id, 'chatterbox');
    const device = await connectDevice(credentials);
    try {
      for (let n = 0; n < 10; n++) await device.data('level', { n });
    } finally {
      await device.end();
    }

    await until(
      async () => {
        const { totals } = (await api.get(`/workspaces/${id}/usage?start=${today()}&end=${today()}`)).body.usage;
        return totals.points_in === 10;
      },
      'the ten publishes in the usage',
      60_000,
    );
    const { totals } = (await api.get(`/workspaces/${id}/usage?start=${today()}&end=${today()}`)).body.usage;
    expect(totals).toMatchObject({ points_in: 10, points_stored: 4, points_refused: 6 });
    expect(await storedPoints(id, deviceId, 4)).toHaveLength(4);
  });
});

describe('usage', () => {
  it('counts the API requests on a workspace’s paths and its webhook POSTs, day by day', async () => {
    const { id } = await newWorkspace('counted');
    const receiver = await receivers.start();
    await api.post(`/workspaces/${id}/integrations`, { url: receiver.url });
    const device = (await api.post(`/workspaces/${id}/devices`, { name: 'd' })).body.device;
    const { credentials } = (await api.post(`/workspaces/${id}/devices/${device.id}/identities`)).body;
    await deviceClient(stack.base_url, await deviceToken(credentials)).post('/data', { tag: 't', payload: 1 });
    for (let i = 0; i < 5; i++) await api.get(`/workspaces/${id}/fleets`);
    await until(() => receiver.accepted().length >= 2, 'the point and its data event at the receiver');

    // Every request above on the workspace's paths: 4 creates and reads, 5 lists; the usage reads that poll count too.
    await until(
      async () => {
        const { totals } = (await api.get(`/workspaces/${id}/usage`)).body.usage;
        return totals.api_requests >= 9 && totals.webhook_deliveries >= 1;
      },
      'the requests and POSTs in the usage',
      30_000,
    );
    const { days, totals } = (await api.get(`/workspaces/${id}/usage`)).body.usage;
    expect(days).toHaveLength(30);
    expect(days.at(-1)).toMatchObject({ date: today(), points_in: 1, points_stored: 1, points_refused: 0, webhook_failures: 0 });
    expect(days.slice(0, -1).every((d: Record<string, unknown>) => Object.entries(d).every(([k, v]) => k === 'date' || v === 0))).toBe(true);
    expect(totals).toEqual(Object.fromEntries(Object.keys(totals).map((k) => [k, days.reduce((sum: number, d: Record<string, number>) => sum + d[k], 0)])));
  });

  it('refuses a range that ends before it starts, or spans more than 366 days, naming start', async () => {
    const bad = await Promise.all([
      api.get(`/workspaces/${stack.workspace_id}/usage?start=2026-03-02&end=2026-03-01`),
      api.get(`/workspaces/${stack.workspace_id}/usage?start=2025-01-01&end=2026-01-02`),
      api.get(`/workspaces/${stack.workspace_id}/usage?start=2026-02-30`),
    ]);

    expect(bad.map((a) => [a.status, a.body.error.details.map((d: { field: string }) => d.field)])).toEqual([
      [400, ['query.start']],
      [400, ['query.start']],
      [400, ['query.start']],
    ]);
    expect((await api.get(`/workspaces/${stack.workspace_id}/usage?start=2025-01-01&end=2026-01-01`)).body.usage.days).toHaveLength(366);
  });
});
