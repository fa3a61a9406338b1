import type { Config } from '@jest/types';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/dynamodb-local';

/**
 * The run's DynamoDB Locals: one per jest worker, shared by the projects that need one (contract,
 * e2e, e2e-cloud). A worker runs one test file at a time, so each engine serves one file at a time:
 * files never wait on each other's locks inside one engine (DynamoDB Local serializes its writes;
 * three files on one engine made it the run's bottleneck and sometimes answered "too long waiting
 * for a lock"). Each file still makes tables of its own (test/helpers/e2e-tables.ts).
 *
 * The first project's global setup starts them; each test file finds its worker's. An engine serves
 * every file of its worker: its stream log, which grows with each file's writes, is indexed
 * (local/dynamodb-stream-log.ts), so that a file's requests cost no more on an engine that has
 * served many (before the index, the pool restarted an engine whose log passed 1,000 records).
 */
const pool = globalThis as { __dynamoDbPool?: Promise<DynamoDbLocal[]> };

/** The variable through which the test files find the engines (workers inherit jest's environment). */
const ENGINES = 'FLEETSTREAM_TEST_DYNAMODB_ENGINES';

/**
 * The JVM options of the tests' DynamoDB Locals (the pool's, and those of the `npm start`s a test
 * spawns): the JIT's first tier only and the serial collector. The second tier's compiling and G1's
 * threads cost a JVM about 26 CPU-s that a test run's engine never won back: one engine serving 6
 * e2e files one after another took 124 CPU-s in all with the defaults and 98 with these, and serving
 * 12 files 191 and 165 (docs/testing.md).
 */
export const TEST_JVM_OPTIONS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

/** Starts one DynamoDB Local per worker (globalSetup, once per run). */
export const startDynamoDbPool = async (globalConfig: Config.GlobalConfig) => {
  // DynamoDB Local's JVM reads its options from the environment it inherits.
  process.env.JAVA_TOOL_OPTIONS ??= TEST_JVM_OPTIONS;
  pool.__dynamoDbPool ??= Promise.all(Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, () => startDynamoDbLocal()));
  process.env[ENGINES] = (await pool.__dynamoDbPool).map((engine) => engine.endpoint).join(' ');
};

/** Stops the engines (globalTeardown; every project's may call it, all tests having ended). */
export const stopDynamoDbPool = async () => {
  const engines = await pool.__dynamoDbPool;
  pool.__dynamoDbPool = undefined;
  await Promise.all((engines ?? []).map((engine) => engine.stop()));
};

/** This worker's DynamoDB Local, in a test file; undefined when no project's setup started the pool. */
export const workerDynamoDbEndpoint = (): string | undefined => {
  const engines = process.env[ENGINES]?.split(' ');
  return engines?.[(Number(process.env.JEST_WORKER_ID ?? '1') - 1) % engines.length];
};
