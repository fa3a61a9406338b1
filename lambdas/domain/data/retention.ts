import type { Db } from '../../shared/clients';
import { devicePlaceCacheSeconds, retentionQueueUrl } from '../../shared/env';
import { AppError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { formatTime, parseTime } from '../../shared/timestamps';
import type { RestampJob } from '../../schemas/retention';
import type { TimeseriesRange, TimeseriesStore } from '../../stores/timeseries';
import { sendDelayedMessage } from '../../stores/queue-store';
import { PACK_SPAN_MICROS } from '../../stores/timeseries/keys';
import { clearRetentionOwed, getWorkspaceOfAccount } from '../../stores/workspace-store';

const DAY_MS = 86_400_000;

/**
 * How long after a retention change its re-stamp may start, beyond the ingest's cache of the
 * setting (`devicePlaceCacheSeconds`): the ingest Lambda's timeout (10 s, lambdas/queues.ts), so
 * that a batch that read the old setting has written its points, and 5 s for the eventually
 * consistent read of it.
 */
const INGEST_SETTLE_SECONDS = 15;

/** Milliseconds after a retention change before every point the ingest writes carries the new expiry. */
export const retentionSettleMs = () => (devicePlaceCacheSeconds() + INGEST_SETTLE_SECONDS) * 1000;

/** The oldest timestamp_device a read may answer under a retention of `days` (ms since the epoch), or undefined when kept forever. */
export const retentionCutoff = (days: number | null | undefined, now: number) => (days ? now - days * DAY_MS : undefined);

/**
 * A range narrowed to what the workspace's retention keeps: its start moved up to the cutoff. A
 * range that ends at or before the cutoff then holds no point (start ≥ end), which the stores
 * read as empty.
 */
export const withinRetention = <R extends TimeseriesRange>(range: R, days: number | null | undefined, now: number): R => {
  const cutoff = retentionCutoff(days, now);
  if (cutoff === undefined) return range;
  const start = range.start === undefined ? undefined : parseTime(range.start);
  if (start && start.ms >= cutoff) return range;
  return { ...range, start: formatTime({ ms: cutoff, us: 0 }) };
};

/**
 * Where a retention change must re-stamp the expiry of stored points: every item when either
 * setting keeps points forever (they have no expiry, or must lose it); else the items the longer
 * setting still keeps (a pack's key time lies up to a span before its latest point). The earlier
 * of that and what an unfinished re-stamp still owes (`owed`), as key times compare.
 */
export const restampFrom = (before: number | null, after: number | null, now: number, owed: string | undefined): string => {
  if (before === null || after === null || owed === '') return '';
  const from = formatTime({ ms: now - Math.max(before, after) * DAY_MS - PACK_SPAN_MICROS / 1000, us: 0 });
  return owed !== undefined && owed < from ? owed : from;
};

/** Puts a re-stamp job on the retention queue, visible after `delaySeconds` (at most 900: SQS's longest delay). */
export type EnqueueRestamp = (job: RestampJob, delaySeconds: number) => Promise<void>;

/**
 * Puts a re-stamp job on the retention queue.
 * @throws when no retention queue is configured or SQS refuses it, so that the change is not written.
 */
export const enqueueRestamp: EnqueueRestamp = async (job, delaySeconds) => {
  const queueUrl = retentionQueueUrl();
  if (!queueUrl) throw new AppError(500, 'internal_error', 'RETENTION_QUEUE_URL is not set.');
  await sendDelayedMessage(queueUrl, job, delaySeconds);
};

/** Time a run of the re-stamp keeps for its last page and its follow-up message, before its Lambda's timeout. */
const RUN_MARGIN_MS = 60_000;

/** What the re-stamp job works with. */
export interface RestampDeps {
  db: Db;
  store: TimeseriesStore;
  /** Puts a job (back) on the retention queue. */
  enqueue: EnqueueRestamp;
  now?: () => number;
}

/**
 * One run of a retention re-stamp (a message of the retention queue). A job sent before its
 * `not_before` (a change's settle time: every point the ingest writes after it carries the new
 * expiry) goes back on the queue for the rest of the wait. A job of a version that is no longer the
 * workspace's does nothing: the later change's job owes at least what it owed. Otherwise it
 * re-stamps the items the workspace owes with its retention now, from where an earlier run
 * stopped, until `deadline`; then it puts itself back with its cursor, or, once done, clears
 * what the workspace owes.
 * @returns what the run did, for the logs and the tests.
 */
export const runRestamp = async (deps: RestampDeps, job: RestampJob, deadline: number): Promise<'waiting' | 'superseded' | 'continued' | 'done'> => {
  const now = deps.now ?? Date.now;
  const wait = job.not_before - now();
  if (wait > 0) {
    await deps.enqueue(job, wait / 1000);
    return 'waiting';
  }
  const workspace = await getWorkspaceOfAccount(deps.db, job.account_id, job.workspace_id);
  if (!workspace || workspace.retention_version !== job.version || workspace.retention_owed_from === undefined) return 'superseded';
  if (!deps.store.restampExpiry) {
    // Timestream: the table's magnetic retention removes points, for every workspace at once.
    await clearRetentionOwed(deps.db, job.account_id, job.workspace_id, job.version);
    return 'done';
  }
  const { items, cursor } = await deps.store.restampExpiry({
    workspaceId: job.workspace_id,
    from: workspace.retention_owed_from,
    days: workspace.data_retention_days ?? null,
    now: now(),
    resume: job.cursor,
    deadline: deadline - RUN_MARGIN_MS,
  });
  logger.info('retention re-stamp run', { workspace_id: job.workspace_id, version: job.version, items, done: !cursor });
  if (cursor) {
    await deps.enqueue({ ...job, cursor }, 0);
    return 'continued';
  }
  await clearRetentionOwed(deps.db, job.account_id, job.workspace_id, job.version);
  return 'done';
};
