import type { Db } from '../../shared/clients';
import { retentionQueueUrl, TIMESERIES_BACKEND } from '../../shared/env';
import { AppError, ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import type { PurgeJob } from '../../schemas/retention';
import { findDeviceTombstone } from '../../stores/device-deletion-store';
import type { TimeseriesStore } from '../../stores/timeseries';
import { sendDelayedMessage } from '../../stores/queue-store';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import { retentionSettleMs } from './retention';

/**
 * Purges of stored data points (spec/fleet-state.md §5): `DELETE …/devices/{id}?purge=data` and
 * `DELETE /workspaces/{ws}` put a purge job on the retention queue, and the retention Lambda
 * deletes the points page by page (docs/api.md#deleting-devices-fleets-and-workspaces). The API
 * answers at once and sends no request per point.
 */

/** Puts a purge job on the retention queue, visible after `delaySeconds` (at most 900: SQS's longest delay). */
export type EnqueuePurge = (job: PurgeJob, delaySeconds: number) => Promise<void>;

/**
 * Puts a purge job on the retention queue.
 * @throws when no retention queue is configured or SQS refuses it (the DELETE fails, and its retry sends it again).
 */
export const enqueuePurge: EnqueuePurge = async (job, delaySeconds) => {
  const queueUrl = retentionQueueUrl();
  if (!queueUrl) throw new AppError(500, 'internal_error', 'RETENTION_QUEUE_URL is not set.');
  await sendDelayedMessage(queueUrl, job, delaySeconds);
};

/**
 * The job that purges a device's points (or, without `deviceId`, a workspace's) deleted at `now`:
 * it starts once the ingest has written every point it may still hold of them (the ingest's cache
 * of device places, then its timeout: as a retention change's re-stamp waits).
 */
export const purgeJob = (accountId: string, workspaceId: string, deviceId: string | undefined, now = Date.now()): PurgeJob => ({
  kind: 'purge',
  account_id: accountId,
  workspace_id: workspaceId,
  ...(deviceId === undefined ? {} : { device_id: deviceId }),
  not_before: now + retentionSettleMs(),
});

/**
 * What `DELETE …/devices/{id}?purge=data` adds to the deletion (`DeviceDeletionHooks.purgeData`):
 * a check, before anything is written, that this deployment's store can delete points
 * (Timestream cannot: 400 naming `query.purge`), and the job queued once the device is deleted.
 */
export const purgeDataHook = (enqueue: EnqueuePurge = enqueuePurge, backend = TIMESERIES_BACKEND) => ({
  check: () => {
    if (backend !== 'dynamodb')
      throw new ValidationError('This deployment’s time-series store cannot delete data points: they go with its retention.', {
        details: [{ field: 'query.purge', message: `The ${backend} store deletes no point; omit purge.` }],
      });
  },
  enqueue: async (accountId: string, workspaceId: string, deviceId: string) => {
    const job = purgeJob(accountId, workspaceId, deviceId);
    await enqueue(job, (job.not_before - Date.now()) / 1000);
  },
});

/** Time a run of the purge keeps for its last page and its follow-up message, before its Lambda's timeout. */
const RUN_MARGIN_MS = 60_000;

/** What the purge job works with. */
export interface PurgeDeps {
  db: Db;
  store: TimeseriesStore;
  /** Puts a job (back) on the retention queue. */
  enqueue: EnqueuePurge;
  now?: () => number;
}

/**
 * Whether the job names data that may go: a device deleted from that workspace of that account
 * (its tombstone), or a workspace that is gone or being deleted. Anything else (a message not
 * sent by a deletion) purges nothing.
 */
const deleted = async (db: Db, job: PurgeJob) => {
  if (job.device_id !== undefined) {
    const tombstone = await findDeviceTombstone(db, job.device_id);
    return tombstone?.account_id === job.account_id && tombstone.workspace_id === job.workspace_id;
  }
  const workspace = await getWorkspaceOfAccount(db, job.account_id, job.workspace_id);
  return !workspace || workspace.deleting_at !== undefined;
};

/**
 * One run of a purge (a message of the retention queue). A job sent before its `not_before` goes
 * back on the queue for the rest of the wait. Otherwise it deletes the points from where an
 * earlier run stopped, until `deadline`, then puts itself back with its cursor; a run that fails
 * comes back with the message, from the cursor it was given (doing a page again changes nothing).
 * @returns what the run did, for the logs and the tests.
 */
export const runPurge = async (deps: PurgeDeps, job: PurgeJob, deadline: number): Promise<'waiting' | 'refused' | 'continued' | 'done'> => {
  const now = deps.now ?? Date.now;
  const wait = job.not_before - now();
  if (wait > 0) {
    await deps.enqueue(job, wait / 1000);
    return 'waiting';
  }
  const ids = { workspace_id: job.workspace_id, ...(job.device_id === undefined ? {} : { device_id: job.device_id }) };
  if (!(await deleted(deps.db, job))) {
    logger.warn('purge refused: not a deleted device or workspace', ids);
    return 'refused';
  }
  if (!deps.store.purgePoints) {
    // Timestream deletes no row: a deleted workspace's points are unreachable (its routes answer
    // 404) and go with the table's magnetic retention. A device's purge is refused at the API.
    return 'done';
  }
  const { items, cursor } = await deps.store.purgePoints({
    workspaceId: job.workspace_id,
    ...(job.device_id === undefined ? {} : { deviceId: job.device_id }),
    now: now(),
    resume: job.cursor,
    deadline: deadline - RUN_MARGIN_MS,
  });
  logger.info('purge run', { ...ids, items, done: !cursor });
  if (cursor) {
    await deps.enqueue({ ...job, cursor }, 0);
    return 'continued';
  }
  return 'done';
};
