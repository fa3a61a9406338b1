import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { enqueuePurge, runPurge, type PurgeDeps } from '../../domain/data/purge';
import { enqueueRestamp, runRestamp, type RestampDeps } from '../../domain/data/retention';
import { RetentionJobSchema } from '../../schemas/retention';
import { registryDb } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { timeseriesStore } from '../../stores/timeseries';

const deps: RestampDeps = { db: registryDb(), store: timeseriesStore(), enqueue: enqueueRestamp };
const purgeDeps: PurgeDeps = { db: deps.db, store: deps.store, enqueue: enqueuePurge };

/**
 * The retention queue's consumer (an SQS event source, one message a batch, with
 * ReportBatchItemFailures): runs a re-stamp of a workspace's stored points' expiry, or a purge of
 * a deleted device's or workspace's points, until a minute before its timeout, putting the rest
 * back on the queue. An unreadable message is retried until it lands in the DLQ; a failed run
 * comes back after the queue's visibility timeout.
 */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  const failed: string[] = [];
  for (const { messageId, body } of event.Records) {
    try {
      const job = RetentionJobSchema.parse(JSON.parse(body));
      const deadline = Date.now() + context.getRemainingTimeInMillis();
      if (job.kind === 'purge') await runPurge(purgeDeps, job, deadline);
      else await runRestamp(deps, job, deadline);
    } catch (error) {
      logger.error('retention job failed', { messageId, error: error as Error });
      failed.push(messageId);
    }
  }
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
