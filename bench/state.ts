/**
 * Device state on the local runtime (in memory), issue 35's benchmark, two figures in one run:
 *
 * 1. **Live `#state`**: CONNECTED devices connected over MQTT (plain port, as bench:mqtt connects
 *    them), each subscribed to its `j/dn`; a PATCH of each device's desired state through the API
 *    (PATCH_CONCURRENCY at once), and the time from each PATCH's answer to that device receiving the
 *    `#state` of that version: p50/p95/p99. Target p95 ≤ 2 s.
 * 2. **A fleet-wide state rollout**: DEVICES devices seeded in a fleet of their own (straight into
 *    the registry, as bench:rollout seeds them), `PATCH /workspaces/{ws}/state` on that fleet with no
 *    rate limit, then, once every device is released (`pending`), every device reports the desired
 *    value (written as the MQTT door writes a `#state` report, REPORT_CONCURRENCY at once); how long
 *    after the last report the rollout's counts are exact (every device `done`). Target ≤ 5 s.
 *    Beside it, the AWS requests per device (local/request-counter.ts: reads, writes, IoT
 *    publishes, invocations) of the rollout from its PATCH to exact counts, and of a plain per-device
 *    PATCH of the same change followed by the same report, on PLAIN_DEVICES other devices.
 *
 *   npm run bench:state                                  # 1,000 connected, 100,000 in the rollout
 *   npm run bench:state -- --connected 200 --devices 10000
 */
import mqtt, { type MqttClient } from 'mqtt';
import { SignJWT } from 'jose';
import { parseArgs } from 'node:util';
import type { CountRow } from '../local/request-counter';
import { until } from '../local/ports';
import { printTable } from './stats';

// The sweep logs each run: warnings only; and no operator metrics lines. Set before the handlers' modules load.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const { requestCounter, isAwsRequest } = await import('../local/request-counter');
const { startLocalRuntime } = await import('../local/runtime');

const { values: args } = parseArgs({ options: { connected: { type: 'string' }, devices: { type: 'string' }, plain: { type: 'string' } } });
const CONNECTED = Number(args.connected ?? 1000);
const DEVICES = Number(args.devices ?? 100_000);
const PLAIN_DEVICES = Number(args.plain ?? 1000);
const PATCH_CONCURRENCY = 16;
const REPORT_CONCURRENCY = 32;

const log = (line: string) => process.stderr.write(`bench:state: ${line}\n`);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs `task` on every item, `concurrency` at once. */
const eachLimit = async <T>(items: T[], concurrency: number, task: (item: T, index: number) => Promise<unknown>) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < items.length; i = next++) await task(items[i], i);
    }),
  );
};

// In memory (no dataDir); the sweep at its rule's rate (a minute): these rollouts have no rate or
// timeout, so it has nothing to do for them, and its idle reads are left out of the counts below.
const runtime = await startLocalRuntime({ consumerConcurrency: 4 });
// The handlers' modules read the environment the runtime sets (tables, endpoints) as they load: after it started.
const { setReported } = await import('../lambdas/domain/state/device-state');
const { registryDb } = await import('../lambdas/shared/clients');
const { newId, nowIso } = await import('../lambdas/shared/ids');
const { WRITE_CONCURRENCY } = await import('../lambdas/shared/env');
const { putAll } = await import('../lambdas/stores/items');
const { deviceKey, deviceLocatorKey } = await import('../lambdas/stores/keys');
const db = registryDb();
const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${runtime.base_url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': runtime.api_key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 429) {
    // The key's rate (requests_per_second_per_key): sent again after its Retry-After, as a client does.
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(response.headers.get('retry-after') ?? 1)));
    return api<T>(method, path, body);
  }
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
};

/** The AWS requests counted so far, summed. */
const awsRequests = () =>
  requestCounter()
    .rows()
    .filter(isAwsRequest)
    .reduce((n: number, r: CountRow) => n + r.requests, 0);
/** The requests that found work (the pollers' empty receives go on forever), but the sweep's. */
const busyRequests = () =>
  requestCounter()
    .rows()
    .filter((r: CountRow) => isAwsRequest(r) && r.caller !== 'rollout-sweep')
    .reduce((n: number, r: CountRow) => n + r.requests - r.empty, 0);
