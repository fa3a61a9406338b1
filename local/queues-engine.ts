import { startFauxqs } from 'fauxqs';
import { dlqNameOf, QUEUES, type QueueDefinition, type QueueName, type QueueSettings } from '../lambdas/queues';

/** One queue as created on the local engine, with its DLQ and the settings it was made with. */
export interface LocalQueue {
  definition: QueueDefinition;
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

export interface LocalSqs {
  /** The value of AWS_ENDPOINT_URL_SQS for clients of this engine. */
  endpoint: string;
  queues: Record<QueueName, LocalQueue>;
  stop: () => Promise<void>;
}

/** Per-queue changes to QUEUES, e.g. short visibility timeouts in tests. */
export type QueueOverrides = Partial<Record<QueueName, Partial<QueueSettings>>>;

// SQS's own maximum; DLQs keep what failed as long as SQS allows.
const seconds = (days: number) => String(days * 24 * 3600);

/**
 * Starts fauxqs in this process (the real SQS wire protocol, in memory) on `port` (a free one when
 * 0) and creates every queue of QUEUES with its DLQ and redrive policy. fauxqs itself implements
 * visibility timeouts, ChangeMessageVisibility, the batch APIs, long polling, and the redrive to
 * the DLQ on the receive after maxReceiveCount, as SQS does; what Lambda adds (batching windows,
 * partial batch responses) is the poller's job.
 */
export const startLocalSqs = async (options: { port?: number; overrides?: QueueOverrides } = {}): Promise<LocalSqs> => {
  const server = await startFauxqs({ port: options.port ?? 0, logger: false });
  const create = (definition: QueueDefinition): LocalQueue => {
    const dlq = server.createQueue(dlqNameOf(definition.name), { attributes: { MessageRetentionPeriod: seconds(definition.dlqRetentionDays) } });
    const queue = server.createQueue(definition.name, {
      attributes: {
        VisibilityTimeout: String(definition.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: definition.maxReceiveCount }),
      },
    });
    return { definition, url: queue.queueUrl, arn: queue.queueArn, dlqUrl: dlq.queueUrl, dlqArn: dlq.queueArn };
  };
  const queues = Object.fromEntries(
    Object.values(QUEUES).map((definition) => [definition.name, create({ ...definition, ...options.overrides?.[definition.name] })]),
  ) as Record<QueueName, LocalQueue>;
  return { endpoint: server.address, queues, stop: () => server.stop() };
};
