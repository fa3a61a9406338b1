/**
 * A burst on `npm start` as a new user runs it: 40,000 data points without device times, sent as
 * 400 HTTPS batches of 100 by 12 devices at once, to the default runtime (DynamoDB Local on disk,
 * in a fresh data folder) and then to `--in-memory`, one after the other in one run. For each:
 * points/s from the first request to the moment the ingest queue is drained, every point read
 * back, and the ingest invocations that timed out (the runtime's log). Target: on disk at least
 * half the in-memory rate, and no invocation timing out.
 *
 *   npm run bench:burst                  POINTS=40000 CLIENTS=12 ROUNDS=1 DEVICE_TIMES=0
 *
 * DEVICE_TIMES=1 gives every point its own `timestamp_device` (a distinct millisecond), the way to
 * measure code from before cloud stamps, which kept one point per device, tag and millisecond.
 *
 * Each runtime is its own `fleetstream start` process (what `npm start` runs, without rebuilding
 * the console), started fresh for its round, so that one's data never slows the other.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SignJWT } from 'jose';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { LOCAL_AWS_ENV } from '../local/dynamodb-local';
import { fleetstreamArgs } from '../test/helpers/cli';
import { printTable } from './stats';

const POINTS = Number(process.env.POINTS ?? 40_000);
const CLIENTS = Number(process.env.CLIENTS ?? 12);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const DEVICE_TIMES = process.env.DEVICE_TIMES === '1';
const PER_REQUEST = 100;
const T0 = Date.UTC(2026, 0, 1);

interface Ready {
  base_url: string;
  api_key: string;
  workspace_id: string;
  sqs_endpoint: string;
  queue_urls: Record<string, string>;
}

interface Started {
  ready: Ready;
  child: ChildProcess;
  /** Lines of the runtime's log that say an invocation timed out. */
  timeouts: string[];
}

/** Starts `npm start`'s entry in a process of its own; resolves once it prints READY. */
const startRuntime = (mode: 'disk' | 'memory', dataDir: string): Promise<Started> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, fleetstreamArgs('start', mode === 'memory' ? ['--in-memory'] : []), {
      env: {
        ...process.env,
        FLEETSTREAM_DATA_DIR: dataDir,
        PORT: '0',
        MQTT_PORT: '0',
        MQTTS_PORT: '0',
        COGNITO_PORT: '0',
        SES_PORT: '0',
        POWERTOOLS_LOG_LEVEL: 'WARN',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const timeouts: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (line) => {
      if (/timed out/i.test(line)) timeouts.push(line);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('READY ')) resolve({ ready: JSON.parse(line.slice(6)) as Ready, child, timeouts });
    });
    child.once('exit', (code) => reject(new Error(`the ${mode} runtime exited (${code}) before READY`)));
  });

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });

const call = async (url: string, init: { method?: string; headers: Record<string, string>; body?: unknown }) => {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
};

/** The devices of the burst, each with a device token. */
const devicesOf = async ({ base_url, api_key, workspace_id }: Ready) => {
  const headers = { 'x-api-key': api_key };
  return Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const { device } = await call(`${base_url}/workspaces/${workspace_id}/devices`, { method: 'POST', headers, body: { name: `burst-${i}` } });
      const { credentials } = await call(`${base_url}/workspaces/${workspace_id}/devices/${device.id}/identities`, { method: 'POST', headers });
      const token = await new SignJWT({ sub: credentials.devinfo.device_id, key: credentials.devinfo.key_id })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
        .sign(Buffer.from(credentials.prvkey, 'base64'));
      return { id: device.id as string, token };
    }),
  );
};

/** Messages in the ingest queue, visible or in flight. */
const ingestDepth = async (sqs: SQSClient, url: string) => {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  return Number(Attributes.ApproximateNumberOfMessages ?? 0) + Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
};

/** Points the storage query holds for the devices (read once, at the end). */
const storedPoints = async ({ base_url, api_key, workspace_id }: Ready, devices: Array<{ id: string }>) => {
  const query = devices.map((d) => `device=${d.id}`).join('&');
  const { result } = await call(`${base_url}/timeseries/${workspace_id}/data?${query}&size=${POINTS + 1}`, { headers: { 'x-api-key': api_key } });
  return (result as unknown[]).length;
};

const burst = async (mode: 'disk' | 'memory') => {
  const dataDir = mkdtempSync(join(tmpdir(), `fleetstream-burst-${mode}-`));
  process.stderr.write(`starting npm start (${mode === 'disk' ? `DynamoDB Local on disk, in ${dataDir}` : 'in memory'})…\n`);
  const { ready, child, timeouts } = await startRuntime(mode, dataDir);
  const sqs = new SQSClient({
    endpoint: ready.sqs_endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
  });
  try {
    const devices = await devicesOf(ready);
    const requests = Math.ceil(POINTS / PER_REQUEST);
    let next = 0;
    const started = performance.now();
    await Promise.all(
      devices.map(async (device) => {
        while (next < requests) {
          const n = next++;
          const points = Array.from({ length: PER_REQUEST }, (_, i) => ({
            tag: 'level',
            payload: { n, i, value: (n * 7 + i) % 100 },
            ...(DEVICE_TIMES ? { timestamp_device: new Date(T0 + n * PER_REQUEST + i).toISOString() } : {}),
          }));
          await call(`${ready.base_url}/device/data`, { method: 'POST', headers: { authorization: `Bearer ${device.token}` }, body: points });
        }
      }),
    );
    const sentMs = performance.now() - started;
    for (let quiet = 0; quiet < 3; ) {
      quiet = (await ingestDepth(sqs, ready.queue_urls.ingest)) === 0 ? quiet + 1 : 0;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const storedMs = performance.now() - started;
    const stored = await storedPoints(ready, devices);
    if (stored !== requests * PER_REQUEST) throw new Error(`${mode}: ${stored} of ${requests * PER_REQUEST} points stored`);
    return { mode, sentMs, storedMs, stored, timeouts: timeouts.length };
  } finally {
    sqs.destroy();
    await stop(child);
    rmSync(dataDir, { recursive: true, force: true });
  }
};

const main = async () => {
  const rows: Array<Record<string, string | number>> = [];
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const disk = await burst('disk');
    const memory = await burst('memory');
    const rate = (r: typeof disk) => (r.stored / r.storedMs) * 1000;
    ratios.push(rate(disk) / rate(memory));
    for (const r of [disk, memory]) {
      rows.push({
        round,
        store: r.mode === 'disk' ? 'DynamoDB Local on disk (npm start)' : 'in memory (--in-memory)',
        'sent s': r.sentMs / 1000,
        'stored s': r.storedMs / 1000,
        'points/s': rate(r),
        'timed out': r.timeouts,
      });
    }
  }
  printTable(
    `${POINTS} points ${DEVICE_TIMES ? 'with device times' : 'without device times'} as ${Math.ceil(POINTS / PER_REQUEST)} HTTPS batches of ${PER_REQUEST} from ${CLIENTS} devices at once, until the ingest queue is drained`,
    rows,
  );
  for (const ratio of ratios) console.log(`ratio on disk points/s / in memory points/s = ${ratio.toFixed(2)} (target ≥ 0.5; no invocation timing out)`);
};

await main();
