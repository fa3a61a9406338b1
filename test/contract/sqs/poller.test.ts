import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { until as waitUntil } from '../../../local/ports';
import { startSqsPoller, type SqsHandler, type SqsPoller } from '../../../local/sqs-poller';
import { depthOf, freshQueue, receiveAll, sendRaw, type TestQueue } from '../../helpers/sqs';

const pollers: SqsPoller[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});

/** A poller on `queue` whose handler is `handler`; every invocation's records are kept in order. */
const poll = (
  queue: TestQueue,
  handler: (event: SQSEvent) => Promise<SQSBatchResponse | void>,
  options: { batchSize?: number; windowMs?: number; enabled?: boolean } = {},
) => {
  const batches: SQSRecord[][] = [];
  const recording: SqsHandler = async (event) => {
    batches.push(event.Records);
    return handler(event);
  };
  const poller = startSqsPoller({
    queueUrl: queue.url,
    queueArn: queue.arn,
    batchSize: options.batchSize ?? 10,
    maxBatchingWindowMs: options.windowMs ?? 200,
    timeoutMs: 5000,
    functionName: 'test',
    handler: recording,
    onError: () => undefined,
    enabled: options.enabled,
  });
  pollers.push(poller);
  const seen = (body: string) => batches.flat().filter((r) => r.body === body);
  return { batches, seen, enable: poller.enable };
};

const until = (condition: () => boolean | Promise<boolean>, what: string) => waitUntil(condition, what, 20_000);

const isEmpty = async (url: string) => {
  const depth = await depthOf(url);
  return depth.visible + depth.inFlight + depth.delayed === 0;
};

