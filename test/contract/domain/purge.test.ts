import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { purgeDataHook, runPurge, type PurgeDeps } from '../../../lambdas/domain/data/purge';
import { deleteDevice } from '../../../lambdas/domain/registry/device-deletion';
import { createDevice, getDevice } from '../../../lambdas/domain/registry/devices';
import { deleteWorkspace } from '../../../lambdas/domain/tenancy/workspace-deletion';
import { createWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import type { PurgeJob } from '../../../lambdas/schemas/retention';
import type { Db } from '../../../lambdas/shared/clients';
import { ValidationError } from '../../../lambdas/shared/errors';
import { newId } from '../../../lambdas/shared/ids';
import type { DataPoint, PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { HOUR_MS, hourKey, seriesPartition, shardOf, stampPartition } from '../../../lambdas/stores/timeseries/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
let series: Db;
let store: TimeseriesStore;
beforeAll(async () => {
  db = await freshTable();
  series = await freshTable(`timeseries-${randomUUID()}`);
  store = dynamoDbTimeseriesStore(series, { writeConcurrency: 4 });
});

/** The retention queue, as the API and retention Lambdas see it: what was sent, with its delay. */
const queue = () => {
  const sent: Array<{ job: PurgeJob; delaySeconds: number }> = [];
  return { sent, enqueue: async (job: PurgeJob, delaySeconds: number) => void sent.push({ job, delaySeconds }) };
};

/** A job run as the retention Lambda runs it, its wait over (`not_before` passed), with a Lambda's 5 minutes. */
const run = (job: PurgeJob, deps: Partial<PurgeDeps> = {}) =>
  runPurge({ db, store, enqueue: async () => undefined, now: () => job.not_before, ...deps }, job, Date.now() + 300_000);

const HOUR_AGO_3 = Math.floor((Date.now() - 3 * HOUR_MS) / HOUR_MS) * HOUR_MS;

/**
 * Points of several devices, as the ingest writes them: `count` seconds of each device (so that
 * each write's pack holds every device's points of its seconds: packs of several devices), plus
 * points of `alone` in packs of their own (a minute apart), all in a sealed hour.
 */
const write = async (workspace_id: string, devices: string[], alone: string, count = 40) => {
  const points: PointToStore[] = [];
  for (let i = 0; i < count; i++)
    for (const device_id of devices)
      points.push({
        workspace_id,
        fleet_id: `flt_${device_id}`,
        device_id,
        tag: 't',
        timestamp_device: new Date(HOUR_AGO_3 + i * 1000).toISOString(),
        timestamp_in: new Date(HOUR_AGO_3 + i * 1000 + 5).toISOString(),
        payload: i,
      });
  for (let i = 0; i < count; i++)
    points.push({
      workspace_id,
      fleet_id: `flt_${alone}`,
      device_id: alone,
      tag: 'alone',
      timestamp_device: new Date(HOUR_AGO_3 + 60_000 + i * 20_000).toISOString(),
      timestamp_in: new Date(HOUR_AGO_3 + 60_000 + i * 20_000 + 5).toISOString(),
      payload: i,
    });
  // One write per 100 points: several packs per second range, over the 8 shards.
  for (let i = 0; i < points.length; i += 100) await store.write(points.slice(i, i + 100));
  // A point of the layout before packs (one item per point).
  const legacyAt = new Date(HOUR_AGO_3 + 30 * 60_000).toISOString();
  await series.doc.send(
    new PutCommand({
      TableName: series.table,
      Item: {
        pk: seriesPartition(workspace_id, shardOf(alone)),
        sk: `${legacyAt}#${alone}#legacy`,
        device_id: alone,
        fleet_id: `flt_${alone}`,
        tag: 'legacy',
        timestamp_in: legacyAt,
        payload: '1',
      },
    }),
  );
};

/** Every point of a workspace, as the storage query answers them. */
const pointsOf = async (workspaceId: string) => {
  const points: DataPoint[] = [];
  for await (const point of store.query({ workspaceId, from: 0, size: 100_000, order: 'asc', consistent: true })) points.push(point);
  return points;
};
const countBy = (points: DataPoint[]) => {
  const by: Record<string, number> = {};
  for (const p of points) by[p.device_id] = (by[p.device_id] ?? 0) + 1;
  return by;
};

/** Every item of the time-series table whose partition starts so. */
const itemsUnder = async (prefix: string) => {
  const items: Array<Record<string, unknown>> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await series.doc.send(new ScanCommand({ TableName: series.table, ConsistentRead: true, ExclusiveStartKey }));
    items.push(...(page.Items ?? []).filter((item) => String(item.pk).startsWith(prefix)));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
};

/** A workspace with devices: `gone` deleted with ?purge=data (its job recorded), the others kept. */
const deletedWithPurge = async (names: string[]) => {
  const { caller, workspace_id } = await newAccount(db);
  const devices = [];
  for (const name of names) devices.push(await createDevice(db, caller, workspace_id, { name, phys_id: '' }));
  const { sent, enqueue } = queue();
  return { caller, workspace_id, devices, sent, purge: purgeDataHook(enqueue, 'dynamodb') };
};

describe('purging a deleted device’s points on DynamoDB Local', () => {
  it('queues a job once the device is deleted, which deletes every point of it and none of the others, and stamps the sealed hour anew', async () => {
    const { caller, workspace_id, devices, sent, purge } = await deletedWithPurge(['gone', 'kept', 'other']);
    const [gone, kept, other] = devices.map((d) => d.id);
    await write(workspace_id, [gone, kept, other], gone);
    const before = countBy(await pointsOf(workspace_id));
    const stampBefore = await itemsUnder(stampPartition(workspace_id));

    await deleteDevice(db, caller, workspace_id, gone, { sessions: { enabled: false }, purgeData: purge });

    expect(sent).toHaveLength(1);
    const [{ job, delaySeconds }] = sent;
    expect(job).toMatchObject({ kind: 'purge', workspace_id, device_id: gone, account_id: caller.accountId });
    // It waits for the points the ingest may still write (its cache of places, then its timeout).
    expect(delaySeconds).toBeGreaterThan(600);
    expect(await run(job)).toBe('done');

    expect(before).toEqual({ [gone]: 81, [kept]: 40, [other]: 40 });
    expect(countBy(await pointsOf(workspace_id))).toEqual({ [kept]: 40, [other]: 40 });
    const bodies = (await itemsUnder(`TS#${workspace_id}#`)).map((item) => String(item.p ?? item.device_id));
    expect(bodies.filter((body) => body.includes(gone))).toEqual([]);
    // The hour's rollups are computed again: its stamp is a new, final one.
    const stamp = (await itemsUnder(stampPartition(workspace_id))).find((item) => item.sk === hourKey(HOUR_AGO_3));
    expect(stamp).toMatchObject({ t: expect.any(String) });
    expect(stamp?.p).toBeUndefined();
    expect(stamp?.t).not.toBe(stampBefore.find((item) => item.sk === hourKey(HOUR_AGO_3))?.t);
  });

  it('finishes a purge that crashed half-way when the message comes back, and goes on from its cursor past a deadline', async () => {
    const { caller, workspace_id, devices, sent, purge } = await deletedWithPurge(['gone', 'kept']);
    const [gone, kept] = devices.map((d) => d.id);
    await write(workspace_id, [gone, kept], gone, 200);
    await deleteDevice(db, caller, workspace_id, gone, { sessions: { enabled: false }, purgeData: purge });
    const [{ job }] = sent;

    // The Lambda dies at its fourth write: some items purged, most not.
    let writes = 0;
    const crashing: Db = {
      ...series,
      doc: {
        send: (command: { constructor: { name: string } }) => {
          if (command.constructor.name !== 'QueryCommand' && ++writes > 3) return Promise.reject(new Error('Lambda crashed'));
          return series.doc.send(command as never);
        },
      } as unknown as Db['doc'],
    };
    await expect(run(job, { store: dynamoDbTimeseriesStore(crashing, { writeConcurrency: 1 }) })).rejects.toThrow('Lambda crashed');
    const halfway = countBy(await pointsOf(workspace_id));
    expect(halfway[gone]).toBeGreaterThan(0);
    expect(halfway[gone]).toBeLessThan(401);

    // The deadline has passed: the run puts itself back with its cursor, and the job it put finishes.
    const requeued: PurgeJob[] = [];
    const stopped = await runPurge(
      { db, store, enqueue: async (next) => void requeued.push(next), now: () => job.not_before },
      { ...job, cursor: { shard: 3 } },
      Date.now() + 59_000,
    );
    expect(stopped).toBe('continued');
    expect(requeued).toEqual([{ ...job, cursor: { shard: 3 } }]);
    expect(await run({ ...job, cursor: { shard: 3 } })).toBe('done');
    // The shards before the cursor were not read by that job: the message SQS gives again (no cursor) finishes them.
    expect(await run(job)).toBe('done');

    expect(countBy(await pointsOf(workspace_id))).toEqual({ [kept]: 200 });
  });

  it('lets two purges of one workspace rewrite the same packs at once, neither putting back the other’s points', async () => {
    const { caller, workspace_id, devices, sent, purge } = await deletedWithPurge(['a', 'b', 'kept']);
    const [a, b, kept] = devices.map((d) => d.id);
    await write(workspace_id, [a, b, kept], a, 60);
    await deleteDevice(db, caller, workspace_id, a, { sessions: { enabled: false }, purgeData: purge });
    await deleteDevice(db, caller, workspace_id, b, { sessions: { enabled: false }, purgeData: purge });

    expect(await Promise.all(sent.map(({ job }) => run(job)))).toEqual(['done', 'done']);

    expect(countBy(await pointsOf(workspace_id))).toEqual({ [kept]: 60 });
  });

  it('purges nothing for a device that is not deleted, nor for a deleted one named with another workspace', async () => {
    const { caller, workspace_id, devices } = await deletedWithPurge(['live', 'gone']);
    const [live, gone] = devices.map((d) => d.id);
    await write(workspace_id, [live, gone], live, 5);
    await deleteDevice(db, caller, workspace_id, gone, { sessions: { enabled: false } });
    const job = (device_id: string, workspace = workspace_id): PurgeJob => ({
      kind: 'purge',
      account_id: caller.accountId,
      workspace_id: workspace,
      device_id,
      not_before: Date.now(),
    });

    expect(await run(job(live))).toBe('refused');
    expect(await run(job(gone, newId('wks')))).toBe('refused');

    // Without ?purge=data a deleted device's points stay (until the workspace's retention).
    expect(countBy(await pointsOf(workspace_id))).toEqual({ [live]: 11, [gone]: 5 });
  });

  it('is refused (400 naming query.purge, nothing written) where the store cannot delete points', async () => {
    const { caller, workspace_id, devices, sent } = await deletedWithPurge(['stays']);
    const hook = purgeDataHook(queue().enqueue, 'timestream');

    const refused = deleteDevice(db, caller, workspace_id, devices[0].id, { sessions: { enabled: false }, purgeData: hook });

    await expect(refused).rejects.toThrow(ValidationError);
    await expect(refused).rejects.toMatchObject({ details: [{ field: 'query.purge' }] });
    expect(await getDevice(db, caller, workspace_id, devices[0].id)).toMatchObject({ id: devices[0].id });
    expect(sent).toEqual([]);
  });
});

describe('purging a deleted workspace’s points on DynamoDB Local', () => {
  it('deletes every item of its partitions and stamps, and none of another workspace', async () => {
    const { caller } = await newAccount(db);
    const doomed = await createWorkspace(db, caller, { name: 'doomed', description: '' });
    const other = await createWorkspace(db, caller, { name: 'other', description: '' });
    const [d1, d2] = [newId('dev'), newId('dev')];
    await write(doomed.id, [d1, d2], d1, 30);
    await write(other.id, [d1], d2, 10);
    const { sent, enqueue } = queue();

    // Still a live workspace: its data is not purged.
    const early: PurgeJob = { kind: 'purge', account_id: caller.accountId, workspace_id: doomed.id, not_before: Date.now() };
    expect(await run(early)).toBe('refused');

    await deleteWorkspace(db, caller, doomed.id, enqueue);

    expect(sent.map(({ job }) => job)).toEqual([{ kind: 'purge', account_id: caller.accountId, workspace_id: doomed.id, not_before: expect.any(Number) }]);
    expect(await itemsUnder(`TS#${doomed.id}#`)).not.toEqual([]);
    expect(await run(sent[0].job)).toBe('done');
    expect(await itemsUnder(`TS#${doomed.id}#`)).toEqual([]);
    expect(await itemsUnder(stampPartition(doomed.id))).toEqual([]);
    expect(await pointsOf(doomed.id)).toEqual([]);
    expect(countBy(await pointsOf(other.id))).toEqual({ [d1]: 10, [d2]: 11 });
  });
});