/** The counted requests once two reads 1 s apart find no new work: the runtime's own work (streams, queues) has ended. */
const quietRequests = async () => {
  let last = busyRequests();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = busyRequests();
    if (now === last) return awsRequests();
    last = now;
  }
};

/** Part 1: PATCH → `#state` received, on CONNECTED connected devices. */
const liveFigures = async () => {
  const workspaceId = (await api<{ workspace: { id: string } }>('POST', '/workspaces', { name: 'bench-state-live' })).workspace.id;
  log(`creating ${CONNECTED} devices with credentials and connecting them…`);
  const devices: Array<{ id: string; token: string }> = [];
  await eachLimit(Array.from({ length: CONNECTED }), 20, async (_, i) => {
    const { device } = await api<{ device: { id: string } }>('POST', `/workspaces/${workspaceId}/devices`, { name: `live-${i}` });
    const { credentials } = await api<{ credentials: { devinfo: { key_id: string }; prvkey: string } }>(
      'POST',
      `/workspaces/${workspaceId}/devices/${device.id}/identities`,
    );
    const token = await new SignJWT({ sub: device.id, key: credentials.devinfo.key_id })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
      .sign(Buffer.from(credentials.prvkey, 'base64'));
    devices.push({ id: device.id, token });
  });
  /** When each device received the `#state` of version 1. */
  const received = new Map<string, number>();
  const clients: MqttClient[] = [];
  await eachLimit(
    devices,
    50,
    ({ id, token }) =>
      new Promise<void>((resolve, reject) => {
        const client = mqtt.connect(runtime.mqtt_url, {
          clientId: id,
          username: id,
          password: token,
          protocolVersion: 4,
          clean: true,
          reconnectPeriod: 0,
          connectTimeout: 30_000,
        });
        client.once('connect', () => client.subscribe(`j/dn/${id}`, { qos: 1 }, () => resolve()));
        client.once('error', reject);
        client.on('message', (_topic, payload) => {
          const { key, value } = JSON.parse(payload.toString('utf8')) as { key: string; value: { version?: number } };
          if (key === '#state' && value.version === 1) received.set(id, performance.now());
        });
        clients.push(client);
      }),
  );
  // A `#state` goes live only to devices stored as connected: their presence events first.
  const { listDevicePlacementPages } = await import('../lambdas/stores/device-store');
  await until(
    async () => {
      let connected = 0;
      for await (const page of listDevicePlacementPages(db, workspaceId)) connected += page.filter((d) => d.connected).length;
      return connected >= CONNECTED;
    },
    `all ${CONNECTED} devices stored as connected`,
    300_000,
  );
  log(`${CONNECTED} connected; a PATCH of desired state each, ${PATCH_CONCURRENCY} at once…`);
  const answered = new Map<string, number>();
  await eachLimit(devices, PATCH_CONCURRENCY, async ({ id }) => {
    await api('PATCH', `/workspaces/${workspaceId}/devices/${id}/state`, { desired: { interval: 60 }, version: 0 });
    answered.set(id, performance.now());
  });
  await until(() => received.size >= CONNECTED, `all ${CONNECTED} devices received their #state`, 300_000);
  for (const client of clients) client.end(true);
  const latencies = devices.map(({ id }) => received.get(id)! - answered.get(id)!).sort((a, b) => a - b);
  return [
    { what: `PATCH answer → #state received, ${CONNECTED} connected devices: p50`, value: `${pct(latencies, 50).toFixed(0)} ms` },
    { what: '… p95 (target ≤ 2,000 ms)', value: `${pct(latencies, 95).toFixed(0)} ms` },
    { what: '… p99', value: `${pct(latencies, 99).toFixed(0)} ms` },
  ];
};

