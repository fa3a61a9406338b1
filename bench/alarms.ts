/**
 * Offline alarms at fleet scale on the local runtime (in memory; the registry stream's consumer
 * and the minute sweep as `npm start` runs them, the sweep at its rule's rate: a minute):
 *
 * DEVICES devices, store-seeded and connected, in one fleet under an `offline` rule with
 * `for_seconds` 60; OFFLINE of them disconnect at once (their items written as the MQTT door
 * writes a disconnection, 32 at once). Printed: how long after `for_seconds` (counted from the last
 * disconnection) the OFFLINE-th alarm is open (target ≤ 120 s), and the sweep's DynamoDB reads
 * (GetItem, BatchGetItem, Query) over the whole time, per due timer and per device: they must
 * follow the due timers, not the fleet's size.
 *
 * Then a second `offline` rule on the fleet, created while the OFFLINE devices are disconnected:
 * its backfill (domain/alarms/backfill.ts) pages through the fleet's devices from the minute sweep
 * and writes their timers. Printed: the time from its creation to its end, and the sweep runs'
 * time spent on it per 10,000 devices read.
 *
 * And the threshold half (bench/alarms-threshold.ts): the data path's AWS requests per 1,000
 * points with and without a `threshold` rule, in `npm run bench:requests`' shapes, side by side.
 *
 *   npm run bench:alarms                                   # both halves: 100,000 devices, 10,000 disconnect
 *   npm run bench:alarms -- --devices 10000 --offline 1000 # a smaller run
 *   npm run bench:alarms -- --only threshold [--scale 2]   # the threshold half alone (scale: messages per device)
 *   npm run bench:alarms -- --only offline                 # the offline half alone
 */
import { parseArgs } from 'node:util';
import type { CountRow } from '../local/request-counter';
import { printTable } from './stats';

// The sweep logs each run: warnings only; no operator metrics lines. Set before the handlers' modules load.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const { requestCounter } = await import('../local/request-counter');
const { startLocalRuntime } = await import('../local/runtime');

const { values: args } = parseArgs({
  options: { devices: { type: 'string' }, offline: { type: 'string' }, only: { type: 'string' }, scale: { type: 'string' } },
});
if (args.only !== undefined && args.only !== 'offline' && args.only !== 'threshold') throw new Error(`--only: offline or threshold, not ${args.only}`);
const DEVICES = Number(args.devices ?? 100_000);
const OFFLINE = Number(args.offline ?? Math.min(10_000, DEVICES));
const FOR_SECONDS = 60;
const DISCONNECT_CONCURRENCY = 32;
const SWEEP = 'rollout-sweep';
const READS = new Set(['GetItem', 'BatchGetItem', 'Query']);

const log = (line: string) => process.stderr.write(`bench:alarms: ${line}\n`);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `task` on every item, `concurrency` at once. */
const eachLimit = async <T>(items: T[], concurrency: number, task: (item: T) => Promise<unknown>) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < items.length; i = next++) await task(items[i]);
    }),
  );
};

const runtime = await startLocalRuntime({ consumerConcurrency: 4 });
// The handlers' modules read the environment the runtime sets as they load: after it started.
const { registryDb } = await import('../lambdas/shared/clients');
const { newId, nowIso } = await import('../lambdas/shared/ids');
const { WRITE_CONCURRENCY } = await import('../lambdas/shared/env');
const { putAll } = await import('../lambdas/stores/items');
const { deviceKey, deviceLocatorKey, collection } = await import('../lambdas/stores/keys');
const { setDeviceConnection } = await import('../lambdas/stores/device-mqtt-store');
const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
const { getBackfill } = await import('../lambdas/stores/alarm-backfill-store');
const db = registryDb();
const ws = runtime.workspace_id;

const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${runtime.base_url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': runtime.api_key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
};

/** The sweep's DynamoDB reads so far, by operation. */
const sweepReads = () => {
  const byOperation: Record<string, number> = {};
  for (const row of requestCounter().rows() as CountRow[])
    if (row.caller === SWEEP && row.service === 'DynamoDB' && READS.has(row.operation))
      byOperation[row.operation] = (byOperation[row.operation] ?? 0) + row.requests;
  return byOperation;
};

/** How many alarms the workspace has (a COUNT query of its alarm items, page by page). */
const alarmCount = async () => {
  const { pk, prefix } = collection.alarmsOfWorkspace(ws);
  let count = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        Select: 'COUNT',
        ExclusiveStartKey,
      }),
    );
    count += page.Count ?? 0;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return count;
};

