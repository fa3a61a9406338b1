/**
 * Rollouts on the local runtime (in memory, the sweep every second), three figures side by side in
 * one run:
 *
 * 1. **Counts exact after the last answer**: a job on a fleet of DEVICES devices through the API
 *    (streamed answer read to the end), then every device answers (9 in 10 done, 1 in 10 failed,
 *    written as the device API writes them, 32 at once); how long after the last answer is stored
 *    the rollout's counts (kept by the registry stream's consumer) are exact. Target ≤ 5 s.
 * 2. **The consumer's cost per state change**: CHANGES pending → done stream records counted by
 *    the consumer's counting (batches of 1,000 in 4 lanes, as Lambda feeds it), against a plain
 *    counter UpdateItem per record with as many requests in flight (16), alternating, ROUNDS each:
 *    the consumer's throughput over the plain one's. Target ≥ 0.8.
 * 3. **Releases follow `max_per_minute`**: a rollout on RATE_DEVICES devices at RATE_DEVICES / 3 a
 *    minute (three releases: the scheduling's, then the sweep's a minute and two minutes later, so
 *    that it takes about two minutes whatever the size): the most released in any 60 s, and the
 *    rate between the first release and the last, against `max_per_minute`. Target within 5 %.
 *
 *   npm run bench:rollout                        # 100,000 devices; 20,000 changes; 30,000 released; 3 rounds
 *   npm run bench:rollout -- --devices 10000     # a smaller run (released: min(30,000, devices))
 *   … -- --changes 20000 --rate-devices 30000 --rounds 3
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Db } from '../lambdas/shared/clients';
import type { LocalRuntime } from '../local/runtime';
import { median, printTable, timeMs } from './stats';

// The sweep logs each run (every second here): warnings only; and the handlers' operator metrics
// (an EMF line per stream batch) stay out of the output. Set before the handlers' modules load,
// which read them once: they are imported below.
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
const { completeJob } = await import('../lambdas/domain/fleet-ops/jobs');
const { countRolloutChanges } = await import('../lambdas/domain/fleet-ops/rollout-counts');
const { scheduledRollout } = await import('../lambdas/domain/fleet-ops/rollouts');
const { documentClient } = await import('../lambdas/shared/clients');
const { newId, nowIso } = await import('../lambdas/shared/ids');
const { WRITE_CONCURRENCY } = await import('../lambdas/shared/env');
const { putAll } = await import('../lambdas/stores/items');
const { deviceKey, deviceLocatorKey, jobKey, rolloutCounterKey } = await import('../lambdas/stores/keys');
const { createRollout } = await import('../lambdas/stores/rollout-store');
const { quota } = await import('../lambdas/domain/limits/limits');
const { getWorkspaceOfAccount } = await import('../lambdas/stores/workspace-store');
const { startLocalRuntime } = await import('../local/runtime');

const { values: args } = parseArgs({
  options: { devices: { type: 'string' }, changes: { type: 'string' }, 'rate-devices': { type: 'string' }, rounds: { type: 'string' } },
});
const DEVICES = Number(args.devices ?? 100_000);
const CHANGES = Number(args.changes ?? 20_000);
const RATE_DEVICES = Number(args['rate-devices'] ?? Math.min(30_000, DEVICES));
const ROUNDS = Number(args.rounds ?? 3);
const ANSWER_CONCURRENCY = 32;
const LANES = 4;
const IN_FLIGHT = 16;

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

const api = (runtime: LocalRuntime) => {
  const headers = { 'content-type': 'application/json', 'x-api-key': runtime.api_key };
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${runtime.base_url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as T;
  };
};

type Counts = Record<string, number>;
type RolloutAnswer = { rollout: { total: number; counts: Counts; created_at: string } };

/** Seeds `count` devices in a new fleet, straight into the registry (as bench:schedule does). */
const seedFleet = async (runtime: LocalRuntime, db: Db, name: string, count: number) => {
  const call = api(runtime);
  const ws = runtime.workspace_id;
  const fleet = (await call<{ fleet: { id: string } }>('POST', `/workspaces/${ws}/fleets`, { name })).fleet.id;
  const devices = Array.from({ length: count }, (_, i) => ({
    id: newId('dev'),
    name: `${name}-${i}`,
    account_id: runtime.account_id,
    workspace_id: ws,
    fleet_id: fleet,
    phys_id: '',
    created_at: nowIso(),
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
  return { fleet, devices: devices.map((d) => d.id) };
};

/** Schedules a fleet-wide job through the API, reading the streamed answer to the end; its rollout. */
const scheduleOn = async (runtime: LocalRuntime, fleet: string, name: string, body: unknown, expected: number) => {
  const answer = await api(runtime)<{ job: { rollout_id: string; devices: string[] } }>(
    'POST',
    `/workspaces/${runtime.workspace_id}/jobs/${name}?fleet=${fleet}`,
    body,
  );
  if (answer.job.devices.length !== expected) throw new Error(`${name}: ${answer.job.devices.length} devices, expected ${expected}`);
  return answer.job.rollout_id;
};

/** Figure 1: from the last answer stored to the counts exact. */
const exactAfterLastAnswer = async (runtime: LocalRuntime, db: Db) => {
  console.log(`seeding ${DEVICES} devices…`);
  const { fleet, devices } = await seedFleet(runtime, db, 'answers', DEVICES);
  let rollout = '';
  const scheduleMs = await timeMs(async () => (rollout = await scheduleOn(runtime, fleet, 'bench-answer', { value: { to: '2.0' } }, DEVICES)));
  console.log(`scheduled on ${DEVICES} devices in ${(scheduleMs / 1000).toFixed(1)} s; every device answers…`);
  const ws = runtime.workspace_id;
  // One device in ten fails (its result has an `error`): the counts must say exactly which.
  const fails = (id: string) => id.charCodeAt(id.length - 1) % 10 === 0;
  const failures = devices.filter(fails).length;
  const answerMs = await timeMs(() =>
    eachLimit(devices, ANSWER_CONCURRENCY, (id) =>
      completeJob(db, id, 'bench-answer', fails(id) ? { error: 'flash failed' } : { ok: true }, { workspace_id: ws, fleet_id: fleet, device_id: id }),
    ),
  );
  const lastAnswer = Date.now();
  const path = `/workspaces/${ws}/rollouts/${rollout}`;
  const exact = { queued: 0, pending: 0, in_progress: 0, done: DEVICES - failures, failed: failures, timed_out: 0, canceled: 0 };
  let last: RolloutAnswer['rollout'] | undefined;
  for (;;) {
    last = (await api(runtime)<RolloutAnswer>('GET', path)).rollout;
    if (last.total === DEVICES && Object.entries(exact).every(([state, n]) => last!.counts[state] === n)) break;
    if (Date.now() - lastAnswer > 600_000) throw new Error(`counts never exact: ${JSON.stringify(last)}`);
    await pause(50);
  }
  return { exactMs: Date.now() - lastAnswer, answerMs, scheduleMs, counts: last.counts };
};

/** A pending → done stream record of a job of a rollout, as DynamoDB Streams delivers it (NEW_AND_OLD_IMAGES). */
const answerRecord = (ws: string, rollout: string, deviceId: string, sequence: number): DynamoDBRecord => {
  const base = {
    ...jobKey(deviceId, 'bench-cost'),
    name: 'bench-cost',
    device_id: deviceId,
    workspace_id: ws,
    fleet_id: 'flt-bench',
    rollout_id: rollout,
    scheduled_at: '2026-01-01T00:00:00.000Z',
    value: '{}',
  };
  return {
    eventID: randomUUID(),
    eventName: 'MODIFY',
    dynamodb: {
      Keys: marshall(jobKey(deviceId, 'bench-cost')) as never,
      OldImage: marshall({ ...base, status: 'pending', updated_at: '2026-01-01T00:00:00.000Z' }) as never,
      NewImage: marshall({
        ...base,
        status: 'done',
        result: '{"ok":true}',
        updated_at: '2026-01-01T00:01:00.000Z',
        completed_at: '2026-01-01T00:01:00.000Z',
      }) as never,
      SequenceNumber: String(sequence).padStart(21, '0'),
    },
  };
};

/** Figure 2: the consumer's counting against a plain counter UpdateItem per state change. */
const costPerChange = async (runtime: LocalRuntime, db: Db) => {
  const ws = runtime.workspace_id;
  const consumer: number[] = [];
  const plain: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const record = scheduledRollout(ws, 'job', { job_name: 'bench-cost', value: {} }, [], {});
    const rollout = record.id;
    const workspace = (await getWorkspaceOfAccount(db, runtime.account_id, ws))!;
    await createRollout(db, record, Date.now() + 3_600_000, quota(db, workspace, 'rollouts_per_day'));
    const records = Array.from({ length: CHANGES }, (_, i) => answerRecord(ws, rollout, newId('dev'), round * CHANGES + i));
    // Lambda's lanes: a device's records in one lane, batches of up to 1,000, each lane one batch at a time.
    const lanes = Array.from({ length: LANES }, (_, l) => records.filter((_, i) => i % LANES === l));
    consumer.push(
      await timeMs(() =>
        Promise.all(
          lanes.map(async (lane) => {
            for (let i = 0; i < lane.length; i += 1000) {
              const failed = await countRolloutChanges({ db, concurrency: 4 }, lane.slice(i, i + 1000));
              if (failed !== undefined) throw new Error(`counting failed at record ${failed}`);
            }
          }),
        ),
      ),
    );
    const counter = rolloutCounterKey(ws, `rol-plain-${round}`, 0);
    plain.push(
      await timeMs(() =>
        eachLimit(records, IN_FLIGHT, () =>
          db.doc.send(
            new UpdateCommand({
              TableName: db.table,
              Key: counter,
              UpdateExpression: 'ADD c_pending :m, c_done :p',
              ExpressionAttributeValues: { ':m': -1, ':p': 1 },
            }),
          ),
        ),
      ),
    );
    process.stderr.write('.');
  }
  process.stderr.write('\n');
  return { consumer, plain };
};

/** Figure 3: the releases of a rate-limited rollout, from its devices' release times. */
const releases = async (runtime: LocalRuntime, db: Db) => {
  const rate = Math.ceil(RATE_DEVICES / 3);
  console.log(`seeding ${RATE_DEVICES} devices for a rollout at ${rate} a minute…`);
  const { fleet } = await seedFleet(runtime, db, 'staged', RATE_DEVICES);
  const rollout = await scheduleOn(runtime, fleet, 'bench-staged', { value: {}, rollout: { max_per_minute: rate } }, RATE_DEVICES);
  const ws = runtime.workspace_id;
  const path = `/workspaces/${ws}/rollouts/${rollout}`;
  const started = Date.now();
  for (;;) {
    const { counts } = (await api(runtime)<RolloutAnswer>('GET', path)).rollout;
    if (counts.pending === RATE_DEVICES) break;
    if (Date.now() - started > 300_000) throw new Error(`not every device released: ${JSON.stringify(counts)}`);
    await pause(1000);
  }
  const { devices } = await api(runtime)<{ devices: Array<{ updated_at: string }> }>('GET', `${path}/devices?status=pending`);
  const times = devices.map((d) => Date.parse(d.updated_at)).sort((a, b) => a - b);
  // The most released in any 60 s window (two pointers over the sorted release times).
  let most = 0;
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j] - times[i] >= 60_000) i++;
    most = Math.max(most, j - i + 1);
  }
  const batches = [...new Set(times)].map((t) => ({ at: t, count: times.filter((x) => x === t).length }));
  const span = times.at(-1)! - times[0];
  // Devices released after the first minute's, over the time they took: the rate the sweep kept.
  const kept = ((times.length - batches[0].count) / span) * 60_000;
  return { rate, most, kept, batches, listed: times.length };
};

