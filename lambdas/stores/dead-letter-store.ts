import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { requeueBody } from '../shared/json';
import { sendBatchInHalves } from './queue-store';

// As queue-store.ts: the endpoint (AWS_ENDPOINT_URL_SQS or the regional one) decides where requests go.
let sqs: SQSClient | undefined;
const client = () => (sqs ??= new SQSClient({ useQueueUrlAsEndpoint: false }));

/** The attribute that carries a replayed message's first SQS message ID (the forwarder's delivery ledger key). */
export const ORIGIN_ID_ATTRIBUTE = 'origin-message-id';

/** A dead-lettered message, received (hidden from other receivers until released or moved). */
export interface DeadLetter {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: Record<string, MessageAttributeValue>;
  /** The ID its delivery ledger entry is kept by: its first message ID. */
  originId: string;
}

/** Receives up to 10 messages of a DLQ, hiding them `hideSeconds` (an empty answer after `waitSeconds`: the DLQ looks empty). */
export const receiveDeadLetters = async (dlqUrl: string, hideSeconds: number, waitSeconds: number): Promise<DeadLetter[]> => {
  const { Messages = [] } = await client().send(
    new ReceiveMessageCommand({
      QueueUrl: dlqUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitSeconds,
      VisibilityTimeout: hideSeconds,
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages.map((m) => ({
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body!,
    attributes: m.MessageAttributes ?? {},
    originId: m.MessageAttributes?.[ORIGIN_ID_ATTRIBUTE]?.StringValue ?? m.MessageId!,
  }));
};

/**
 * Moves received dead letters to the queue: each is sent (its body and attributes, plus
 * `origin-message-id`), then deleted from the DLQ. Sent first, deleted after: a failure between
 * the two replays a message twice, never loses it. Answers those sent and those that were not.
 */
export const moveDeadLetters = async (queueUrl: string, dlqUrl: string, letters: DeadLetter[]) => {
  if (!letters.length) return { moved: [], unsent: [] };
  const { sent } = await sendBatchInHalves(
    client(),
    queueUrl,
    letters.map((letter, i) => ({
      Id: String(i),
      MessageBody: requeueBody(letter.body),
      MessageAttributes: { ...letter.attributes, [ORIGIN_ID_ATTRIBUTE]: { DataType: 'String', StringValue: letter.originId } },
    })),
  );
  const done = sent.map((id) => letters[Number(id)]);
  const unsent = letters.filter((letter) => !done.includes(letter));
  if (done.length) {
    // One not deleted comes back to the DLQ when its hiding ends, and is replayed again (at least once).
    await client().send(new DeleteMessageBatchCommand({ QueueUrl: dlqUrl, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.receiptHandle })) }));
  }
  return { moved: done, unsent };
};

/** Makes received dead letters visible again at once, untouched (10 a call). */
export const releaseDeadLetters = async (dlqUrl: string, letters: DeadLetter[]) => {
  for (let i = 0; i < letters.length; i += 10) {
    await client().send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: dlqUrl,
        Entries: letters.slice(i, i + 10).map((m, j) => ({ Id: String(j), ReceiptHandle: m.receiptHandle, VisibilityTimeout: 0 })),
      }),
    );
  }
};
