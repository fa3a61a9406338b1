import { DeleteCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { retentionSettleMs, runRestamp, type RestampDeps } from '../../../lambdas/domain/data/retention';
import { getWorkspace, updateWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import type { RestampJob } from '../../../lambdas/schemas/retention';
import type { Db } from '../../../lambdas/shared/clients';
import { ConflictError, NotFoundError } from '../../../lambdas/shared/errors';
import { newId } from '../../../lambdas/shared/ids';
import type { PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { keyTimeOf, PACK_SPAN_MICROS, TIMESERIES_TTL_ATTRIBUTE } from '../../../lambdas/stores/timeseries/keys';
import { getWorkspaceOfAccount } from '../../../lambdas/stores/workspace-store';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

const DAY = 86_400_000;
const NOW = Date.now();

let db: Db;
let series: Db;
let store: TimeseriesStore;
beforeAll(async () => {
  db = await freshTable();
  // Without the table's TTL: DynamoDB Local deletes expired items within seconds, as DynamoDB does
  // within days, and these tests read back the expiries the job writes, past ones included.
  series = await freshTable(`timeseries-${randomUUID()}`);
  store = dynamoDbTimeseriesStore(series, { writeConcurrency: 4 });
});

/** The retention queue, as the workspaces and retention Lambdas see it: what was sent, with its delay. */
const queue = () => {
  const sent: Array<{ job: RestampJob; delaySeconds: number }> = [];
  return { sent, enqueue: async (job: RestampJob, delaySeconds: number) => void sent.push({ job, delaySeconds }) };
};

/** Every item of the time-series table. */
const scanAll = async () => {
  const items: Array<Record<string, unknown>> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await series.doc.send(new ScanCommand({ TableName: series.table, ConsistentRead: true, ExclusiveStartKey }));
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
};

/** Every item of a workspace in the time-series table: its sort key's time and its expiry (undefined: none). */
const itemsOf = async (workspaceId: string) => {
  const items = await scanAll();
  return items
    .filter((i) => String(i.pk).startsWith(`TS#${workspaceId}#`))
    .map((i) => ({ at: keyTimeOf(String(i.sk))!.ms, expires: i[TIMESERIES_TTL_ATTRIBUTE] as number | undefined }))
    .sort((a, b) => a.at - b.at);
};

/** Points far enough apart that each is a pack (an item) of its own, `daysAgo` each, written as the ingest writes under `retention`. */
const pointsAt = (workspace_id: string, daysAgo: number[], retention_days?: number): PointToStore[] =>
  daysAgo.map((days, i) => ({
    workspace_id,
    fleet_id: newId('flt'),
    device_id: newId('dev'),
    tag: 't',
    timestamp_device: new Date(NOW - days * DAY).toISOString(),
    timestamp_in: new Date(NOW - days * DAY + 5).toISOString(),
    payload: { i },
    ...(retention_days === undefined ? {} : { retention_days }),
  }));

const expiryOf = (at: number, days: number) => Math.ceil((at + PACK_SPAN_MICROS / 1000 + days * DAY) / 1000);

describe('a workspace’s data retention', () => {
  it('is absent until set (a v3 workspace), then shown, and queues a re-stamp to run once the ingest’s cache of it has passed', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const { sent, enqueue } = queue();

    const before = await getWorkspace(db, caller, workspace_id);
    const changed = await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 90 }, NOW);

    expect(before).not.toHaveProperty('data_retention_days');
    expect(changed).toEqual({ ...before, data_retention_days: 90 });
    expect(await getWorkspace(db, caller, workspace_id)).toEqual(changed);
    expect(sent).toEqual([
      { job: { kind: 'restamp', account_id, workspace_id, version: 1, not_before: NOW + retentionSettleMs() }, delaySeconds: retentionSettleMs() / 1000 },
    ]);
    // The change owes a re-stamp of every item: points kept forever have no expiry yet.
    expect((await getWorkspaceOfAccount(db, account_id, workspace_id))?.retention_owed_from).toBe('');
  });

  it('changes the name and description alone without a new retention version or a job', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const { sent, enqueue } = queue();

    const renamed = await updateWorkspace(db, enqueue, caller, workspace_id, { name: 'plant 7', description: 'north wing' });
    const same = await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: null });

    expect(renamed).toMatchObject({ name: 'plant 7', description: 'north wing' });
    expect(renamed).not.toHaveProperty('data_retention_days');
    expect(same).toEqual(renamed);
    expect(sent).toEqual([]);
    expect((await getWorkspaceOfAccount(db, account_id, workspace_id))?.retention_version).toBeUndefined();
  });

  it('answers another account’s workspace 404 and queues nothing', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const { sent, enqueue } = queue();

    await expect(updateWorkspace(db, enqueue, mine.caller, theirs.workspace_id, { data_retention_days: 1 })).rejects.toThrow(NotFoundError);

    expect(sent).toEqual([]);
    expect(await getWorkspace(db, theirs.caller, theirs.workspace_id)).not.toHaveProperty('data_retention_days');
  });

  it('refuses a change that lost a race with another (409), keeping the one that won; its queued job finds another version', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const { sent, enqueue } = queue();
    // The other change lands between this one's read and its write.
    const racing = async (job: RestampJob, delaySeconds: number) => {
      await enqueue(job, delaySeconds);
      if (sent.length === 1) await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 7 }, NOW);
    };

    await expect(updateWorkspace(db, racing, caller, workspace_id, { data_retention_days: 30 }, NOW)).rejects.toThrow(ConflictError);

    expect((await getWorkspace(db, caller, workspace_id)).data_retention_days).toBe(7);
    expect(sent.map((s) => s.job.version)).toEqual([1, 1]);
    const deps: RestampDeps = { db, store, enqueue, now: () => NOW + retentionSettleMs() };
    // Both jobs carry version 1, which is now the 7-day change's: either one re-stamps with 7 days.
    expect(await runRestamp(deps, sent[0].job, Date.now() + 120_000)).toBe('done');
    expect((await getWorkspaceOfAccount(db, account_id, workspace_id))?.retention_owed_from).toBeUndefined();
  });

  it('queues the job again when the same setting is sent while a re-stamp is still owed (one lost to the DLQ)', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { sent, enqueue } = queue();
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 30 }, NOW);

    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 30 }, NOW + 1000);

    expect(sent.map(({ job }) => [job.version, job.not_before])).toEqual([
      [1, NOW + retentionSettleMs()],
      [1, NOW + 1000 + retentionSettleMs()],
    ]);
  });
});

