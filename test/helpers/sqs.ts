import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { randomUUID } from 'node:crypto';
import { readForwardBody, type RenderedEntry } from '../../lambdas/domain/webhooks/forward-pack';
import type { ForwardMessage } from '../../lambdas/schemas/forward';
import { toQueueBody } from '../../lambdas/shared/json';

/** A client of the run's SQS engine (AWS_ENDPOINT_URL_SQS); the endpoint, not the queue URL's host, is used. */
export const sqsClient = () => new SQSClient({ useQueueUrlAsEndpoint: false });

export interface TestQueue {
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

const arnOf = async (client: SQSClient, url: string) => {
  const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return Attributes!.QueueArn!;
};

/** A new queue with its own DLQ and redrive policy on the run's SQS engine. */
export const freshQueue = async (settings: { visibilityTimeoutSeconds?: number; maxReceiveCount?: number } = {}): Promise<TestQueue> => {
  const client = sqsClient();
  const name = `test-${randomUUID()}`;
  const { QueueUrl: dlqUrl } = await client.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqArn = await arnOf(client, dlqUrl!);
  const { QueueUrl: url } = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(settings.visibilityTimeoutSeconds ?? 30),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: settings.maxReceiveCount ?? 3 }),
      },
    }),
  );
  return { url: url!, arn: await arnOf(client, url!), dlqUrl: dlqUrl!, dlqArn };
};

/** Sends raw bodies (strings as they are), 10 per call. */
export const sendRaw = async (url: string, bodies: string[]) => {
  const client = sqsClient();
  for (let i = 0; i < bodies.length; i += 10) {
    const Entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody }));
    const result = await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries }));
    if (result.Failed?.length) throw new Error(`send failed: ${JSON.stringify(result.Failed)}`);
  }
};

/** Sends JSON values in the queues' one encoding (`toQueueBody`, as every sender of the app), 10 per call. */
export const sendJson = (url: string, values: unknown[]) => sendRaw(url, values.map(toQueueBody));

/** Visible, in-flight and delayed messages of a queue (SQS's approximate counts; exact on fauxqs). */
export const depthOf = async (url: string) => {
  const { Attributes = {} } = await sqsClient().send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
  };
};

/** Receives every visible message of a queue (leaving them in flight), until a receive comes back empty. */
export const receiveAll = async (url: string): Promise<Message[]> => {
  const client = sqsClient();
  const all: Message[] = [];
  for (;;) {
    const { Messages = [] } = await client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: ['All'] }),
    );
    if (!Messages.length) return all;
    all.push(...Messages);
  }
};

/** Makes received messages visible again at once (what `receiveAll` hid). */
export const releaseAll = async (url: string, messages: Message[]) => {
  const client = sqsClient();
  for (let i = 0; i < messages.length; i += 10) {
    await client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: messages.slice(i, i + 10).map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  }
};

/** A rendered entry read back as the forward message it was made from. */
export const entryMessage = (entry: RenderedEntry): ForwardMessage => ({ kind: entry.kind, ...JSON.parse(entry.json) });

/**
 * The forward messages that forward-queue bodies carry, in order: a pack's entries read back (the
 * producers pack, domain/forward-pack.ts), or the single message of a body from before packing.
 */
export const forwardEntries = (bodies: string[]): any[] =>
  bodies.flatMap((body) => {
    const entries = readForwardBody(body);
    if (!entries) throw new Error(`not a forward-queue body: ${body.slice(0, 200)}`);
    return entries.map(entryMessage);
  });
