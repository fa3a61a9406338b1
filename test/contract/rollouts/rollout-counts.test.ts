/**
 * The rollout counts the registry stream's consumer keeps, against DynamoDB Local's real stream
 * records: a scenario of two rollouts (a job and a rate-limited FOTA: results, failures, progress,
 * cancels, replacements, releases, a rollout cancel) is written once and its records captured;
 * then each way Lambda may deliver them (in order, twice, a crash mid-batch and the batch again,
 * a retry from the failed record, bisected halves, four parallel lanes with duplicates) counts
 * them into a table of its own. Every way must end with exactly the counts of the items.
 */
import { jest } from '@jest/globals';
import { ScanCommand, TransactWriteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { until } from '../../../local/ports';
import { startDynamoDbStreamPoller, streamFilterOf } from '../../../local/dynamodb-stream-poller';
import { finishFota, scheduleFleetFota } from '../../../lambdas/domain/fleet-ops/fota';
import { cancelJob, completeJob, scheduleFleetJob, scheduleJob } from '../../../lambdas/domain/fleet-ops/jobs';
import { countedChangeOf, countRolloutChanges } from '../../../lambdas/domain/fleet-ops/rollout-counts';
import { cancelRollout } from '../../../lambdas/domain/fleet-ops/rollouts';
import { sweepRollouts } from '../../../lambdas/domain/fleet-ops/rollout-sweep';
import type { Db } from '../../../lambdas/shared/clients';
import { metrics } from '../../../lambdas/shared/metrics';
import { JOB_STATUSES, type JobStatus } from '../../../lambdas/schemas/job';
import { REGISTRY_SWEEP_INDEX, ROLLOUT_SORT_KEY_PREFIX } from '../../../lambdas/stores/keys';
import { registryChangeOf } from '../../../lambdas/stores/registry-stream';
import type { RolloutTally } from '../../../lambdas/stores/rollout-counter-store';
import { getRollout } from '../../../lambdas/stores/rollout-store';
import { REGISTRY_STREAM } from '../../../lambdas/streams';
import { freshTable } from '../../helpers/db';
import { scheduledWhole, workspaceWithFleets } from '../../helpers/fleets';

let source: Db;
let records: DynamoDBRecord[];
let workspaceId: string;
let rollouts: { job: string; fota: string };
/** What each rollout's counts must be: its devices' states, read from the items (and the replaced ones, known from the scenario). */
let truth: Record<string, Record<JobStatus, number>>;

const zero = () => Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;

beforeAll(async () => {
  source = await freshTable(undefined, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
  const captured: DynamoDBRecord[] = [];
  const accepts = streamFilterOf(REGISTRY_STREAM);
  const poller = await startDynamoDbStreamPoller({
    tableName: source.table,
    batchSize: 1000,
    maxBatchingWindowMs: 0,
    retryAttempts: 0,
    bisectBatchOnError: false,
    timeoutMs: 30_000,
    functionName: 'capture',
    filter: accepts,
    handler: async (event) => void captured.push(...event.Records),
    startingPosition: 'TRIM_HORIZON',
  });

  const { caller, workspace_id, inNorth, inSouth } = await workspaceWithFleets(source, 99);
  workspaceId = workspace_id;
  const devices = [...inNorth, inSouth].map((d) => d.id).sort();
  const place = (id: string) => ({ workspace_id, fleet_id: '', device_id: id });

  // A job on every device: 30 done, 15 failed, 10 canceled, 10 replaced while pending, 5 replaced once done.
  const job = await scheduledWhole('job', scheduleFleetJob(source, caller, workspace_id, 'update', { to: 2 }));
  const [done, failed, canceled, replacedPending, replacedDone] = [
    devices.slice(0, 30),
    devices.slice(30, 45),
    devices.slice(45, 55),
    devices.slice(55, 65),
    devices.slice(65, 70),
  ];
  for (const id of [...done, ...replacedDone]) await completeJob(source, id, 'update', { ok: true }, place(id));
  for (const id of failed) await completeJob(source, id, 'update', { error: 'disk full' }, place(id));
  for (const id of canceled) await cancelJob(source, caller, id, 'update');
  for (const id of [...replacedPending, ...replacedDone]) await scheduleJob(source, caller, id, 'update', { to: 3 });

  // A FOTA released 30 a minute with a timeout: progress, outcomes, a release by the sweep, then a cancel.
  const fota = await scheduledWhole(
    'fota',
    scheduleFleetFota(source, caller, workspace_id, { firmwareId: 'fw', firmwareVersion: '2.0' }, undefined, { max_per_minute: 30, timeout_seconds: 600 }),
  );
  const released = devices.slice(0, 30);
  for (const id of released.slice(0, 10)) await finishFota(source, id, { status: 'in_progress', message: 'downloading' }, place(id));
  for (const id of released.slice(0, 6)) await finishFota(source, id, { status: 'done' }, place(id));
  for (const id of released.slice(10, 12)) await finishFota(source, id, { status: 'failed', message: 'bad image' }, place(id));
  const minuteLater = Date.now() + 61_000;
  expect(await sweepRollouts({ db: source, now: () => minuteLater }, { now: minuteLater, deadline: minuteLater + 40_000 })).toMatchObject({ released: 30 });
  await cancelRollout(source, caller, workspace_id, fota.rollout_id!);
  expect((await sweepRollouts({ db: source, now: () => minuteLater }, { now: minuteLater, deadline: minuteLater + 40_000 })).canceled).toBeGreaterThan(0);
  rollouts = { job: job.rollout_id!, fota: fota.rollout_id! };

  // The truth: every item of a rollout in its state, plus what the replaced ones were there.
  const { Items = [] } = await source.doc.send(
    new ScanCommand({ TableName: source.table, ConsistentRead: true, FilterExpression: 'attribute_exists(rollout_id)' }),
  );
  truth = { [rollouts.job]: zero(), [rollouts.fota]: zero() };
  for (const item of Items) if (!String(item.sk).startsWith(ROLLOUT_SORT_KEY_PREFIX)) truth[item.rollout_id as string][item.status as JobStatus] += 1;
  truth[rollouts.job].canceled += replacedPending.length;
  truth[rollouts.job].done += replacedDone.length;

  // Every change is on the stream once the last one is: DynamoDB Local keeps one shard, in order.
  const changes = Items.filter((i) => !String(i.sk).startsWith(ROLLOUT_SORT_KEY_PREFIX)).length;
  await until(() => captured.length >= changes + 2 * devices.length, 'the scenario’s records', 30_000);
  await until(
    async () => {
      const before = captured.length;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return captured.length === before;
    },
    'no more records',
    30_000,
  );
  await poller.stop();
  records = captured;
}, 180_000);

/** A table of its own for one way of delivering, with the two rollouts' items (what their counts are kept beside). */
const countingTable = async () => {
  const db = await freshTable(undefined, { indexes: [REGISTRY_SWEEP_INDEX] });
  const { Items = [] } = await source.doc.send(
    new QueryCommand({
      TableName: source.table,
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :r)',
      ExpressionAttributeValues: { ':pk': `WKS#${workspaceId}`, ':r': ROLLOUT_SORT_KEY_PREFIX },
    }),
  );
  for (const Item of Items) await db.doc.send(new PutCommand({ TableName: db.table, Item }));
  return db;
};

/** A Db whose transactions fail from the `from`-th on (`only`: that one alone), as a crash or a throttled call would. */
const failing = (db: Db, from: number, only = false): Db => {
  let transactions = 0;
  const send = (command: unknown) => {
    if (command instanceof TransactWriteCommand) {
      transactions += 1;
      if (transactions === from || (!only && transactions > from)) return Promise.reject(Object.assign(new Error('the process died'), { name: 'Crash' }));
    }
    return db.doc.send(command as never);
  };
  return { table: db.table, doc: { send } as unknown as Db['doc'] };
};

const count = (db: Db, batch: DynamoDBRecord[]) => countRolloutChanges({ db, concurrency: 4 }, batch);

/** How many state changes `run` adds to the consumer's RolloutStateChanges metric. */
const stateChangesMetric = async (run: () => Promise<void>) => {
  const spy = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
  try {
    await run();
    return spy.mock.calls.filter(([name]) => name === 'RolloutStateChanges').reduce((sum, [, , value]) => sum + value, 0);
  } finally {
    spy.mockRestore();
  }
};

const batchesOf = <T>(items: T[], size: number) => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

const tallies = async (db: Db) => {
  const read = async (id: string) => (await getRollout(db, workspaceId, id))!.tally;
  return { job: await read(rollouts.job), fota: await read(rollouts.fota) };
};

const expectExact = (tally: RolloutTally, rolloutId: string) => {
  expect(tally.counts).toEqual(truth[rolloutId]);
  expect(tally.total).toBe(Object.values(truth[rolloutId]).reduce((a, b) => a + b, 0));
  expect(Object.values(tally.counts).reduce((a, b) => a + b, 0)).toBe(tally.total);
};

const expectAllExact = async (db: Db) => {
  const { job, fota } = await tallies(db);
  expectExact(job, rollouts.job);
  expectExact(fota, rollouts.fota);
};

describe('rollout counts from the registry stream', () => {
  it('captures a scenario with every kind of change', () => {
    const names = new Set(records.map((r) => r.eventName));
    expect(names).toEqual(new Set(['INSERT', 'MODIFY']));
    expect(records.length).toBeGreaterThan(400);
    // Every state a rollout can count shows up in the truth.
    expect(truth[rollouts.job]).toMatchObject({ pending: 30, done: 35, failed: 15, canceled: 20, queued: 0 });
    expect(truth[rollouts.fota]).toMatchObject({ done: 6, failed: 2, in_progress: 4, queued: 0 });
    expect(truth[rollouts.fota].canceled).toBeGreaterThan(60);
  });

  it('counts each change once, in order, a batch of 1,000 at a time', async () => {
    const db = await countingTable();

    for (const batch of batchesOf(records, 1000)) expect(await count(db, batch)).toBeUndefined();

    await expectAllExact(db);
  });

  it('counts nothing twice when every batch comes twice, in the counts or in the operator metric', async () => {
    const db = await countingTable();
    const changes = records.filter((r) => {
      const change = registryChangeOf(r);
      return change && countedChangeOf(change).counted;
    }).length;

    const metric = await stateChangesMetric(async () => {
      for (const batch of batchesOf(records, 50)) {
        await count(db, batch);
        await count(db, batch);
      }
    });

    await expectAllExact(db);
    expect(changes).toBeGreaterThan(100);
    expect(metric).toBe(changes);
  });

  it('loses and doubles nothing when the process dies mid-batch and Lambda sends the batch again', async () => {
    const db = await countingTable();
    const crashed = await count(failing(db, 2), records);
    const partial = await tallies(db);

    expect(crashed).toBeDefined();
    // Some transactions were written before the crash: counting them again would double them.
    expect([...Object.values(partial.job.counts), ...Object.values(partial.fota.counts)]).not.toEqual([
      ...Object.values(truth[rollouts.job]),
      ...Object.values(truth[rollouts.fota]),
    ]);
    expect(partial.job.counts.done + partial.fota.counts.canceled).toBeGreaterThan(0);
    expect(await count(db, records)).toBeUndefined();
    await expectAllExact(db);
  });

  it('counts exactly when the stream retries from the first record it was told failed', async () => {
    const db = await countingTable();

    const failedAt = await count(failing(db, 2, true), records);
    expect(failedAt).toBeGreaterThan(0);
    expect(await count(db, records.slice(failedAt))).toBeUndefined();

    await expectAllExact(db);
  });

  it('counts exactly when a crashed batch is bisected, and each half retried', async () => {
    const db = await countingTable();
    await count(failing(db, 3), records);

    const half = Math.ceil(records.length / 2);
    await count(failing(db, 1), records.slice(0, half));
    await count(db, records.slice(0, half));
    await count(db, records.slice(half));

    await expectAllExact(db);
  });

  it('counts exactly with four lanes at once (a device’s records in one lane, in order), duplicates and a crash in one lane', async () => {
    const db = await countingTable();
    const lanes: DynamoDBRecord[][] = [[], [], [], []];
    for (const record of records) {
      const pk = record.dynamodb!.Keys!.pk.S!;
      lanes[[...pk].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 4, 0)].push(record);
    }
    expect(lanes.every((lane) => lane.length > 0)).toBe(true);

    await Promise.all(
      lanes.map(async (lane, l) => {
        for (const [b, batch] of batchesOf(lane, 37).entries()) {
          if (l === 1 && b === 0) await count(failing(db, 1), batch);
          await count(db, batch);
          if (b % 2 === 0) await count(db, batch);
        }
      }),
    );

    await expectAllExact(db);
  });

  it('ends each rollout as its counts say, once they are exact: the job rollout stays in progress (devices pending), the FOTA one canceled', async () => {
    const db = await countingTable();
    for (const batch of batchesOf(records, 200)) await count(db, batch);

    const job = (await getRollout(db, workspaceId, rollouts.job))!.record;
    const fota = (await getRollout(db, workspaceId, rollouts.fota))!.record;
    expect([job.state, job.outcome]).toEqual(['in_progress', undefined]);
    expect([fota.state, fota.outcome]).toEqual(['canceled', undefined]);
  });
});
