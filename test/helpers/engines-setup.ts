/**
 * Jest globalSetup of the contract project: one fauxqs (SQS) for the run, and a DynamoDB Local per
 * worker (test/helpers/dynamodb-pool.ts), unless another project's setup started them.
 * Test files each make their own table (`freshTable`) and queues (`freshQueue`), so they never see
 * each other's items or messages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Config } from '@jest/types';
import { LOCAL_AWS_ENV } from '../../local/dynamodb-local';
import { freePort, waitFor } from '../../local/ports';
import { startDynamoDbPool } from './dynamodb-pool';

/**
 * fauxqs in a process of its own: it is ESM-only and jest loads this file as CommonJS (the local
 * runtime, plain ESM, runs it in-process instead).
 */
const startSqs = async () => {
  const port = await freePort();
  const cli = join(process.cwd(), 'node_modules', 'fauxqs', 'dist', 'cli.js'); // its package exports no other path
  const child: ChildProcess = spawn(process.execPath, [cli], { env: { ...process.env, FAUXQS_PORT: String(port) }, stdio: 'ignore' });
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (!(await fetch(`${endpoint}/health`)).ok) throw new Error('not healthy');
    },
    'fauxqs',
    30_000,
  );
  return { endpoint, stop: async () => void child.kill('SIGTERM') };
};

export default async (globalConfig: Config.GlobalConfig) => {
  const [sqs] = await Promise.all([startSqs(), startDynamoDbPool(globalConfig)]);
  (globalThis as { __engines?: unknown }).__engines = { sqs };
  // Workers inherit the environment: the SDK finds fauxqs through the standard variable, and each
  // file its worker's DynamoDB Local through test/helpers/e2e-tables.ts.
  Object.assign(process.env, LOCAL_AWS_ENV, { AWS_ENDPOINT_URL_SQS: sqs.endpoint });
};
