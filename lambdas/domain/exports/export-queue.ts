import { exportQueueUrl } from '../../shared/env';
import { AppError } from '../../shared/errors';
import type { ExportJob } from '../../schemas/export';
import { sendDelayedMessage } from '../../stores/queue-store';

/** Puts an export (back) on the export queue. */
export type EnqueueExport = (job: ExportJob) => Promise<void>;

/**
 * Puts an export on the export queue.
 * @throws when no export queue is configured or SQS refuses it.
 */
export const enqueueExport: EnqueueExport = async (job) => {
  const queueUrl = exportQueueUrl();
  if (!queueUrl) throw new AppError(500, 'internal_error', 'EXPORT_QUEUE_URL is not set.');
  await sendDelayedMessage(queueUrl, job, 0);
};