/** The offline half: DEVICES devices, OFFLINE of them disconnecting at once, the sweep's reads. */
const measureOffline = async () => {
  const fleet = (await api<{ fleet: { id: string } }>('POST', `/workspaces/${ws}/fleets`, { name: 'cold-rooms' })).fleet.id;
  log(`seeding ${DEVICES} connected devices…`);
  const seededAt = Date.now() - 10 * 60_000;
  const devices = Array.from({ length: DEVICES }, (_, i) => ({
    id: newId('dev'),
    name: `room-${i}`,
    account_id: runtime.account_id,
    workspace_id: ws,
    fleet_id: fleet,
    phys_id: '',
    created_at: nowIso(),
    connected: true,
    last_connected_at: new Date(seededAt).toISOString(),
    presence_ms: seededAt,
  }));
  await putAll(
    db,
    devices.map((d) => ({ ...deviceKey(ws, d.id), ...d })),
    WRITE_CONCURRENCY,
  );
  await putAll(
    db,
    devices.map((d) => ({ ...deviceLocatorKey(d.id), account_id: d.account_id, workspace_id: ws, fleet_id: fleet, name: d.name })),
    WRITE_CONCURRENCY,
  );
  await api('POST', `/workspaces/${ws}/alarm-rules`, {
    name: 'cold room offline',
    kind: 'offline',
    severity: 'critical',
    for_seconds: FOR_SECONDS,
    target: { fleets: [fleet] },
  });
  // The seeding's stream records pass through the consumer (they start nothing: no disconnection).
  await pause(5000);

  const before = sweepReads();
  const going = devices.slice(0, OFFLINE);
  log(`${OFFLINE} devices disconnect at once…`);
  const firstAt = Date.now();
  await eachLimit(going, DISCONNECT_CONCURRENCY, async (d) => {
    const at = Date.now();
    await setDeviceConnection(db, ws, d.id, false, new Date(at).toISOString(), at);
  });
  const lastAt = Date.now();
  log(`disconnected in ${((lastAt - firstAt) / 1000).toFixed(1)} s; waiting for ${OFFLINE} alarms…`);
  let open = 0;
  for (;;) {
    open = await alarmCount();
    if (open >= OFFLINE) break;
    if (Date.now() - lastAt > 15 * 60_000) throw new Error(`only ${open} of ${OFFLINE} alarms open after 15 minutes`);
    await pause(1000);
  }
  const allOpenAt = Date.now();
  // One more sweep run, so that the reads of a run with nothing due are in the figures too.
  await pause(65_000);
  const after = sweepReads();
  const reads = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] ?? 0)]));
  const total = Object.values(reads).reduce((a, b) => a + b, 0);
  const afterForSeconds = (allOpenAt - (lastAt + FOR_SECONDS * 1000)) / 1000;

  // A rule created after the disconnections: its backfill, run by the sweep (due 10 s after, then each minute, 30 s a run at most).
  log(`a second offline rule: its backfill over ${DEVICES} devices…`);
  const lateAt = Date.now();
  const late = (
    await api<{ alarm_rule: { id: string } }>('POST', `/workspaces/${ws}/alarm-rules`, {
      name: 'cold room offline (late)',
      kind: 'offline',
      severity: 'major',
      for_seconds: FOR_SECONDS,
      target: { fleets: [fleet] },
    })
  ).alarm_rule.id;
  const runs = new Map<number, { ms: number; backfilled: number }>();
  const collectRuns = () => {
    for (const schedule of runtime.schedules())
      if (schedule.function === SWEEP)
        for (const run of schedule.recent) {
          const backfilled = (run.result as { alarms?: { backfilled?: number } } | undefined)?.alarms?.backfilled ?? 0;
          if (run.startedAt >= lateAt && backfilled) runs.set(run.startedAt, { ms: run.endedAt - run.startedAt, backfilled });
        }
  };
  while (await getBackfill(db, ws, late)) {
    collectRuns();
    if (Date.now() - lateAt > 30 * 60_000) throw new Error('the backfill did not end in 30 minutes');
    await pause(1000);
  }
  const backfillDoneAt = Date.now();
  await pause(2000);
  collectRuns();
  const backfilledDevices = [...runs.values()].reduce((a, r) => a + r.backfilled, 0);
  const backfillMs = [...runs.values()].reduce((a, r) => a + r.ms, 0);
  printTable('bench:alarms', [
    { figure: 'devices', value: DEVICES.toLocaleString('en') },
    { figure: 'disconnected at once', value: OFFLINE.toLocaleString('en') },
    { figure: 'disconnections written in', value: `${((lastAt - firstAt) / 1000).toFixed(1)} s` },
    {
      figure: `${OFFLINE.toLocaleString('en')}th alarm open after for_seconds (from the last disconnection)`,
      value: `${afterForSeconds.toFixed(1)} s (target ≤ 120 s)`,
    },
    { figure: 'from the first disconnection + for_seconds', value: `${((allOpenAt - (firstAt + FOR_SECONDS * 1000)) / 1000).toFixed(1)} s` },
    { figure: 'alarms open', value: open.toLocaleString('en') },
    {
      figure: 'sweep DynamoDB reads (requests)',
      value: `${total} (${Object.entries(reads)
        .map(([op, n]) => `${op} ${n}`)
        .join(', ')})`,
    },
    { figure: 'sweep reads per due timer', value: (total / OFFLINE).toFixed(3) },
    { figure: 'sweep reads per device', value: (total / DEVICES).toFixed(4) },
    { figure: 'late rule: its backfill ended after (from its creation)', value: `${((backfillDoneAt - lateAt) / 1000).toFixed(1)} s` },
    {
      figure: 'late rule: sweep runs that backfilled, devices read',
      value: `${runs.size} runs, ${backfilledDevices.toLocaleString('en')} devices (${OFFLINE.toLocaleString('en')} timers to write)`,
    },
    {
      figure: 'late rule: those runs’ time per 10,000 devices',
      value: backfilledDevices ? `${((backfillMs / backfilledDevices) * 10).toFixed(1)} s` : '-',
    },
  ]);
};

try {
  if (args.only !== 'offline') {
    const { measureThresholdCost } = await import('./alarms-threshold');
    await measureThresholdCost(runtime, { scale: Number(args.scale ?? 1), log });
  }
  if (args.only !== 'threshold') await measureOffline();
} finally {
  await runtime.stop();
}