const bodies = (n: number, prefix = 'm') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('the local SQS event source (poller) on fauxqs', () => {
  it('gathers batches up to the batch size and invokes with real SQS records', async () => {
    const queue = await freshQueue();
    await sendRaw(queue.url, bodies(25));

    const { batches } = poll(queue, async () => undefined, { batchSize: 20, windowMs: 500 });
    await until(() => batches.flat().length === 25 && isEmpty(queue.url), 'all 25 processed and deleted');

    expect(batches.map((b) => b.length)).toEqual([20, 5]);
    expect(
      batches
        .flat()
        .map((r) => r.body)
        .sort(),
    ).toEqual(bodies(25).sort());
    expect(batches[0][0]).toEqual(
      expect.objectContaining({
        messageId: expect.any(String),
        receiptHandle: expect.any(String),
        eventSource: 'aws:sqs',
        eventSourceARN: queue.arn,
        attributes: expect.objectContaining({ ApproximateReceiveCount: '1', SentTimestamp: expect.stringMatching(/^\d+$/) }),
      }),
    );
  });

  it('leaves the queue alone while disabled, then takes its backlog in full batches once enabled', async () => {
    const queue = await freshQueue();
    const { batches, enable } = poll(queue, async () => undefined, { batchSize: 20, windowMs: 500, enabled: false });
    await sendRaw(queue.url, bodies(10, 'a'));
    await sendRaw(queue.url, bodies(15, 'b'));
    // A disabled event source makes no request: every message is still visible, none received.
    expect(await depthOf(queue.url)).toEqual(expect.objectContaining({ visible: 25, inFlight: 0 }));
    expect(batches).toHaveLength(0);

    enable();
    await until(() => batches.flat().length === 25 && isEmpty(queue.url), 'the backlog processed and deleted');
    expect(batches.map((b) => b.length)).toEqual([20, 5]);
  });

  it('stops while still disabled', async () => {
    const queue = await freshQueue();
    poll(queue, async () => undefined, { enabled: false });
    await Promise.all(pollers.splice(0).map((p) => p.stop()));
    await sendRaw(queue.url, bodies(1));
    expect(await depthOf(queue.url)).toEqual(expect.objectContaining({ visible: 1 }));
  });

  it('waits for the batching window to fill a batch from messages that arrive over time', async () => {
    const queue = await freshQueue();
    const { batches } = poll(queue, async () => undefined, { batchSize: 100, windowMs: 1500 });

    await sendRaw(queue.url, bodies(5, 'a'));
    await sendRaw(queue.url, bodies(5, 'b'));
    await until(() => batches.flat().length === 10, 'both sends processed');

    expect(batches).toHaveLength(1);
  });

  it('invokes a batch whose payload is full without waiting for the batching window, receiving no message it cannot take', async () => {
    const queue = await freshQueue();
    // 31 bodies of 200,000 bytes: 6.2 MB, within Lambda's 6 MiB event, and a 32nd would not fit.
    const big = Array.from({ length: 31 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(199_998)}`);
    for (let i = 0; i < big.length; i += 4) await sendRaw(queue.url, big.slice(i, i + 4)); // SendMessageBatch takes 1 MiB
    // A window far longer than the wait below: the batch must go when full, not when the window closes.
    const { batches } = poll(queue, async () => undefined, { batchSize: 100, windowMs: 120_000 });

    await until(() => batches.length === 1, 'the full batch invoked');

    expect(batches[0].map((r) => r.body).sort()).toEqual(big);
    // Nothing was received only to be handed back: each came once.
    expect(batches[0].map((r) => r.attributes.ApproximateReceiveCount)).toEqual(big.map(() => '1'));
  });

  it('deletes the succeeded messages and redelivers only the reported failures after the visibility timeout', async () => {
    const queue = await freshQueue({ visibilityTimeoutSeconds: 1 });
    await sendRaw(queue.url, ['ok1', 'fail', 'ok2']);

    const { seen } = poll(queue, async (event) => ({
      batchItemFailures: event.Records.filter((r) => r.body === 'fail' && r.attributes.ApproximateReceiveCount === '1').map((r) => ({
        itemIdentifier: r.messageId,
      })),
    }));
    await until(async () => seen('fail').length === 2 && (await isEmpty(queue.url)), 'the failed message retried and deleted');

    expect(seen('fail').map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect([seen('ok1').length, seen('ok2').length]).toEqual([1, 1]);
  });

  it('treats a handler that throws as a failure of the whole batch', async () => {
    const queue = await freshQueue({ visibilityTimeoutSeconds: 1 });
    await sendRaw(queue.url, ['x', 'y']);

    let calls = 0;
    const { seen } = poll(queue, async () => {
      calls += 1;
      if (calls === 1) throw new Error('crash mid-batch');
    });
    await until(async () => seen('x').length === 2 && seen('y').length === 2 && (await isEmpty(queue.url)), 'both retried and deleted');

    expect([...seen('x'), ...seen('y')].map((r) => r.attributes.ApproximateReceiveCount).sort()).toEqual(['1', '1', '2', '2']);
  });

  it('treats a response naming a message outside the batch as a failure of the whole batch', async () => {
    const queue = await freshQueue({ visibilityTimeoutSeconds: 1 });
    await sendRaw(queue.url, ['only']);

    const { seen } = poll(queue, async (event) =>
      event.Records[0].attributes.ApproximateReceiveCount === '1' ? { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] } : undefined,
    );
    await until(async () => seen('only').length === 2 && (await isEmpty(queue.url)), 'redelivered once and deleted');

    expect(seen('only')).toHaveLength(2);
  });

  it('lets the redrive policy move a message that keeps failing to the DLQ after maxReceiveCount', async () => {
    const queue = await freshQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    await sendRaw(queue.url, ['poison', 'fine']);

    const { seen } = poll(queue, async (event) => ({
      batchItemFailures: event.Records.filter((r) => r.body === 'poison').map((r) => ({ itemIdentifier: r.messageId })),
    }));
    await until(async () => (await depthOf(queue.dlqUrl)).visible === 1 && (await isEmpty(queue.url)), 'poison in the DLQ');

    expect(seen('poison')).toHaveLength(2);
    expect(seen('fine')).toHaveLength(1);
    expect((await receiveAll(queue.dlqUrl)).map((m) => m.Body)).toEqual(['poison']);
  });

  it('stops while long-polling and leaves later messages in the queue', async () => {
    const queue = await freshQueue();
    const { batches } = poll(queue, async () => undefined);

    await pollers.pop()!.stop();
    await sendRaw(queue.url, ['after stop']);

    expect(batches).toEqual([]);
    expect((await depthOf(queue.url)).visible).toBe(1);
  });
});
