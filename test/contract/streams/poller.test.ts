import { DescribeTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { ensureTable } from '../../../local/dynamodb-local';
import { startDynamoDbStreamPoller, type StreamHandler, type StreamPollerOptions } from '../../../local/dynamodb-stream-poller';
import { until } from '../../../local/ports';
import { freshQueue, receiveAll } from '../../helpers/sqs';

const client = new DynamoDBClient({});
afterAll(() => client.destroy());

/** A new table with the registry's stream (old and new images). */
const streamTable = async () => {
  const table = `stream-${randomUUID()}`;
  await ensureTable(client, table, { stream: true });
  return table;
};

/** Writes items `sk` = each name, under one partition, one after the other (so their records are in this order). */
const put = async (table: string, names: string[], pk = 'P') => {
  for (const sk of names) await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: sk }, n: { N: '1' }, m: { M: {} } } }));
};

const skOf = (record: DynamoDBRecord) => record.dynamodb!.Keys!.sk.S!;
const names = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);

/** Starts a poller on `table` with quick test settings; stopped after the test. */
const pollers: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});
const poll = async (table: string, handler: StreamHandler, options: Partial<StreamPollerOptions> = {}) => {
  const poller = await startDynamoDbStreamPoller({
    tableName: table,
    batchSize: 10,
    maxBatchingWindowMs: 200,
    retryAttempts: 2,
    bisectBatchOnError: false,
    timeoutMs: 10_000,
    functionName: 'test-consumer',
    handler,
    startingPosition: 'TRIM_HORIZON',
    retryDelayMs: () => 10,
    onError: () => undefined,
    ...options,
  });
  pollers.push(poller);
  return poller;
};

/** A handler that records every batch it is given, answering what `answer` says. */
const recorder = (answer: (records: DynamoDBRecord[], call: number) => unknown = () => undefined) => {
  const batches: DynamoDBRecord[][] = [];
  const succeeded: string[] = [];
  const handler: StreamHandler = async (event) => {
    batches.push(event.Records);
    const response = answer(event.Records, batches.length); // throws for a failed invocation
    const failures = (response as { batchItemFailures?: Array<{ itemIdentifier: string }> } | undefined)?.batchItemFailures ?? [];
    const failedAt = failures.map((f) => event.Records.findIndex((r) => r.dynamodb?.SequenceNumber === f.itemIdentifier));
    // An answer naming a record not in the batch is malformed: Lambda retries the whole batch, so none succeeded.
    const firstFailed = !failures.length ? -1 : failedAt.some((i) => i < 0) ? 0 : Math.min(...failedAt);
    succeeded.push(...event.Records.slice(0, firstFailed < 0 ? undefined : firstFailed).map(skOf));
    return response as never;
  };
  return { batches, succeeded, handler };
};

