import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_JVM_OPTIONS, workerDynamoDbEndpoint } from './dynamodb-pool';
import { fleetstreamArgs } from './cli';
import { cloudAssemblyDir, iamReportFile } from './runtime-kind';

export interface ReadyInfo {
  base_url: string;
  storage_url: string;
  api_key: string;
  /** The SES emulator's page of sent mails. */
  mail_url?: string;
  account_id: string;
  workspace_id: string;
  /** The local SQS engine and its queues (DLQs as `<name>-dlq`). */
  sqs_endpoint: string;
  queue_urls: Record<string, string>;
}

export interface LocalStack extends ReadyInfo {
  process: ChildProcess;
  dataDir: string;
  /** Sends SIGINT (Ctrl-C) and resolves with the exit code. */
  stop: () => Promise<number | null>;
}

/**
 * Runs `fleetstream start` (`npm start`) as a child process, exactly as a user would, and
 * resolves with its `READY {json}` line. A runtime that has not said READY within `readyTimeoutMs`
 * (by default just under jest's 60 s test timeout; a `beforeAll` with a longer one passes its own)
 * is killed and the call fails with its output: a hook that timed out would otherwise leave it
 * running, and jest waiting for it.
 */
export const startLocalStack = async (
  env: Record<string, string> = {},
  args: string[] = ['--in-memory'],
  { readyTimeoutMs = 55_000 } = {},
): Promise<LocalStack> => {
  const dataDir = env.FLEETSTREAM_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'fleetstream-'));
  // The e2e-cloud project runs the synthesized assembly instead of the sources (test/helpers/runtime.ts).
  const assembly = cloudAssemblyDir();
  const child = spawn(process.execPath, fleetstreamArgs('start', [...args, ...(assembly ? ['--cloud-assembly', assembly] : [])]), {
    env: {
      ...process.env,
      PORT: '0',
      MQTT_PORT: '0',
      MQTTS_PORT: '0',
      MQTT_WS_PORT: '0',
      COGNITO_PORT: '0',
      SES_PORT: '0',
      FLEETSTREAM_DATA_DIR: dataDir,
      ...(assembly && process.env.FLEETSTREAM_IAM_REPORT_DIR ? { FLEETSTREAM_IAM_REPORT: iamReportFile()! } : {}),
      // Its DynamoDB Local lives for one test file: the JIT's second tier (C2) costs that JVM more
      // than it wins back in so short a life (half its CPU to READY), and G1's threads are not needed.
      JAVA_TOOL_OPTIONS: process.env.JAVA_TOOL_OPTIONS ?? TEST_JVM_OPTIONS,
      // In memory, in a test file of a project with the pool, it makes its tables on its worker's
      // DynamoDB Local (and deletes them at its stop) rather than starting a JVM of its own. A start
      // with a data folder still starts its own, and so do those of projects without the pool
      // (browser, fuzz).
      ...(args.includes('--in-memory') && workerDynamoDbEndpoint() ? { FLEETSTREAM_DYNAMODB_ENDPOINT: workerDynamoDbEndpoint()! } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let timer: NodeJS.Timeout | undefined;
  const ready = await new Promise<ReadyInfo>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(JSON.parse(line.slice(6)) as ReadyInfo);
    });
    void exited.then((code) => reject(new Error(`local runtime exited (${code}) before READY:\n${stderr}`)));
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`local runtime said no READY within ${readyTimeoutMs / 1000} s; it was stopped:\n${stderr}`));
    }, readyTimeoutMs);
  }).finally(() => clearTimeout(timer));
  return {
    ...ready,
    process: child,
    dataDir,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGINT');
      return exited;
    },
  };
};