const main = async () => {
  console.log('starting the local runtime (in memory, the sweep every second)…');
  const runtime = await startLocalRuntime({ sweepIntervalSeconds: 1, log: (line) => console.log(`  ${line}`) });
  try {
    const db: Db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
    const exact = await exactAfterLastAnswer(runtime, db);
    console.log(`counts exact ${(exact.exactMs / 1000).toFixed(2)} s after the last answer; counting ${CHANGES} state changes, ${ROUNDS} rounds…`);
    const cost = await costPerChange(runtime, db);
    console.log(`consumer ${cost.consumer.map(Math.round).join(', ')} ms, plain ${cost.plain.map(Math.round).join(', ')} ms`);
    const released = await releases(runtime, db);

    const [consumer, plain] = [median(cost.consumer), median(cost.plain)];
    printTable(`rollouts on the local runtime (DEVICES=${DEVICES}, CHANGES=${CHANGES}, RATE_DEVICES=${RATE_DEVICES})`, [
      { figure: `counts exact after the last of ${DEVICES} answers`, measured: `${(exact.exactMs / 1000).toFixed(2)} s`, target: '≤ 5 s' },
      {
        figure: `consumer vs plain counter UpdateItem, ${CHANGES} changes (median of ${ROUNDS})`,
        measured: `${(plain / consumer).toFixed(2)}× the throughput (${Math.round((CHANGES / consumer) * 1000)} vs ${Math.round((CHANGES / plain) * 1000)} changes/s)`,
        target: '≥ 0.8',
      },
      {
        figure: `most released in any 60 s, max_per_minute ${released.rate}`,
        measured: `${released.most} (${((released.most / released.rate - 1) * 100).toFixed(1)} %)`,
        target: '≤ max_per_minute',
      },
      {
        figure: 'rate kept after the first release',
        measured: `${Math.round(released.kept)}/min (${((released.kept / released.rate - 1) * 100).toFixed(1)} %)`,
        target: 'within 5 %',
      },
    ]);
    console.log(
      `\nanswers: ${DEVICES} in ${(exact.answerMs / 1000).toFixed(1)} s (${Math.round((DEVICES / exact.answerMs) * 1000)}/s); scheduling ${(exact.scheduleMs / 1000).toFixed(1)} s; final counts ${JSON.stringify(exact.counts)}`,
    );
    console.log(`consumer rounds (ms): ${cost.consumer.map(Math.round).join(', ')}; plain rounds (ms): ${cost.plain.map(Math.round).join(', ')}`);
    console.log(
      `releases (time after the first, devices): ${released.batches.map((b) => `+${((b.at - released.batches[0].at) / 1000).toFixed(1)} s ${b.count}`).join(', ')}`,
    );
  } finally {
    await runtime.stop();
  }
};

await main();
