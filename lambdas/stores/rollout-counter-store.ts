import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { JOB_STATUSES, type JobStatus } from '../schemas/job';
import type { TransactAction } from './items';
import { CHANGE_COUNTERS, rolloutCounterKey, schedulingCounter } from './keys';

/** Counts of a rollout, as its counter items add them up. */
export interface RolloutTally {
  total: number;
  counts: Record<JobStatus, number>;
  /** The last change of a counter, if any. */
  updated_at?: string;
}

/** A count of zero for every job status. */
export const emptyCounts = (): Record<JobStatus, number> => Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;

/** Counters are flat attributes (`c_pending`): ADD creates them, where a nested path needs its map first. */
const counterAttribute = (status: JobStatus) => `c_${status}`;

/** A rollout's counts: its counter items added up (each counter item's counts add up to its own total). */
export const tallyOf = (counters: Array<Record<string, unknown>>): RolloutTally => {
  const counts = emptyCounts();
  let total = 0;
  let updated: string | undefined;
  for (const counter of counters) {
    total += Number(counter.total ?? 0);
    for (const status of JOB_STATUSES) counts[status] += Number(counter[counterAttribute(status)] ?? 0);
    if (typeof counter.updated_at === 'string' && (!updated || counter.updated_at > updated)) updated = counter.updated_at;
  }
  return { total, counts, ...(updated ? { updated_at: updated } : {}) };
};

/** How a set of stream records changes one rollout's counts. */
export interface CountDelta {
  workspace_id: string;
  rollout_id: string;
  /** Devices added to the rollout (a scheduling's new items). */
  total: number;
  counts: Partial<Record<JobStatus, number>>;
}

/** One counted unit of the registry stream: a record's deltas, applied once. */
export interface CountedChange {
  /** The record's event ID: the ledger item that makes it count once. */
  eventId: string;
  deviceId: string;
  deltas: CountDelta[];
}

/** How long a counted record's mark is kept: past the stream's 24 h retention, after which no retry can bring it again. */
export const LEDGER_TTL_SECONDS = 2 * 24 * 3600;

// TransactWriteItems takes at most 100 actions, and no two on one item.
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
const TRANSACTION_MAX = 100;

/** Groups changes into transactions of at most TRANSACTION_MAX actions (a ledger item each, a counter update per rollout), in order. */
export const transactionsOf = (changes: CountedChange[]): CountedChange[][] => {
  const groups: CountedChange[][] = [];
  let group: CountedChange[] = [];
  let rollouts = new Set<string>();
  let size = 0;
  for (const change of changes) {
    const added = new Set(change.deltas.map((d) => d.rollout_id).filter((id) => !rollouts.has(id)));
    if (group.length && size + 1 + added.size > TRANSACTION_MAX) {
      groups.push(group);
      group = [];
      rollouts = new Set();
      size = 0;
    }
    group.push(change);
    const before = rollouts.size;
    for (const d of change.deltas) rollouts.add(d.rollout_id);
    size += 1 + rollouts.size - before;
  }
  if (group.length) groups.push(group);
  return groups;
};

/** The deltas of many changes added up per rollout. */
export const sumDeltas = (changes: CountedChange[]): CountDelta[] => {
  const sums = new Map<string, CountDelta>();
  for (const delta of changes.flatMap((c) => c.deltas)) {
    const sum = sums.get(delta.rollout_id) ?? { workspace_id: delta.workspace_id, rollout_id: delta.rollout_id, total: 0, counts: {} };
    sum.total += delta.total;
    for (const [status, n] of Object.entries(delta.counts) as Array<[JobStatus, number]>) sum.counts[status] = (sum.counts[status] ?? 0) + n;
    sums.set(delta.rollout_id, sum);
  }
  return [...sums.values()];
};

