import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { consoleLive } from '../../domain/console-live/live';
import { enqueueExport } from '../../domain/exports/export-queue';
import { EXPORT_OBJECTS, runExport, type ExportDeps } from '../../domain/exports/export-runs';
import { retryDelaySeconds } from '../../domain/webhooks/forwarding';
import { ExportJobSchema } from '../../schemas/export';
import { registryDb } from '../../shared/clients';
import { exportQueueUrl, exportRetrySeconds } from '../../shared/env';
import { logger } from '../../shared/logger';
import { publishToConsoles } from '../../stores/console-channel';
import { delayMessages } from '../../stores/queue-store';
import { timeseriesStore } from '../../stores/timeseries';

const deps: ExportDeps = { db: registryDb(), store: timeseriesStore(), objects: EXPORT_OBJECTS, enqueue: enqueueExport, live: consoleLive(publishToConsoles) };

/**
 * The export queue's consumer (an SQS event source, one message a batch, with
 * ReportBatchItemFailures): runs an export until a minute before its timeout, putting the rest
 * back on the queue. A failed run comes back after the queue's retry backoff; an unreadable
 * message is retried until it lands in the DLQ.
 */
export const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  const failed: Array<{ messageId: string; receiptHandle: string; receives: number }> = [];
  for (const { messageId, receiptHandle, body, attributes } of event.Records) {
    try {
      const job = ExportJobSchema.parse(JSON.parse(body));
      const outcome = await runExport(deps, job, Date.now() + context.getRemainingTimeInMillis());
      logger.info('export run', { export_id: job.export_id, outcome });
    } catch (error) {
      logger.error('export run failed', { messageId, error: error as Error });
      failed.push({ messageId, receiptHandle, receives: Number(attributes.ApproximateReceiveCount) || 1 });
    }
  }
  if (failed.length) {
    const retry = exportRetrySeconds();
    await delayMessages(
      exportQueueUrl(),
      failed.map((f) => ({ receiptHandle: f.receiptHandle, seconds: retryDelaySeconds(retry, f.receives) })),
    ).catch((error) => logger.warn('export retry backoff not set: the message comes back after the visibility timeout', { error: error as Error }));
  }
  return { batchItemFailures: failed.map(({ messageId }) => ({ itemIdentifier: messageId })) };
};
