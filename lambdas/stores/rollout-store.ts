import { GetCommand, QueryCommand, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { RolloutAbortReason } from '../schemas/rollout';
import type { RolloutSettings } from '../schemas/rollout-settings';
import { putNew, queryPages, type Keyed, type TransactAction } from './items';
import { REGISTRY_SWEEP_INDEX, ROLLOUT_DUE_PARTITION, collection, rolloutKey, sweepEntry } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';
import { tallyOf, type RolloutTally } from './rollout-counter-store';

/** What a user makes of a rollout: releasing (`in_progress`), `paused`, or `canceled` for good. */
export type RolloutState = 'in_progress' | 'paused' | 'canceled';
/** What its devices made of it, set once by the registry stream's consumer. */
export type RolloutOutcome = 'completed' | 'aborted';

/** A rollout as stored (its counts live on its counter items). */
export interface RolloutRecord {
  id: string;
  workspace_id: string;
  kind: 'job' | 'fota' | 'state';
  job_name?: string;
  /** A job's value, or a state rollout's desired keys (null removing one). */
  value?: Record<string, unknown>;
  firmware_id?: string;
  firmware_version?: string;
  fleets: string[];
  /** Targeted by a group (`group=`) or a query (`q=`, as given), besides the fleets. */
  group_id?: string;
  q?: string;
  created_at: string;
  updated_at: string;
  /** The devices' `scheduled_at`. */
  scheduled_at: string;
  settings: RolloutSettings;
  state: RolloutState;
  outcome?: RolloutOutcome;
  /** Aborted: the rule and the counts it fired on, written with the outcome. */
  abort_reason?: RolloutAbortReason;
  /** How many device items the scheduling wrote, once it ended (or the sweep sealed it for a scheduling that died). */
  sealed_total?: number;
  /** Rate-limited: when the next release may start (60 s after the last one started). */
  next_release_at?: string;
  last_release_at?: string;
  /**
   * Rate-limited: how many devices the release of `last_release_at` still owes, when a sweep run
   * stopped it short at its deadline; the next run goes on with it (`claimOwedRelease`).
   */
  release_owed?: number;
  /** Rate-limited: queued devices may remain (a release found none, after the seal: false). */
  queue_open?: boolean;
  /** With a timeout: the earliest deadline of its released devices not known to have ended (their release plus the timeout). */
  next_deadline_at?: string;
  /** The sweep index's entry of the rollout, when it has work due (`sweep_sk`). */
  sweep_due?: string;
}

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;

/** A rollout as its item holds it (the value parsed back, the sweep entry as `sweep_due`). */
export const recordOf = (item: Record<string, unknown>): RolloutRecord => {
  const { pk: _pk, sk: _sk, [SWEEP_PK]: _p, [SWEEP_SK]: due, value, ...rest } = item;
  return {
    ...(rest as unknown as RolloutRecord),
    ...(typeof value === 'string' ? { value: JSON.parse(value) as Record<string, unknown> } : {}),
    ...(typeof due === 'string' ? { sweep_due: due } : {}),
  };
};

/** The sweep entry of a rollout due at `dueAt` (ms), in the rollouts' partition of the sweep index. */
export const rolloutEntry = (dueAt: number) => sweepEntry(dueAt, ROLLOUT_DUE_PARTITION);

/**
 * Creates a rollout (before any of its devices' items), due in the sweep index at `dueAt`, counted
 * in the workspace's rollouts of the day, with the `extra` actions (a continuous rollout's), all or nothing.
 * @returns undefined once written, or the indexes of `extra` whose conditions failed (nothing written).
 * @throws QuotaExceededError from the quota; an Error when its ID is taken (never: IDs are random).
 */
export const createRollout = async (db: Db, rollout: RolloutRecord, dueAt: number, quota: QuotaCheck, extra: TransactAction[] = []) => {
  const { value, sweep_due: _due, ...rest } = rollout;
  const item = { ...rest, ...(value === undefined ? {} : { value: JSON.stringify(value) }), ...rolloutEntry(dueAt) };
  const failed = await transactWithQuota(db, [putNew(db, rolloutKey(rollout.workspace_id, rollout.id), item), ...extra], quota);
  if (failed?.includes(0)) throw new Error(`Rollout ${rollout.id} exists already.`);
  // The indexes of `extra` whose conditions failed: nothing was written.
  return failed?.map((index) => index - 1);
};

/** A rollout's own item without its counts (one GetItem, eventually consistent unless `consistent`: a device's status check). */
export const getRolloutRecord = async (db: Db, workspaceId: string, rolloutId: string, { consistent = false } = {}) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: rolloutKey(workspaceId, rolloutId), ConsistentRead: consistent }));
  return Item ? recordOf(Item) : undefined;
};

/** A rollout with its counts, read at once (strongly consistent; each counter item's counts add up to its own total). */
export interface RolloutView {
  record: RolloutRecord;
  tally: RolloutTally;
}

const isCounterOf = (id: string) => (sk: string) => sk.startsWith(`${rolloutKey('', id).sk}#C`);

/** A rollout of a workspace with its counts, or undefined. One Query: its item and its counter items are one key range. */
export const getRollout = async (db: Db, workspaceId: string, rolloutId: string): Promise<RolloutView | undefined> => {
  const { pk, prefix } = collection.rolloutWithCounters(workspaceId, rolloutId);
  const items: Array<Record<string, unknown>> = [];
  for await (const page of queryPages(db, { pk, prefix })) items.push(...page);
  const main = items.find((item) => item.sk === prefix);
  if (!main) return undefined;
  return { record: recordOf(main), tally: tallyOf(items.filter((item) => isCounterOf(rolloutId)(item.sk as string))) };
};

/**
 * A workspace's rollouts with their counts, newest first (IDs begin with their creation time),
 * one by one as pages are read; each keyed by its item's sort key (where a page that ends at it
 * resumes). A rollout's counter items sort right after its own, so reading backwards meets them
 * first, then the rollout.
 */
export async function* readRolloutsOfWorkspace(
  db: Db,
  workspaceId: string,
  { after, pageSize }: { after?: string; pageSize?: number },
): AsyncGenerator<Keyed<RolloutView>> {
  const { pk, prefix } = collection.rolloutsOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined = after === undefined ? undefined : { pk, sk: after };
  let counters: Array<Record<string, unknown>> = [];
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        ScanIndexForward: false,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        // A rollout's item comes with a few dozen counter items at most.
        ...(pageSize ? { Limit: pageSize * 32 } : {}),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = item.sk as string;
      if (/#C\d+$/.test(sk)) {
        counters.push(item);
        continue;
      }
      const record = recordOf(item);
      yield { sk, value: { record, tally: tallyOf(counters.filter((c) => isCounterOf(record.id)(c.sk as string))) } };
      counters = [];
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}