/** Seeds `count` devices in a new fleet of the runtime's workspace, straight into the registry. */
const seedFleet = async (name: string, count: number) => {
  const ws = runtime.workspace_id;
  const fleet = (await api<{ fleet: { id: string } }>('POST', `/workspaces/${ws}/fleets`, { name })).fleet.id;
  const devices = Array.from({ length: count }, (_, i) => ({
    id: newId('dev'),
    name: `${name}-${i}`,
    account_id: runtime.account_id,
    workspace_id: ws,
    fleet_id: fleet,
    phys_id: '',
    created_at: nowIso(),
  }));
  for (let i = 0; i < devices.length; i += 10_000) {
    const slice = devices.slice(i, i + 10_000);
    await putAll(
      db,
      slice.map((d) => ({ ...deviceKey(ws, d.id), ...d })),
      WRITE_CONCURRENCY,
    );
    await putAll(
      db,
      slice.map((d) => ({ ...deviceLocatorKey(d.id), account_id: d.account_id, workspace_id: ws, fleet_id: fleet, name: d.name })),
      WRITE_CONCURRENCY,
    );
    log(`seeded ${Math.min(count, i + 10_000)} / ${count} devices of ${name}`);
  }
  return { fleet, devices: devices.map((d) => d.id) };
};

type Rollout = { rollout: { total: number; counts: Record<string, number> } };

/** Every device reports `{interval: 60}` as the MQTT door writes a `#state` report. */
const reportAll = (devices: string[]) =>
  eachLimit(devices, REPORT_CONCURRENCY, (deviceId) =>
    setReported(db, { workspaceId: runtime.workspace_id, deviceId }, { interval: 60 }, { field: 'value.reported' }),
  );

/** Part 2: a state rollout on DEVICES devices, every one reporting; and a plain PATCH per device beside it. */
const rolloutFigures = async () => {
  const ws = runtime.workspace_id;
  const { fleet, devices } = await seedFleet('rollout', DEVICES);
  const plain = await seedFleet('plain', PLAIN_DEVICES);
  await quietRequests();

  log(`a state rollout on ${DEVICES} devices…`);
  const before = awsRequests();
  const { state_change } = await api<{ state_change: { rollout_id: string; devices: string[] } }>('PATCH', `/workspaces/${ws}/state?fleet=${fleet}`, {
    desired: { interval: 60 },
  });
  const rolloutOf = () => api<Rollout>('GET', `/workspaces/${ws}/rollouts/${state_change.rollout_id}`);
  await until(async () => (await rolloutOf()).rollout.counts.pending >= DEVICES, `all ${DEVICES} devices released (pending)`, 1_800_000);
  log(`released; every device reports, ${REPORT_CONCURRENCY} at once…`);
  const reportsStarted = performance.now();
  await reportAll(devices);
  const lastReport = performance.now();
  await until(async () => (await rolloutOf()).rollout.counts.done >= DEVICES, `all ${DEVICES} devices counted done`, 600_000);
  const exactAfter = (performance.now() - lastReport) / 1000;
  const rolloutRequests = (await quietRequests()) - before;

  log(`the same change as a PATCH per device on ${PLAIN_DEVICES} devices…`);
  const plainBefore = awsRequests();
  await eachLimit(plain.devices, PATCH_CONCURRENCY, (id) => api('PATCH', `/workspaces/${ws}/devices/${id}/state`, { desired: { interval: 60 } }));
  await reportAll(plain.devices);
  const plainRequests = (await quietRequests()) - plainBefore;

  return [
    { what: `${DEVICES} reports written (${REPORT_CONCURRENCY} at once)`, value: `${((lastReport - reportsStarted) / 1000).toFixed(1)} s` },
    { what: 'from the last report to every device counted done (target ≤ 5 s)', value: `${exactAfter.toFixed(2)} s` },
    { what: 'AWS requests per device: the state rollout (PATCH to exact counts, reports included)', value: (rolloutRequests / DEVICES).toFixed(2) },
    { what: 'AWS requests per device: a PATCH per device, then its report', value: (plainRequests / PLAIN_DEVICES).toFixed(2) },
  ];
};

try {
  printTable('live #state', await liveFigures());
  printTable(`state rollout on ${DEVICES} devices`, await rolloutFigures());
} finally {
  await runtime.stop();
}