describe('the retention re-stamp job', () => {
  it('waits out the settle time, then re-stamps what the change owes with the setting now, and clears what is owed', async () => {
    const { caller, workspace_id, account_id } = await newAccount(db);
    const { sent, enqueue } = queue();
    const clock = { now: NOW - 1000 };
    const deps: RestampDeps = { db, store, enqueue, now: () => clock.now };
    // A workspace at 30 days, its re-stamp done (nothing stored yet); then points 200, 40, 10 and
    // 0 days old, written under its 30 days.
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 30 }, clock.now - retentionSettleMs());
    expect(await runRestamp(deps, sent[0].job, Date.now() + 120_000)).toBe('done');
    await store.write(pointsAt(workspace_id, [200, 40, 10, 0], 30));
    const written = await itemsOf(workspace_id);
    sent.length = 0;
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 90 }, NOW);

    clock.now = NOW + 1000;
    const early = await runRestamp(deps, sent[0].job, Date.now() + 120_000);
    clock.now = NOW + retentionSettleMs();
    const run = await runRestamp(deps, sent[0].job, Date.now() + 120_000);

    // Written under 30 days: each item expires 30 days after its point (its arrival, 5 ms after the point, is earlier still).
    expect(written.map((i) => i.expires)).toEqual(written.map((i) => Math.ceil((i.at + 30 * DAY) / 1000)));
    expect(early).toBe('waiting');
    expect(sent[1]).toEqual({ job: sent[0].job, delaySeconds: (retentionSettleMs() - 1000) / 1000 });
    expect(run).toBe('done');
    // Lengthened to 90 days: the items the 90 days keep are re-stamped, the 200-day-old one is not owed.
    expect((await itemsOf(workspace_id)).map((i) => i.expires)).toEqual([
      written[0].expires,
      expiryOf(written[1].at, 90),
      expiryOf(written[2].at, 90),
      expiryOf(written[3].at, 90),
    ]);
    expect((await getWorkspaceOfAccount(db, account_id, workspace_id))?.retention_owed_from).toBeUndefined();
  });

  it('removes every expiry when the workspace goes back to keeping points forever', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await store.write(pointsAt(workspace_id, [400, 3, 0], 7));
    const { sent, enqueue } = queue();
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 7 }, NOW);

    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: null }, NOW);
    const run = await runRestamp({ db, store, enqueue, now: () => NOW + retentionSettleMs() }, sent[1].job, Date.now() + 120_000);

    expect(run).toBe('done');
    expect((await itemsOf(workspace_id)).map((i) => i.expires)).toEqual([undefined, undefined, undefined]);
  });

  it('does nothing for a version the workspace no longer has, or once nothing is owed', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await store.write(pointsAt(workspace_id, [1], 30));
    const { sent, enqueue } = queue();
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 30 }, NOW);
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 60 }, NOW);
    const deps: RestampDeps = { db, store, enqueue, now: () => NOW + retentionSettleMs() };
    const before = await itemsOf(workspace_id);

    const stale = await runRestamp(deps, sent[0].job, Date.now() + 120_000);
    const current = await runRestamp(deps, sent[1].job, Date.now() + 120_000);
    const again = await runRestamp(deps, sent[1].job, Date.now() + 120_000);

    expect([stale, current, again]).toEqual(['superseded', 'done', 'superseded']);
    expect((await itemsOf(workspace_id)).map((i) => i.expires)).toEqual([expiryOf(before[0].at, 60)]);
  });

  it('stops at its deadline and puts itself back with where it stopped; the next run goes on from there', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await store.write(
      pointsAt(
        workspace_id,
        Array.from({ length: 40 }, (_, i) => i / 10),
      ),
    );
    const { sent, enqueue } = queue();
    await updateWorkspace(db, enqueue, caller, workspace_id, { data_retention_days: 5 }, NOW);
    const deps: RestampDeps = { db, store, enqueue, now: () => NOW + retentionSettleMs() };

    // A run whose Lambda has no time left re-stamps nothing and hands its place on.
    const first = await runRestamp(deps, sent[0].job, Date.now());
    const second = await runRestamp(deps, sent[1].job, Date.now() + 120_000);

    expect([first, second]).toEqual(['continued', 'done']);
    expect(sent[1]).toEqual({ job: { ...sent[0].job, cursor: { shard: 0 } }, delaySeconds: 0 });
    const items = await itemsOf(workspace_id);
    expect(items).toHaveLength(40);
    expect(items.every((i) => i.expires === expiryOf(i.at, 5))).toBe(true);
  });

  it('resumes in the shard it stopped in, after its last item, and leaves the shards before it alone', async () => {
    const workspace_id = newId('wks');
    await store.write(
      pointsAt(
        workspace_id,
        Array.from({ length: 60 }, (_, i) => i / 10),
      ),
    );
    const shardOf = (pk: string) => Number(pk.split('#')[2]);
    const mine = (await scanAll())
      .filter((i) => String(i.pk).startsWith(`TS#${workspace_id}#`))
      .sort((a, b) => shardOf(String(a.pk)) - shardOf(String(b.pk)) || (String(a.sk) < String(b.sk) ? -1 : 1));
    const resumeAt = mine.find((i) => shardOf(String(i.pk)) === 3) ?? mine[Math.floor(mine.length / 2)];
    const after = { pk: String(resumeAt.pk), sk: String(resumeAt.sk) };

    const { items, cursor } = await store.restampExpiry!({
      workspaceId: workspace_id,
      from: '',
      days: 1,
      now: NOW,
      resume: { shard: shardOf(after.pk), after },
      deadline: Date.now() + 120_000,
    });

    const later = mine.filter((i) => shardOf(String(i.pk)) > shardOf(after.pk) || (i.pk === after.pk && String(i.sk) > after.sk));
    expect(cursor).toBeUndefined();
    expect(items).toBe(later.length);
    const stamped = (await scanAll()).filter((i) => String(i.pk).startsWith(`TS#${workspace_id}#`) && i[TIMESERIES_TTL_ATTRIBUTE] !== undefined);
    expect(stamped.map((i) => `${i.pk}|${i.sk}`).sort()).toEqual(later.map((i) => `${i.pk}|${i.sk}`).sort());
  });

  it('never brings back an item that TTL deleted between reading its key and re-stamping it', async () => {
    const workspace_id = newId('wks');
    await store.write(pointsAt(workspace_id, [2, 1, 0]));
    let deleted: { pk: string; sk: string } | undefined;
    // DynamoDB's TTL deletes the first item the re-stamp is about to update.
    const racing: Db = {
      table: series.table,
      doc: new Proxy(series.doc, {
        get: (target, name) =>
          name === 'send'
            ? async (command: { input: { Key?: { pk: string; sk: string } } }) => {
                if (command instanceof UpdateCommand && !deleted) {
                  deleted = command.input.Key!;
                  await target.send(new DeleteCommand({ TableName: series.table, Key: deleted }));
                }
                return target.send(command as never);
              }
            : Reflect.get(target, name),
      }),
    };

    const { items } = await dynamoDbTimeseriesStore(racing, { writeConcurrency: 1 }).restampExpiry!({
      workspaceId: workspace_id,
      from: '',
      days: 3,
      now: NOW,
      deadline: Date.now() + 120_000,
    });

    expect(items).toBe(2);
    const left = await scanAll();
    expect(left.filter((i) => String(i.pk).startsWith(`TS#${workspace_id}#`))).toHaveLength(2);
    expect(left.some((i) => i.pk === deleted?.pk && i.sk === deleted?.sk)).toBe(false);
  });
});
