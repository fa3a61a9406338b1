import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { enqueueRestamp, runRestamp, type RestampDeps } from '../../domain/data/retention';
import { RestampJobSchema } from '../../schemas/retention';
import { registryDb } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { timeseriesStore } from '../../stores/timeseries';

const deps: RestampDeps = { db: registryDb(), store: timeseriesStore(), enqueue: enqueueRestamp };

/**
 * The retention queue's consumer (an SQS event source, one message a batch, with
 * ReportBatchItemFailures): runs a re-stamp of a workspace's stored points' expiry until a minute
 * before its timeout, putting the rest back on the queue. An unreadable message is retried until
 * it lands in the DLQ; a failed run comes back after the queue's visibility timeout.
 */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  const failed: string[] = [];
  for (const { messageId, body } of event.Records) {
    try {
      const job = RestampJobSchema.parse(JSON.parse(body));
      await runRestamp(deps, job, Date.now() + context.getRemainingTimeInMillis());
    } catch (error) {
      logger.error('retention re-stamp failed', { messageId, error: error as Error });
      failed.push(messageId);
    }
  }
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
