/**
 * DynamoDB Local's stream log is indexed (local/dynamodb-stream-log.ts): the query with which the
 * engine answers every request to a streamed table is planned on the index, in a scratch folder that
 * the engine deletes as it stops and in a persisted data folder alike.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_AWS_ENV, startDynamoDbLocal, type DynamoDbLocal } from '../../../local/dynamodb-local';
import { scratchBase } from '../../../local/dynamodb-stream-log';

/** How SQLite plans the engine's search for a stream's first record (its statement in getStreamDescription). */
const planOfFirstRecord = (dataDir: string) => {
  const database = new DatabaseSync(join(dataDir, 'shared-local-instance.db'), { readOnly: true });
  try {
    return database
      .prepare('EXPLAIN QUERY PLAN SELECT MIN(SequenceNumber) FROM us WHERE StreamID = ?')
      .all('any')
      .map((row) => String(row.detail));
  } finally {
    database.close();
  }
};

/** Writes one record to a streamed table of the engine, so that its stream log has a record. */
const writeStreamed = async (engine: DynamoDbLocal) => {
  const client = new DynamoDBClient({
    endpoint: engine.endpoint,
    region: LOCAL_AWS_ENV.AWS_REGION,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await client.send(
    new CreateTableCommand({
      TableName: 'streamed',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  await client.send(new PutItemCommand({ TableName: 'streamed', Item: { pk: { S: 'a' } } }));
  client.destroy();
};

/** The number of a process that has ended. */
const endedPid = () => spawnSync(process.execPath, ['-e', '']).pid!;

describe('DynamoDB Local’s stream log', () => {
  it('is indexed in a scratch folder, deleted as the engine stops, and folders of ended processes go at the next start', async () => {
    const base = scratchBase();
    const stale = join(base, `fleetstream-dynamodb-${endedPid()}-left`);
    const live = join(base, `fleetstream-dynamodb-${process.pid}-other`);
    mkdirSync(stale);
    mkdirSync(live);

    const engine = await startDynamoDbLocal();
    await writeStreamed(engine);
    const plan = planOfFirstRecord(engine.dataDir!);
    await engine.stop();

    expect(dirname(engine.dataDir!)).toBe(base);
    expect(plan).toEqual([expect.stringContaining('USING COVERING INDEX fleetstream_stream_log')]);
    expect(existsSync(engine.dataDir!)).toBe(false);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(live)).toBe(true);
    rmSync(live, { recursive: true });
  }, 60_000);

  it('is indexed in a persisted data folder, which the engine keeps', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-dynamodb-persisted-'));

    const engine = await startDynamoDbLocal({ dataDir });
    await writeStreamed(engine);
    await engine.stop();

    expect(engine.dataDir).toBe(dataDir);
    expect(planOfFirstRecord(dataDir)).toEqual([expect.stringContaining('USING COVERING INDEX fleetstream_stream_log')]);
    rmSync(dataDir, { recursive: true });
  }, 60_000);
});
