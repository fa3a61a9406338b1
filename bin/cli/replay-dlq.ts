/**
 * Moves the messages of a queue's dead-letter queue back to the queue, so that its consumer tries
 * them again; prints its progress to stderr and a JSON summary to stdout. Each message keeps its
 * attributes and gains `origin-message-id` (its first SQS message ID), so that the forwarder skips
 * the integrations it already reached. A message is deleted from the DLQ only once it is sent: a
 * crash in between replays it twice, never loses it.
 *
 *   fleetstream replay-dlq --local --queue forward            # the running `npm start` (--port when several share .local)
 *   fleetstream replay-dlq --queue <ForwardQueueUrl output>   # a deployed stack (AWS credentials and region as usual)
 *
 * The DLQ is found from the queue's redrive policy (or named with --dlq). --max stops after that
 * many messages. The SQS endpoint is the SDK's usual one, or AWS_ENDPOINT_URL_SQS.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import type { LocalOptions } from '../commands/options';
import { requeueBody } from '../../lambdas/shared/json';
import { sendBatchInHalves } from '../../lambdas/stores/queue-store';
import { findRuntime } from '../../local/runtime-file';

// The forwarder reads it (lambdas/domain/webhooks/forwarding.ts ORIGIN_ID_ATTRIBUTE).
const ORIGIN_ID_ATTRIBUTE = 'origin-message-id';

/** `replay-dlq`'s options: the queue (a URL, or a name), its DLQ when not its redrive policy's, how many at most. */
export interface ReplayOptions extends LocalOptions {
  queue: string;
  dlq?: string;
  max?: number;
}

const log = (line: string) => process.stderr.write(`replay-dlq: ${line}\n`);
const fail = (message: string): never => {
  log(message);
  process.exit(2);
};

const urlOf = async (sqs: SQSClient, nameOrUrl: string, owner?: string) =>
  /^https?:\/\//.test(nameOrUrl) ? nameOrUrl : (await sqs.send(new GetQueueUrlCommand({ QueueName: nameOrUrl, QueueOwnerAWSAccountId: owner }))).QueueUrl!;

/** The DLQ named by the queue's redrive policy. */
const dlqOf = async (sqs: SQSClient, queueUrl: string) => {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['RedrivePolicy'] }));
  if (!Attributes?.RedrivePolicy) fail(`${queueUrl} has no redrive policy: name its DLQ with --dlq.`);
  const arn = (JSON.parse(Attributes!.RedrivePolicy!) as { deadLetterTargetArn: string }).deadLetterTargetArn;
  const [, , , , account, name] = arn.split(':');
  return urlOf(sqs, name, account);
};

const depthOf = async (sqs: SQSClient, queueUrl: string) => {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(Attributes?.ApproximateNumberOfMessages ?? 0);
};

/** Moves up to 10 messages: how many were received (0: the DLQ looks empty) and how many moved. */
const moveBatch = async (sqs: SQSClient, queueUrl: string, dlqUrl: string, limit: number) => {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: dlqUrl,
      MaxNumberOfMessages: Math.min(10, limit),
      WaitTimeSeconds: 1,
      VisibilityTimeout: 60,
      MessageAttributeNames: ['All'],
    }),
  );
  if (!Messages.length) return { received: 0, moved: 0 };
  // Ten full forward packs (~255 KiB each) are more than a call takes: sent in halves then.
  const { sent, failed } = await sendBatchInHalves(
    sqs,
    queueUrl,
    Messages.map((m, i) => ({
      Id: String(i),
      MessageBody: requeueBody(m.Body!),
      MessageAttributes: {
        ...m.MessageAttributes,
        [ORIGIN_ID_ATTRIBUTE]: m.MessageAttributes?.[ORIGIN_ID_ATTRIBUTE] ?? ({ DataType: 'String', StringValue: m.MessageId } as MessageAttributeValue),
      },
    })),
  );
  for (const failure of failed) log(`could not send ${Messages[Number(failure.Id)].MessageId}: ${failure.Message} (it stays in the DLQ)`);
  const done = sent.map((id) => Messages[Number(id)]);
  if (done.length) {
    const deleted = await sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl: dlqUrl, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }),
    );
    for (const failure of deleted.Failed ?? []) log(`sent but not deleted from the DLQ (it will be replayed again): ${failure.Message}`);
  }
  return { received: Messages.length, moved: done.length };
};

/**
 * Moves the DLQ's messages back to the queue, on the running `npm start` (`--local`) or AWS, and
 * prints a JSON summary; a failure is said in one line and exits 2.
 */
export const replayDlq = async (options: ReplayOptions) => {
  if (options.local) {
    try {
      Object.assign(process.env, findRuntime(options.dataDir, options.port).env);
    } catch (error) {
      fail((error as Error).message);
    }
  }
  const max = options.max ?? Infinity;
  // The endpoint (regional, or AWS_ENDPOINT_URL_SQS) decides where requests go, not a queue URL's host;
  // an AWS queue URL names its region.
  const region = /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com\//.exec(options.queue)?.[1];
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false, ...(region ? { region } : {}) });

  try {
    const queueUrl = await urlOf(sqs, options.queue);
    const dlqUrl = options.dlq ? await urlOf(sqs, options.dlq) : await dlqOf(sqs, queueUrl);
    const waiting = await depthOf(sqs, dlqUrl);
    log(`${dlqUrl} → ${queueUrl}: about ${waiting} messages waiting`);
    let moved = 0;
    let lastReport = 0;
    // Two empty receives in a row: SQS may answer one short receive empty while messages remain.
    for (let empty = 0; empty < 2 && moved < max; ) {
      const batch = await moveBatch(sqs, queueUrl, dlqUrl, max - moved);
      empty = batch.received ? 0 : empty + 1;
      moved += batch.moved;
      if (moved - lastReport >= 100 || (!batch.received && moved !== lastReport)) {
        log(`moved ${moved}${waiting > moved ? ` of about ${waiting}` : ''}`);
        lastReport = moved;
      }
    }
    const left = await depthOf(sqs, dlqUrl);
    log(`done: ${moved} moved, about ${left} left in the DLQ`);
    process.stdout.write(`${JSON.stringify({ queue: queueUrl, dlq: dlqUrl, moved, left })}\n`);
  } catch (error) {
    fail(`${(error as Error).name}: ${(error as Error).message} (check the queue, AWS credentials and region)`);
  }
};
