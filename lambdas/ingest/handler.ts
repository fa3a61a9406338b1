import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { publishForward } from '../domain/events';
import { ingestBatch, type IngestDeps } from '../domain/ingest';
import { WRITE_CONCURRENCY } from '../shared/env';
import { timeseriesStore } from '../stores/timeseries';

const deps: IngestDeps = { store: timeseriesStore(), forward: publishForward, concurrency: WRITE_CONCURRENCY };

/**
 * The ingest queue's consumer (an SQS event source with ReportBatchItemFailures): stores the data
 * points, forwards them and the device events, and answers with the messages to retry.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const failed = await ingestBatch(deps, event.Records.map(({ messageId, body }) => ({ messageId, body })));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
};
