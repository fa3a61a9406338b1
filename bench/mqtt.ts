/**
 * `npm run bench:mqtt -- [--devices 1000] [--points 5] [--rounds 1] [--stream B,W,F]`: the MQTT door on the local runtime.
 *
 * - connections: N devices connected at once over plain MQTT (each CONNECT runs the custom
 *   authorizer); connect rate, and heap + RSS growth per connection. The clients run in this
 *   process too, so the memory figure is an upper bound for the broker's share. With
 *   `--connections-only` the clients run in a child process (bench/mqtt-clients.ts), so the
 *   growth is the runtime's own (broker, authorizer), and the other phases are skipped.
 * - ingest: the same N devices publish P points each over MQTT, and again over the HTTPS device
 *   API (one point per request), side by side; points/s until all are stored, and the ratio.
 *   Skipped with `--points 0`.
 * - fan-out: a fleet job on the N connected devices: from the API's answer (and from the request)
 *   to each device receiving it, p50 and p99; `--rounds R` schedules R jobs one after another;
 *   `--stream B,W,F` runs the registry stream with another batch size, window and parallelization.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { fork } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SignJWT } from 'jose';
import { until } from '../local/ports';
import { startLocalRuntime } from '../local/runtime';

const { values } = parseArgs({
  options: {
    devices: { type: 'string', default: '1000' },
    points: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '1' },
    stream: { type: 'string' },
    'connections-only': { type: 'boolean', default: false },
  },
});
const N = Number(values.devices);
const P = Number(values.points);
const ROUNDS = Number(values.rounds);
const log = (line: string) => process.stderr.write(`bench:mqtt: ${line}\n`);
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

// `--stream 100,1,1`: the registry stream's batch size, batching window (s) and parallelization
// factor instead of lambdas/streams.ts's, to compare settings (those before issue 11: 100,1,1).
const [batchSize, maxBatchingWindowSeconds, parallelizationFactor] = (values.stream ?? '').split(',').filter(Boolean).map(Number);
const registryStream = values.stream ? { batchSize, maxBatchingWindowSeconds, parallelizationFactor } : undefined;
if (registryStream) log(`registry stream: batches of ${batchSize}, window ${maxBatchingWindowSeconds} s, ${parallelizationFactor} per shard at once`);
const runtime = await startLocalRuntime({ consumerConcurrency: 4, registryStream });
const { createDevice } = await import('../lambdas/domain/registry/devices');
const { createIdentity } = await import('../lambdas/domain/registry/identities');
const { registryDb } = await import('../lambdas/shared/clients');
const { timeseriesStore } = await import('../lambdas/stores/timeseries');
const db = registryDb();
const caller = { accountId: runtime.account_id, workspaceId: runtime.workspace_id, keyId: 'bench' };
const api = (path: string, init: RequestInit = {}, token?: string) =>
  fetch(`${runtime.base_url}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : { 'x-api-key': runtime.api_key }) },
  });

try {
  // A workspace of its own, so that the fleet job reaches exactly these devices.
  const ws = (await (await api('/workspaces', { method: 'POST', body: JSON.stringify({ name: `bench-mqtt-${Date.now()}` }) })).json()) as {
    workspace: { id: string };
  };
  const workspaceId = ws.workspace.id;
  log(`creating ${N} devices with credentials…`);
  const devices: Array<{ id: string; token: string }> = [];
  for (let i = 0; i < N; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, N - i) }, async (_, j) => {
        const device = await createDevice(db, caller, workspaceId, { name: `b${i + j}`, phys_id: '' });
        const { credentials } = await createIdentity(db, caller, workspaceId, device.id, { type: 'sym' });
        const token = await new SignJWT({ sub: device.id, key: credentials.devinfo.key_id })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
          .sign(Buffer.from(credentials.prvkey, 'base64'));
        return { id: device.id, token };
      }),
    );
    devices.push(...batch);
  }

  if (values['connections-only']) {
    const file = join(mkdtempSync(join(tmpdir(), 'bench-mqtt-')), 'devices.json');
    writeFileSync(file, JSON.stringify(devices));
    global.gc?.();
    const before = process.memoryUsage();
    const child = fork(fileURLToPath(new URL('./mqtt-clients.ts', import.meta.url)), [runtime.mqtt_url, file], { execArgv: ['--import', 'tsx'] });
    const { connected, seconds } = await new Promise<{ connected: number; seconds: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { connected: number; seconds: number }));
      child.once('exit', (code) => reject(new Error(`clients exited (${code})`)));
    });
    await new Promise((r) => setTimeout(r, 2000)); // let presence messages drain before measuring
    global.gc?.();
    const after = process.memoryUsage();
    log(
      `connections: ${connected} connected at once in ${seconds.toFixed(1)} s (${(connected / seconds).toFixed(0)}/s); runtime heap +${((after.heapUsed - before.heapUsed) / connected / 1024).toFixed(1)} KB, RSS +${((after.rss - before.rss) / connected / 1024).toFixed(1)} KB per connection (broker side only)`,
    );
    child.send('stop');
    await new Promise((r) => child.once('exit', r));
    process.exitCode = 0;
  } else {
    // Connections
    global.gc?.();
    const before = process.memoryUsage();
    const received = new Map<string, number>();
    const started = performance.now();
    const clients: MqttClient[] = [];
    for (let i = 0; i < N; i += 100) {
      clients.push(
        ...(await Promise.all(
          devices.slice(i, i + 100).map(
            ({ id, token }) =>
              new Promise<MqttClient>((resolve, reject) => {
                const client = mqtt.connect(runtime.mqtt_url, {
                  clientId: id,
                  username: id,
                  password: token,
                  protocolVersion: 4,
                  clean: true,
                  keepalive: 60,
                  reconnectPeriod: 0,
                  connectTimeout: 30_000,
                });
                client.once('connect', () => client.subscribe(`j/dn/${id}`, { qos: 1 }, () => resolve(client)));
                client.once('error', reject);
                client.on('message', () => received.set(id, performance.now()));
              }),
          ),
        )),
      );
    }
    const connectSeconds = (performance.now() - started) / 1000;
    global.gc?.();
    const after = process.memoryUsage();
    const perConnection = (a: number, b: number) => ((b - a) / N / 1024).toFixed(1);
    log(
      `connections: ${N} in ${connectSeconds.toFixed(1)} s (${(N / connectSeconds).toFixed(0)}/s); heap +${perConnection(before.heapUsed, after.heapUsed)} KB, RSS +${perConnection(before.rss, after.rss)} KB per connection (clients included)`,
    );

    // Ingest, side by side: HTTPS first, then MQTT, the same number of points (none with `--points 0`).
    if (P > 0) {
      const store = timeseriesStore();
      const stored = async (tag: string) => {
        let n = 0;
        for await (const p of store.query({ workspaceId, tags: [tag], from: 0, size: N * P + 1, order: 'asc' })) if (p) n += 1;
        return n;
      };
      const ingest = async (tag: string, send: (d: { id: string; token: string }, client: MqttClient, k: number) => Promise<unknown>) => {
        const t0 = performance.now();
        for (let k = 0; k < P; k += 1) await Promise.all(devices.map((d, i) => send(d, clients[i], k)));
        await until(async () => (await stored(tag)) >= N * P, `${N * P} ${tag} points stored`, 600_000);
        return (N * P) / ((performance.now() - t0) / 1000);
      };
      const https = await ingest('https', (d, _c, k) =>
        api(
          '/device/data',
          { method: 'POST', body: JSON.stringify({ tag: 'https', payload: { k }, timestamp_device: new Date(Date.UTC(2026, 0, 1, 0, 0, k)).toISOString() }) },
          d.token,
        ).then((r) => r.text()),
      );
      const overMqtt = await ingest('mqtt', (d, c, k) =>
        c.publishAsync(`j/data/${d.id}/mqtt`, JSON.stringify({ k }), { qos: 1 }).then(() => new Promise((r) => setTimeout(r, 2))),
      );
      log(`ingest: HTTPS ${https.toFixed(0)} points/s, MQTT ${overMqtt.toFixed(0)} points/s, ratio MQTT/HTTPS ${(overMqtt / https).toFixed(2)}`);
    }

    // A job goes live only to devices stored as connected when it is scheduled: their presence
    // events must have been handled first (the ingest phase used to leave time for that).
    const { listDevicePlacementPages } = await import('../lambdas/stores/device-store');
    await until(
      async () => {
        let connected = 0;
        for await (const page of listDevicePlacementPages(db, workspaceId)) connected += page.filter((d) => d.connected).length;
        return connected >= N;
      },
      `all ${N} devices stored as connected`,
      120_000,
    );

    // Fan-out, `--rounds` times (one fleet job each; the machine is noisy)
    for (let round = 1; round <= ROUNDS; round += 1) {
      received.clear();
      const requested = performance.now();
      const answer = await api(`/workspaces/${workspaceId}/jobs/bench${round}`, { method: 'POST', body: JSON.stringify({ value: { n: round } }) });
      const answered = performance.now();
      await answer.text();
      const written = performance.now();
      await until(() => received.size >= N, `all ${N} devices received the job`, 120_000);
      const fromAnswer = [...received.values()].map((t) => t - answered).sort((a, b) => a - b);
      const fromRequest = [...received.values()].map((t) => t - requested).sort((a, b) => a - b);
      log(
        `fan-out to ${N}${ROUNDS > 1 ? ` (round ${round})` : ''}: API answered after ${(answered - requested).toFixed(0)} ms, its last device ${(written - requested).toFixed(0)} ms; from the answer p50 ${pct(fromAnswer, 50).toFixed(0)} ms, p99 ${pct(fromAnswer, 99).toFixed(0)} ms; from the request p50 ${pct(fromRequest, 50).toFixed(0)} ms, p99 ${pct(fromRequest, 99).toFixed(0)} ms`,
      );
    }
    for (const c of clients) c.end(true);
  }
} finally {
  await runtime.stop();
}
