import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { forwarderMemory } from '../../domain/webhooks/forwarder-memory';
import { forwardMessages, ORIGIN_ID_ATTRIBUTE } from '../../domain/webhooks/forwarding';
import { usageBuffer } from '../../domain/limits/usage';
import { registryDb } from '../../shared/clients';
import { publishMetrics } from '../../shared/metrics';
import { registerShutdownExtension } from '../../shared/shutdown';
import { tracer } from '../../shared/tracer';
import {
  FORWARDER_CACHE_SECONDS,
  FORWARD_QUEUE_URL,
  FORWARD_RETRY_BASE_SECONDS,
  FORWARD_RETRY_MAX_SECONDS,
  WEBHOOK_ALLOW_PRIVATE_TARGETS,
  WEBHOOK_TIMEOUT_MS,
} from '../../shared/env';
import { webhookPoster } from '../../shared/webhook-client';
import { consoleLive } from '../../domain/console-live/live';
import { publishToConsoles } from '../../stores/console-channel';

// POSTs of one batch in flight at once, across all its integrations.
const POST_CONCURRENCY = 16;
// Time kept at the end of an invocation for the status, ledger and backoff writes.
const WRAP_UP_MS = 2000;

const post = webhookPoster({ timeoutMs: WEBHOOK_TIMEOUT_MS, allowPrivate: WEBHOOK_ALLOW_PRIVATE_TARGETS });
// Workspaces remembered at most (a few KB each): far more than one container's batches name.
const REMEMBERED_WORKSPACES = 10_000;
const db = registryDb();
tracer.captureAWSv3Client(db.doc);
const memory = forwarderMemory(db, { ttlMs: FORWARDER_CACHE_SECONDS * 1000, max: REMEMBERED_WORKSPACES });
// The webhook POSTs' counts, written as the statuses are: at most once per FORWARDER_CACHE_SECONDS,
// and when the container ends (Lambda tells it, as it registered the shutdown extension).
const usage = usageBuffer(db, { flushMs: FORWARDER_CACHE_SECONDS * 1000 });
await registerShutdownExtension();

/**
 * The forward queue's consumer (an SQS event source with ReportBatchItemFailures): delivers the
 * batch to the workspaces' webhooks and answers with the messages to retry. Traced (X-Ray), with its
 * operator metrics written as it ends.
 */
export const handler = middy(async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
  const messages = event.Records.map((r) => ({
    messageId: r.messageId,
    receiptHandle: r.receiptHandle,
    body: r.body,
    receiveCount: Number(r.attributes.ApproximateReceiveCount) || 1,
    originId: r.messageAttributes?.[ORIGIN_ID_ATTRIBUTE]?.stringValue,
  }));
  try {
    const failed = await forwardMessages(db, messages, {
      post,
      memory,
      queueUrl: FORWARD_QUEUE_URL,
      retry: { baseSeconds: FORWARD_RETRY_BASE_SECONDS, maxSeconds: FORWARD_RETRY_MAX_SECONDS },
      concurrency: POST_CONCURRENCY,
      recordUsage: (tally) => usage.add(tally),
      live: consoleLive(publishToConsoles),
      startPostsBefore: Date.now() + context.getRemainingTimeInMillis() - WEBHOOK_TIMEOUT_MS - WRAP_UP_MS,
    });
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  } finally {
    publishMetrics();
  }
}).use(captureLambdaHandler(tracer, { captureResponse: false }));