/** A transaction's update of one of a rollout's counter items: the delta's ADDs, and when. */
export const counterUpdate = (db: Db, delta: CountDelta, shard: number, at: string) => {
  const adds = [
    ['total', delta.total] as const,
    ...(Object.entries(delta.counts) as Array<[JobStatus, number]>).map(([s, n]) => [counterAttribute(s), n] as const),
  ].filter(([, n]) => n !== 0);
  return {
    Update: {
      TableName: db.table,
      Key: rolloutCounterKey(delta.workspace_id, delta.rollout_id, shard),
      UpdateExpression: `SET updated_at = :at${adds.length ? ` ADD ${adds.map((_, i) => `#a${i} :a${i}`).join(', ')}` : ''}`,
      ExpressionAttributeNames: Object.fromEntries(adds.map(([name], i) => [`#a${i}`, name])),
      ExpressionAttributeValues: { ':at': at, ...Object.fromEntries(adds.map(([, n], i) => [`:a${i}`, n])) },
    },
  };
};

/**
 * How a scheduling counts the device items it writes, in the transaction that writes them: a
 * chunk's items added to the rollout's total and to their states, on the counter of the writer's
 * slot (keys.ts schedulingCounter). The items and their count are stored together or not at all,
 * so the counts hold every device item the moment it exists, and the registry stream's consumer
 * never counts a creation.
 */
export const countWritten =
  (db: Db, workspaceId: string, rolloutId: string, at: string) =>
  (items: Array<{ status?: unknown }>, slot: number): TransactAction => {
    const counts: Partial<Record<JobStatus, number>> = {};
    for (const item of items) counts[item.status as JobStatus] = (counts[item.status as JobStatus] ?? 0) + 1;
    return counterUpdate(db, { workspace_id: workspaceId, rollout_id: rolloutId, total: items.length, counts }, schedulingCounter(slot), at);
  };

const cancellationCodes = (error: unknown) => {
  const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
  return e?.name === 'TransactionCanceledException' ? (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None') : undefined;
};

const RETRYABLE = new Set([
  'TransactionConflictException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
]);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_ATTEMPTS = 8;

/**
 * Applies counted changes in one transaction: a ledger item per change (put only if absent: a
 * change already counted, by an earlier try of its stream record, is not counted again) and their
 * deltas added to one counter item per rollout (a random one of
 * CHANGE_COUNTERS, so that concurrent batches seldom meet on one). Changes found counted already
 * are dropped and the rest tried again; conflicts and throttling are retried with backoff.
 * @returns the changes counted by this call (those found counted before are not among them).
 * @throws when the transaction keeps failing: none of the changes not yet counted is counted then.
 */
export const applyCountedChanges = async (db: Db, changes: CountedChange[], at: string, now = Date.now()): Promise<CountedChange[]> => {
  let pending = changes;
  const ttl = Math.floor(now / 1000) + LEDGER_TTL_SECONDS;
  for (let attempt = 1; pending.length; attempt++) {
    const deltas = sumDeltas(pending).filter((d) => d.total !== 0 || Object.values(d.counts).some((n) => n !== 0));
    const shard = Math.floor(Math.random() * CHANGE_COUNTERS);
    const ledger = pending.map((change) => ({
      Put: {
        TableName: db.table,
        Item: { pk: `DEV#${change.deviceId}`, sk: `CNT#${change.eventId}`, ttl },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    }));
    const items = [...ledger, ...deltas.map((d) => counterUpdate(db, d, shard, at))];
    try {
      await db.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return pending;
    } catch (error) {
      const codes = cancellationCodes(error);
      const counted = codes ? new Set(codes.slice(0, ledger.length).flatMap((code, i) => (code === 'ConditionalCheckFailed' ? [i] : []))) : new Set<number>();
      if (counted.size) {
        pending = pending.filter((_, i) => !counted.has(i));
        continue;
      }
      const retryable = codes
        ? codes.some((c) => c === 'TransactionConflict' || c === 'ThrottlingError' || c === 'ProvisionedThroughputExceeded')
        : RETRYABLE.has((error as Error).name);
      if (!retryable || attempt >= MAX_ATTEMPTS) throw error;
      await pause(Math.random() * Math.min(1000, 20 * 2 ** attempt));
    }
  }
  return pending;
};
