/**
 * The stream poller in a process that tells its writes (local/dynamodb-writes.ts, as the local
 * runtimes do): a write is read at once, and an idle shard is polled only every `idlePollMs`. A file
 * of its own: telling writes is for the whole process, and the poller's other tests poll as Lambda
 * does.
 */
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { ensureTable } from '../../../local/dynamodb-local';
import { startDynamoDbStreamPoller } from '../../../local/dynamodb-stream-poller';
import { isItemWrite, signalTableWrites } from '../../../local/dynamodb-writes';
import { until } from '../../../local/ports';
import { addToEveryClient } from '../../../local/sdk-steps';

const client = new DynamoDBClient({});
afterAll(() => client.destroy());

// Every GetRecords call of the process, counted.
let getRecords = 0;
addToEveryClient(
  (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => async (args: unknown) => {
    if (context.commandName === 'GetRecordsCommand') getRecords++;
    return next(args);
  },
  { step: 'initialize', priority: 'high', name: 'testCountGetRecords' },
);

describe('the stream poller where the process tells its writes', () => {
  it('reads a write at once though it polls an idle shard once a minute, and polled nothing while idle', async () => {
    signalTableWrites();
    const table = `stream-${randomUUID()}`;
    await ensureTable(client, table, { stream: true });
    const seen: DynamoDBRecord[] = [];
    const poller = await startDynamoDbStreamPoller({
      tableName: table,
      batchSize: 10,
      maxBatchingWindowMs: 0,
      retryAttempts: 0,
      bisectBatchOnError: false,
      timeoutMs: 10_000,
      functionName: 'test-consumer',
      handler: async (event) => void seen.push(...event.Records),
      startingPosition: 'LATEST',
      idlePollMs: 60_000,
    });
    try {
      // The first poll has been made: the shard is idle now.
      await until(() => getRecords >= 1, 'the first poll');
      // A window of 1.5 s in which Lambda's poller would poll six times: none here.
      const idleSince = getRecords;
      await until(() => getRecords > idleSince, 'a poll of the idle shard', 1_500).catch(() => undefined);
      const idlePolls = getRecords - idleSince;

      await client.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'P' }, sk: { S: 'written' } } }));

      // Polling every minute, the record would come after the bound.
      await until(() => seen.length === 1, 'the written record', 20_000);
      expect(seen[0].dynamodb?.Keys?.sk?.S).toBe('written');
      expect(idlePolls).toBe(0);
    } finally {
      await poller.stop();
    }
  }, 60_000);

  it('counts as writes the operations that write items, by command or target name', () => {
    expect(['PutItemCommand', 'TransactWriteItems', 'BatchWriteItemCommand', 'ExecuteStatement'].map(isItemWrite)).toEqual([true, true, true, true]);
    expect(['GetItemCommand', 'Query', 'DeleteTable', 'UpdateTimeToLive', 'TransactGetItems'].map(isItemWrite)).toEqual([false, false, false, false, false]);
  });
});
