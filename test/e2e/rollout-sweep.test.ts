import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../lambdas/shared/clients';
import { REGISTRY_INDEXES, REGISTRY_SWEEP_INDEX, REGISTRY_TTL_ATTRIBUTE, sweepEntry } from '../../lambdas/stores/keys';
import type { CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { until } from '../../local/ports';
import { requestCounter } from '../../local/request-counter';
import type { LocalRuntime } from '../../local/runtime';
import type { ScheduleStatus } from '../../local/scheduler';
import { cloudAssemblyDir, startRuntime } from '../helpers/runtime';

/**
 * The minute sweep of rollouts runs on its schedule in both runtimes: npm start runs the handler at
 * the rate of lambdas/schedules.ts, the cloud-assembly runtime runs the template's EventBridge rule
 * on the function's bundle (here every second instead of every minute), and either finds due work
 * on the registry's sweep index.
 */
let runtime: LocalRuntime;
let client: DynamoDBClient;
const scheduleErrors: unknown[] = [];

beforeAll(async () => {
  runtime = await startRuntime({ sweepIntervalSeconds: 1, onScheduleError: (error) => void scheduleErrors.push(error) });
  client = new DynamoDBClient({});
}, 120_000);
afterAll(async () => {
  client?.destroy();
  await runtime?.stop();
});

/** The sweep's schedule: `rollout-sweep` for npm start, the template's RolloutSweepHandler… function for the assembly. */
const sweep = (): ScheduleStatus => {
  const found = runtime.schedules().find((s) => /^rollout-?sweep/i.test(s.function));
  if (!found) throw new Error(`no sweep schedule among ${JSON.stringify(runtime.schedules().map((s) => s.function))}`);
  return found;
};

it('gives the registry table its indexes (the sweep’s and the firmware-use one), ACTIVE', async () => {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: process.env.REGISTRY_TABLE }));

  expect(Table?.GlobalSecondaryIndexes?.map((g) => [g.IndexName, g.IndexStatus, g.Projection?.ProjectionType]).sort()).toEqual(
    REGISTRY_INDEXES.map((index) => [index.name, 'ACTIVE', 'KEYS_ONLY']).sort(),
  );
  expect(REGISTRY_INDEXES.map((index) => index.name)).toContain(REGISTRY_SWEEP_INDEX.name);
});

it('gives the registry table its TTL, as the stack does: rate counters, ledger entries and exports are deleted past their expiry', async () => {
  const { TimeToLiveDescription } = await client.send(new DescribeTimeToLiveCommand({ TableName: process.env.REGISTRY_TABLE }));

  expect(TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: REGISTRY_TTL_ATTRIBUTE });
});

it('runs the sweep on its schedule, one run at a time, each reading the index and ending without error', async () => {
  const doc = documentClient(client);
  await doc.send(
    new PutCommand({ TableName: process.env.REGISTRY_TABLE, Item: { pk: 'DEV#dev-sweep', sk: 'JOB#overdue', ...sweepEntry(Date.now() - 60_000, 'DUE#T00') } }),
  );
  const written = Date.now();

  await until(() => sweep().recent.filter((r) => r.startedAt > written).length >= 2, 'two sweeps after the write', 30_000);

  const status = sweep();
  expect(status).toMatchObject({ intervalMs: 1000, failures: 0, refused: 0 });
  expect(scheduleErrors).toEqual([]);
  for (let i = 1; i < status.recent.length; i++) expect(status.recent[i].startedAt).toBeGreaterThanOrEqual(status.recent[i - 1].endedAt);
  // Each run sweeps the rollouts and the alarm timers due (docs/alarms.md, "Detection").
  const alarms = { due: expect.any(Number), opened: expect.any(Number), closed: expect.any(Number), moved: expect.any(Number), backfilled: expect.any(Number) };
  for (const run of status.recent)
    expect(run.result).toEqual({ released: expect.any(Number), timedOut: expect.any(Number), canceled: expect.any(Number), alarms });

  const cloud = cloudAssemblyDir() ? (runtime as CloudAssemblyRuntime) : undefined;
  if (cloud) {
    // The function's role let it query the index (the grant is used) and refused it nothing.
    const report = cloud.report();
    expect(report.unused.filter((g) => g.startsWith(`${status.function} dynamodb:Query `) && g.endsWith(`/index/${REGISTRY_SWEEP_INDEX.name}`))).toEqual([]);
    expect(report.refused.filter((c) => c.function === status.function)).toEqual([]);
  } else {
    // Counted as Lambda invocations, and its queries as the sweep's, as any other function's.
    const rows = requestCounter().rows();
    const invokes = rows.find((r) => r.service === 'Lambda' && r.operation === 'Invoke' && r.resource === 'rollout-sweep');
    const queries = rows.find((r) => r.service === 'DynamoDB' && r.operation === 'Query' && r.caller === 'rollout-sweep');
    expect(invokes?.requests).toBeGreaterThanOrEqual(status.runs);
    expect(queries?.requests).toBeGreaterThanOrEqual(status.runs);
  }
});