describe('the DynamoDB stream poller (Lambda’s stream event source mapping, on DynamoDB Local)', () => {
  it('invokes the handler with real DynamoDB stream events in batches of at most batchSize, every record once and in order', async () => {
    const table = await streamTable();
    const { batches, handler } = recorder();
    const poller = await poll(table, handler);

    await put(table, names('item', 25));

    await until(() => batches.flat().length >= 25, '25 records');
    expect(batches.flat().map(skOf)).toEqual(names('item', 25));
    expect(batches.every((b) => b.length <= 10)).toBe(true);
    expect(batches.flat()[0]).toEqual({
      eventID: expect.any(String),
      eventName: 'INSERT',
      eventVersion: expect.any(String),
      eventSource: 'aws:dynamodb',
      awsRegion: expect.any(String),
      eventSourceARN: poller.streamArn,
      dynamodb: expect.objectContaining({
        ApproximateCreationDateTime: expect.any(Number),
        Keys: { pk: { S: 'P' }, sk: { S: 'item000' } },
        NewImage: { pk: { S: 'P' }, sk: { S: 'item000' }, n: { N: '1' }, m: { M: {} } },
        SequenceNumber: expect.any(String),
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      }),
    });
  });

  it('gives the handler only the records its filter accepts', async () => {
    const table = await streamTable();
    const { batches, handler } = recorder();
    await poll(table, handler, { filter: (r) => skOf(r).startsWith('JOB#') });

    await put(table, ['DEV#1', 'JOB#a', 'FLT#1', 'JOB#b', 'last']);
    await put(table, ['JOB#z']);

    await until(() => batches.flat().some((r) => skOf(r) === 'JOB#z'), 'the last job record');
    expect(batches.flat().map(skOf)).toEqual(['JOB#a', 'JOB#b', 'JOB#z']);
  });

  it('retries from the lowest failed record the handler reports, and never delivers those before it again', async () => {
    const table = await streamTable();
    const { batches, succeeded, handler } = recorder((records, call) => {
      if (call > 1) return undefined;
      const at = (sk: string) => ({ itemIdentifier: records.find((r) => skOf(r) === sk)!.dynamodb!.SequenceNumber! });
      return { batchItemFailures: [at('item006'), at('item004')] };
    });
    // The first batch is all 8 records because they fill it, however slowly a loaded machine writes them.
    await poll(table, handler, { batchSize: 8, maxBatchingWindowMs: 60_000 });

    await put(table, names('item', 8));

    await until(() => succeeded.length >= 8, 'all 8 records handled');
    expect(batches[0].map(skOf)).toEqual(names('item', 8));
    expect(batches[1].map(skOf)).toEqual(names('item', 8).slice(4));
    expect(succeeded).toEqual(names('item', 8));
  });

  it('retries the whole batch when the answer names no record of it (malformed), as when the handler throws', async () => {
    const table = await streamTable();
    const { batches, succeeded, handler } = recorder((_, call) => {
      if (call === 1) return { batchItemFailures: [{ itemIdentifier: 'not-a-sequence-number' }] };
      if (call === 2) throw new Error('consumer down');
      return undefined;
    });
    await poll(table, handler, { batchSize: 100, maxBatchingWindowMs: 500 });

    await put(table, names('item', 3));

    await until(() => succeeded.length >= 3, 'the batch handled');
    expect(batches.map((b) => b.map(skOf))).toEqual([names('item', 3), names('item', 3), names('item', 3)]);
  });

  it('bisects a failing batch down to the bad record, retries it, sends its description to the on-failure queue and moves on', async () => {
    const table = await streamTable();
    const dlq = await freshQueue();
    const { batches, succeeded, handler } = recorder((records) => {
      if (records.some((r) => skOf(r) === 'item005')) throw new Error('poison');
      return undefined;
    });
    const poller = await poll(table, handler, {
      batchSize: 8,
      maxBatchingWindowMs: 500,
      bisectBatchOnError: true,
      retryAttempts: 2,
      onFailureQueueUrl: dlq.url,
    });

    await put(table, names('item', 8));
    await until(() => succeeded.length >= 7, 'the 7 good records handled');
    await put(table, ['after']);

    await until(() => succeeded.includes('after'), 'a record written after the bad one');
    expect([...succeeded].sort()).toEqual([...names('item', 8).filter((n) => n !== 'item005'), 'after'].sort());
    // bisecting does not count as a retry: the bad record alone is invoked once, then retried twice
    expect(batches.filter((b) => b.length === 1 && skOf(b[0]) === 'item005')).toHaveLength(3);
    // the writes may reach the poller in more than one batch on a loaded machine
    const poison = batches.flat().find((r) => skOf(r) === 'item005')!;
    const descriptions = (await receiveAll(dlq.url)).map((m) => JSON.parse(m.Body!));
    expect(descriptions).toEqual([
      expect.objectContaining({
        version: '1.0',
        requestContext: expect.objectContaining({ condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 }),
        DDBStreamBatchInfo: expect.objectContaining({
          startSequenceNumber: poison.dynamodb!.SequenceNumber,
          endSequenceNumber: poison.dynamodb!.SequenceNumber,
          batchSize: 1,
          streamArn: poller.streamArn,
          shardId: expect.any(String),
        }),
      }),
    ]);
  });

  it('counts an invocation that outlives the timeout as failed, and retries it', async () => {
    const table = await streamTable();
    let calls = 0;
    const delivered: string[] = [];
    const handler: StreamHandler = async (event) => {
      calls++;
      if (calls === 1)
        await new Promise((resolve) => setTimeout(resolve, 2000)); // past the 300 ms timeout
      else delivered.push(...event.Records.map(skOf));
    };
    await poll(table, handler, { timeoutMs: 300 });

    await put(table, ['slow']);

    await until(() => delivered.includes('slow'), 'the retried record');
    expect(calls).toBe(2);
  });

  it('runs parallelizationFactor batches of one shard at once, each partition key in one of them, in order', async () => {
    const table = await streamTable();
    const keys = Array.from({ length: 8 }, (_, k) => `P${k}`);
    let inFlight = 0;
    let most = 0;
    const handled: Array<{ pk: string; sk: string }> = [];
    const handler: StreamHandler = async (event) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      try {
        // The first batch waits for another to start beside it: one batch at a time never gets there.
        if (handled.length === 0) await until(() => most >= 2, 'a second batch running beside the first', 5000);
        handled.push(...event.Records.map((r) => ({ pk: r.dynamodb!.Keys!.pk.S!, sk: skOf(r) })));
      } finally {
        inFlight -= 1;
      }
    };
    await poll(table, handler, { batchSize: 2, maxBatchingWindowMs: 0, parallelizationFactor: 4, retryAttempts: 0 });

    for (const name of names('item', 4)) await Promise.all(keys.map((pk) => put(table, [name], pk)));

    await until(() => handled.length >= keys.length * 4, 'every record handled');
    expect(most).toBeGreaterThanOrEqual(2);
    expect(handled).toHaveLength(keys.length * 4);
    for (const pk of keys) expect(handled.filter((h) => h.pk === pk).map((h) => h.sk)).toEqual(names('item', 4));
  });

  it('keeps a partition key’s records in order behind its failing batch, while other keys go on', async () => {
    const table = await streamTable();
    const { batches, succeeded, handler } = recorder((records) => {
      const blocked = records.some((r) => r.dynamodb!.Keys!.pk.S === 'BAD' && skOf(r) === 'bad000');
      // The first record of BAD fails until every other key's records are handled.
      if (blocked && batches.flat().filter((r) => r.dynamodb!.Keys!.pk.S !== 'BAD').length < 12) throw new Error('not yet');
      return undefined;
    });
    await poll(table, handler, { batchSize: 3, maxBatchingWindowMs: 0, parallelizationFactor: 10, retryAttempts: 1000 });

    await put(table, names('bad', 4), 'BAD');
    await Promise.all(['G1', 'G2', 'G3', 'G4'].map((pk) => put(table, names(pk, 3), pk)));

    await until(() => succeeded.filter((sk) => sk.startsWith('bad')).length >= 4, 'the failing key handled at last');
    expect(succeeded.filter((sk) => sk.startsWith('bad'))).toEqual(names('bad', 4));
    expect(succeeded.filter((sk) => !sk.startsWith('bad')).sort()).toEqual(['G1', 'G2', 'G3', 'G4'].flatMap((pk) => names(pk, 3)).sort());
    // every other key was handled while BAD's first record was still failing
    expect(succeeded.slice(0, 12).every((sk) => !sk.startsWith('bad'))).toBe(true);
  });

  it('starts at LATEST: records written before it started are not delivered, those written after are', async () => {
    const table = await streamTable();
    await put(table, ['before']);
    const { batches, handler } = recorder();
    await poll(table, handler, { startingPosition: 'LATEST' });

    await put(table, ['after']);

    await until(() => batches.flat().length >= 1, 'the record written after the start');
    expect(batches.flat().map(skOf)).toEqual(['after']);
  });

  it('turns the stream on for a table that exists without one (a data folder from before)', async () => {
    const table = `stream-${randomUUID()}`;
    await ensureTable(client, table);
    expect((await client.send(new DescribeTableCommand({ TableName: table }))).Table?.StreamSpecification?.StreamEnabled).not.toBe(true);

    await ensureTable(client, table, { stream: true });

    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    expect(Table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
    const { batches, handler } = recorder();
    await poll(table, handler);
    await put(table, ['x']);
    await until(() => batches.flat().length >= 1, 'a record of the new stream');
  });

  it('refuses a table without a stream', async () => {
    const table = `stream-${randomUUID()}`;
    await ensureTable(client, table);

    await expect(poll(table, recorder().handler)).rejects.toThrow(/no stream/);
  });
});
