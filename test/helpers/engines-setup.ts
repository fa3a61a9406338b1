/**
 * Jest globalSetup of the contract project: one DynamoDB Local and one fauxqs (SQS) for the run.
 * Test files each make their own table (`freshTable`) and queues (`freshQueue`), so they never see
 * each other's items or messages.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { LOCAL_AWS_ENV, startDynamoDbLocal } from '../../local/dynamodb-local';
import { freePort, waitFor } from '../../local/ports';

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

export default async () => {
  const [dynamo, sqs] = await Promise.all([startDynamoDbLocal(), startSqs()]);
  (globalThis as { __engines?: unknown }).__engines = { dynamo, sqs };
  // Workers inherit the environment: the SDK finds the engines through the standard variables
  // (DynamoDB Local serves DynamoDB Streams on its own endpoint).
  Object.assign(process.env, LOCAL_AWS_ENV, {
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: dynamo.endpoint,
    AWS_ENDPOINT_URL_SQS: sqs.endpoint,
  });
};
