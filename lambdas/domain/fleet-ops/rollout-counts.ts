import type { DynamoDBRecord } from 'aws-lambda';
import type { Db } from '../../shared/clients';
import { nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { countMetric } from '../../shared/metrics';
import { settleAll } from '../../shared/settle';
import { ENDED_STATUSES, type JobStatus } from '../../schemas/job';
import { registryChangeOf, type RegistryChange } from '../../stores/registry-stream';
import { putAll } from '../../stores/items';
import type { ItemKey } from '../../stores/keys';
import { applyCountedChanges, transactionsOf, type CountDelta, type CountedChange } from '../../stores/rollout-counter-store';
import { supersededItem } from '../../stores/rollout-device-store';
import { settleRollout } from './rollouts';
import { rolloutUpdatesOf, type ConsoleLive } from '../console-live/live';

/** What the rollout counting needs: the registry, and how many transactions run at once. */
export interface CountDeps {
  db: Db;
  concurrency: number;
  /** Tells the open consoles which rollouts' counts moved: one message per rollout per batch (domain/console-live); never rejects. */
  live?: ConsoleLive;
}

/** A job's or FOTA's item as the counting reads it. */
type Counted = {
  status: JobStatus;
  scheduled_at: string;
  device_id: string;
  rollout_id?: string;
  workspace_id?: string;
  updated_at?: string;
  result?: Record<string, unknown>;
  message?: string;
};

/** What one change does to its rollout's counts, and the record it leaves of a job that a later scheduling replaced. */
export interface RolloutEffect {
  deltas: CountDelta[];
  /** The replaced job's final state in its rollout (canceled unless it had ended). */
  superseded?: { item: Counted & { rollout_id: string; workspace_id: string }; status: JobStatus; updated_at: string };
}

const delta = (workspace_id: string, rollout_id: string, total: number, counts: Partial<Record<JobStatus, number>>): CountDelta => ({
  workspace_id,
  rollout_id,
  total,
  counts,
});

/**
 * How a job's or FOTA's change (item before → after) changes the counts of the rollouts it
 * belonged to, never recounting (pure):
 * - the same scheduling in another state: −1 in the old state, +1 in the new one;
 * - an item of a rollout replaced by another scheduling (or removed): the old rollout counts it
 *   `canceled` unless it had ended (then it keeps its state there), and keeps a record of it.
 * A new item of a rollout is not counted here: its scheduling counted it in the transaction that
 * wrote it (stores/rollout-counter-store.ts countWritten). Each delta moves a device from a state to
 * another, so counts always add up to the total.
 */
export const rolloutEffectOf = (before: Counted | undefined, after: Counted | undefined): RolloutEffect => {
  const deltas: CountDelta[] = [];
  const same = before && after && before.rollout_id === after.rollout_id && before.scheduled_at === after.scheduled_at;
  let superseded: RolloutEffect['superseded'];
  if (before?.rollout_id && before.workspace_id) {
    if (same) {
      if (before.status !== after!.status) deltas.push(delta(before.workspace_id, before.rollout_id, 0, { [before.status]: -1, [after!.status]: 1 }));
    } else {
      const ended = ENDED_STATUSES.has(before.status);
      if (!ended) deltas.push(delta(before.workspace_id, before.rollout_id, 0, { [before.status]: -1, canceled: 1 }));
      const replacedAt = after?.updated_at ?? after?.scheduled_at ?? before.updated_at ?? before.scheduled_at;
      superseded = {
        item: before as Counted & { rollout_id: string; workspace_id: string },
        status: ended ? before.status : 'canceled',
        updated_at: ended ? (before.updated_at ?? replacedAt) : replacedAt,
      };
    }
  }
  return { deltas, ...(superseded ? { superseded } : {}) };
};

/**
 * What a registry stream record does to its rollout: the change of counts to apply once (none when
 * it moves no count), and the items to put (what a replaced job was in its rollout: the same item
 * however often it is put).
 */
export const countedChangeOf = (change: RegistryChange): { counted?: CountedChange; puts: Array<ItemKey & Record<string, unknown>> } => {
  const { deltas, superseded } = rolloutEffectOf(change.before, change.after);
  const deviceId = (change.after ?? change.before)?.device_id ?? '';
  return {
    ...(deltas.length ? { counted: { eventId: change.eventId, deviceId, deltas } } : {}),
    puts: superseded ? [supersededItem(change.key.sk, superseded.item, superseded.status, superseded.updated_at)] : [],
  };
};

/** Whether a delta can end its rollout: a device left an open state or reached a finished one. */
const mayEnd = (d: CountDelta) =>
  (['queued', 'pending', 'in_progress'] as const).some((s) => (d.counts[s] ?? 0) < 0) ||
  (['done', 'failed', 'timed_out'] as const).some((s) => (d.counts[s] ?? 0) > 0);

/**
 * Counts a batch of registry stream records in their rollouts (DESIGN §11): each record's change of
 * state (old image → new image) becomes atomic ADDs on its rollout's counters, summed per rollout
 * over up to ~100 records a transaction, each record marked counted in the same transaction by its
 * event ID, so that a record the stream brings again (a retry from a failed record, a retried or
 * bisected batch after a crash) is never counted twice, and one never counted is counted by its
 * retry. A job a later scheduling replaced is counted canceled in its rollout unless it had ended,
 * and leaves a record of itself there either way. Then every rollout whose counts may have ended
 * it is settled (completed, or aborted by its rule). The changes it counted are added to the
 * invocation's `RolloutStateChanges` metric.
 * @returns the index of the first record whose counting (or its rollout's settling) failed, from
 * which the stream must retry; undefined when all were counted.
 */
export const countRolloutChanges = async (deps: CountDeps, records: DynamoDBRecord[], at = nowIso()): Promise<number | undefined> => {
  let failedAt = records.length;
  const indexOf = new Map<CountedChange, number>();
  const puts: Array<{ index: number; item: ItemKey & Record<string, unknown> }> = [];
  const settle = new Map<string, { workspace_id: string; rollout_id: string; first: number }>();
  records.forEach((record, index) => {
    let effect: ReturnType<typeof countedChangeOf> | undefined;
    try {
      const change = registryChangeOf(record);
      effect = change && countedChangeOf(change);
    } catch (error) {
      logger.error('a registry stream record could not be read for the rollout counts', { error: error as Error, eventID: record.eventID });
      failedAt = Math.min(failedAt, index);
      return;
    }
    if (!effect) return;
    puts.push(...effect.puts.map((item) => ({ index, item })));
    if (!effect.counted) return;
    indexOf.set(effect.counted, index);
    for (const d of effect.counted.deltas.filter(mayEnd))
      if (!settle.has(d.rollout_id)) settle.set(d.rollout_id, { workspace_id: d.workspace_id, rollout_id: d.rollout_id, first: index });
  });
  // A change of counts is applied once (a ledger mark in its transaction); a record a replaced job
  // leaves is a plain put of the same item every time, apart from the transactions.
  const groups = transactionsOf([...indexOf.keys()]);
  const [applied, recorded] = await Promise.all([
    settleAll(groups, deps.concurrency, (group) => applyCountedChanges(deps.db, group, at)),
    putAll(
      deps.db,
      puts.map((p) => p.item),
      deps.concurrency,
    ).then(
      () => undefined,
      (error: unknown) => error,
    ),
  ]);
  // The operator metric counts each state change once: what this call counted, not what a retry found counted before.
  countMetric(
    'RolloutStateChanges',
    applied.reduce((sum, result) => sum + (result.status === 'fulfilled' ? result.value.length : 0), 0),
  );
  applied.forEach((result, g) => {
    if (result.status === 'fulfilled') return;
    logger.error('rollout counts could not be updated; the stream retries', { error: result.reason as Error });
    failedAt = Math.min(failedAt, ...groups[g].map((c) => indexOf.get(c)!));
  });
  if (recorded !== undefined) {
    logger.error('records of replaced jobs could not be written; the stream retries', { error: recorded as Error });
    failedAt = Math.min(failedAt, ...puts.map((p) => p.index));
  }
  const rollouts = [...settle.values()];
  const settled = await settleAll(rollouts, deps.concurrency, (r) => settleRollout(deps.db, r.workspace_id, r.rollout_id));
  settled.forEach((result, i) => {
    if (result.status === 'fulfilled') return;
    logger.error('a rollout could not be settled; the stream retries', { error: result.reason as Error, rollout_id: rollouts[i].rollout_id });
    failedAt = Math.min(failedAt, rollouts[i].first);
  });
  // However many devices moved (a burst of 1,000 transitions), one message per rollout of the batch.
  const moved = applied.flatMap((result, g) => (result.status === 'fulfilled' ? groups[g].flatMap((c) => c.deltas) : []));
  await deps.live?.(rolloutUpdatesOf(moved, at));
  return failedAt < records.length ? failedAt : undefined;
};
