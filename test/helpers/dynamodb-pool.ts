import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { Config } from '@jest/types';
import { type DynamoDbLocal, LOCAL_AWS_ENV, startDynamoDbLocal } from '../../local/dynamodb-local';

/**
 * The run's DynamoDB Locals: one per jest worker, shared by the projects that need one (contract,
 * e2e, e2e-cloud). A worker runs one test file at a time, so each engine serves one file at a time:
 * files never wait on each other's locks inside one engine (DynamoDB Local serializes its writes;
 * three files on one engine made it the run's bottleneck and sometimes answered "too long waiting
 * for a lock"). Each file still makes tables of its own (test/helpers/e2e-tables.ts).
 *
 * The first project's global setup starts them and a small HTTP server through which each test file
 * claims its worker's engine as it starts (test/helpers/worker-engine.ts). The claim restarts an
 * engine whose stream log has grown past STREAM_LOG_LIMIT records: DynamoDB Local keeps every
 * stream record of every table, deleted ones too, for 24 hours in one SQLite table indexed by
 * sequence number only, and answers each request on a table with a stream (the registry's) after
 * finding its shard's first record by a scan of that table. A request there cost about 0.9 µs of
 * the engine's CPU per record that any earlier file wrote (docs/testing.md).
 */
const pool = globalThis as { __dynamoDbPool?: Promise<Pool> };

interface Pool {
  engines: DynamoDbLocal[];
  server: Server;
  restarts: number;
}

/** The variable through which the test files find the pool's server. */
const POOL_URL = 'FLEETSTREAM_TEST_DYNAMODB_POOL';

/** The variable in which a test file keeps the engine it claimed (test/helpers/worker-engine.ts). */
const FILE_ENGINE = 'FLEETSTREAM_TEST_DYNAMODB_ENDPOINT';

/**
 * An engine whose stream log holds more records than this is restarted at a file's claim
 * (FLEETSTREAM_TEST_STREAM_LOG_LIMIT moves it). A fresh JVM costs about 4 CPU-s, its start and the
 * JIT's first minutes. Ten e2e files in a row on one engine took 215 CPU-s with no restart, 156 with
 * a limit of 4,000 records (1 restart), 141 with 1,000 (3) and 150 with 300 (6).
 */
const STREAM_LOG_LIMIT = Number(process.env.FLEETSTREAM_TEST_STREAM_LOG_LIMIT ?? 1000);

/**
 * The JVM options of the tests' DynamoDB Locals (the pool's, and those of the `npm start`s a test
 * spawns): the JIT's first tier only and the serial collector. The second tier's compiling and G1's
 * threads cost a JVM about 26 CPU-s that a test run's engine never won back: one engine serving 6
 * e2e files one after another took 124 CPU-s in all with the defaults and 98 with these, and serving
 * 12 files 191 and 165 (docs/testing.md).
 */
export const TEST_JVM_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

/** Starts one DynamoDB Local per worker (globalSetup, once per run), and the server that hands them out. */
export const startDynamoDbPool = async (globalConfig: Config.GlobalConfig) => {
  // DynamoDB Local's JVM reads its options from the environment it inherits.
  process.env.JAVA_TOOL_OPTIONS ??= TEST_JVM_OPTIONS;
  pool.__dynamoDbPool ??= (async () => {
    const engines = await Promise.all(Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, () => startDynamoDbLocal()));
    const started: Pool = { engines, server: createServer(), restarts: 0 };
    started.server.on('request', (request, response) => {
      claim(started, Number(new URL(request.url ?? '/', 'http://pool').searchParams.get('worker') ?? '1')).then(
        (endpoint) => response.end(JSON.stringify({ endpoint })),
        (error: Error) => response.writeHead(500).end(JSON.stringify({ message: error.message })),
      );
    });
    await new Promise<void>((listening) => started.server.listen(0, '127.0.0.1', listening));
    return started;
  })();
  const { server } = await pool.__dynamoDbPool;
  // Workers inherit the environment.
  process.env[POOL_URL] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** Stops the engines and the server (globalTeardown; every project's may call it, all tests having ended). */
export const stopDynamoDbPool = async () => {
  const started = await pool.__dynamoDbPool;
  pool.__dynamoDbPool = undefined;
  if (!started) return;
  started.server.close();
  await Promise.all(started.engines.map((engine) => engine.stop()));
  if (started.restarts) console.log(`DynamoDB Local pool: ${started.restarts} engine restarts (stream logs past ${STREAM_LOG_LIMIT} records)`);
};

/** A worker's engine for the file that starts there now: restarted first if its stream log has grown too long. */
const claim = async (started: Pool, worker: number): Promise<string> => {
  const slot = (worker - 1) % started.engines.length;
  const engine = started.engines[slot];
  const length = await streamLogLength(engine.endpoint);
  if (length <= STREAM_LOG_LIMIT) return engine.endpoint;
  await engine.stop();
  started.engines[slot] = await startDynamoDbLocal();
  started.restarts++;
  return started.engines[slot].endpoint;
};

/**
 * How many stream records the engine has written (and keeps): its sequence numbers count every
 * table's records, so a new stream's first shard starts at the count.
 */
const streamLogLength = async (endpoint: string): Promise<number> => {
  const config = { endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamodb = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const TableName = `pool-probe-${Date.now()}`;
  try {
    const { TableDescription } = await dynamodb.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'KEYS_ONLY' },
      }),
    );
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: TableDescription?.LatestStreamArn }));
    return Number(StreamDescription?.Shards?.[0]?.SequenceNumberRange?.StartingSequenceNumber ?? 0);
  } finally {
    await dynamodb.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
    dynamodb.destroy();
    streams.destroy();
  }
};

/** Claims this worker's engine for the test file that starts (a setup file, test/helpers/worker-engine.ts). */
export const claimWorkerDynamoDbEngine = async (): Promise<void> => {
  const url = process.env[POOL_URL];
  if (!url) return;
  const answer = await fetch(`${url}/engine?worker=${process.env.JEST_WORKER_ID ?? '1'}`);
  const body = (await answer.json()) as { endpoint?: string; message?: string };
  if (!answer.ok || !body.endpoint) throw new Error(`The DynamoDB Local pool gave no engine: ${body.message}`);
  process.env[FILE_ENGINE] = body.endpoint;
};

/** This file's DynamoDB Local, in a test file; undefined when no project's setup started the pool. */
export const workerDynamoDbEndpoint = (): string | undefined => process.env[FILE_ENGINE];
