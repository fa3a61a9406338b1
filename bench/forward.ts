/**
 * 50,000 data points through the local forward queue (fauxqs, the event-source poller, the
 * forwarder) to a local receiver that answers 200 at once, packed as the producers pack them
 * (domain/forward-pack.ts packForward): delivered points/s, side by side in the same run with a
 * plain relay of the same queue filled with the same messages (receive up to 10, POST their bodies
 * unchanged to the same receiver with the same HTTP client, delete; as many at once as the
 * forwarder's invocations) (target ≥ 0.8), HTTP requests per 1,000 points (target ≤ 10), and the
 * receiver's own capacity measured with autocannon. Both sides are timed by events: each ends
 * with its last DeleteMessageBatch. A third row invokes the forwarder directly with the batches
 * the poller formed, no queue at all: the forwarder's own work (read, build, sign, POST), which
 * bounds the ratio whatever the poller does.
 *
 * The forwarder runs as it is deployed: its bundle, built with the stack's esbuild options, in
 * Lambda containers of its own (worker threads, local/cloud-assembly/lambda-host.ts), one per
 * batch in flight, as Lambda runs one invocation per container. IN_PROCESS=1 runs the TypeScript
 * handler in the benchmark's own event loop instead, beside the SQS engine and the poller.
 *
 *   npm run bench:forward          (MESSAGES=50000 CONSUMERS=5 by default; IN_PROCESS=1 optional)
 *
 * The receiver runs in a process of its own (this file with --receiver), so that neither
 * autocannon nor the forwarder shares its event loop. It keeps the forwarder's bodies and reads
 * them when asked for its counts, after the timed runs: its own bookkeeping is not the forwarder's
 * time (autocannon's bodies it reads and drops).
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import autocannon from 'autocannon';
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { HANDLER_ESBUILD_OPTIONS, HANDLER_MEMORY_MB, handlerEntry } from '../lib/constructs/handler-function';
import { LocalLambda } from '../local/cloud-assembly/lambda-host';
import { ensureTable, LOCAL_AWS_ENV, startDynamoDbLocal } from '../local/dynamodb-local';
import { startLocalSqs } from '../local/queues-engine';
import { lambdaContext } from '../local/lambda-invoke';
import { startSqsPoller, type SqsHandler } from '../local/sqs-poller';
import { printTable, timeMs } from './stats';

const MESSAGES = Number(process.env.MESSAGES ?? 50_000);
// Lambda starts an SQS event source with five batches at once (five concurrent invocations) and
// scales up from there while messages remain; the local runtime runs two.
const CONSUMERS = Number(process.env.CONSUMERS ?? 5);
const AUTOCANNON_SECONDS = Number(process.env.AUTOCANNON_SECONDS ?? 5);
const IN_PROCESS = process.env.IN_PROCESS === '1';
// Sent by autocannon: the receiver reads the body and drops it.
const DROP_HEADER = 'x-bench-drop';
// Sent by the plain relay with the number of messages in the POST: the receiver reads the body, counts them and drops it.
const RELAY_HEADER = 'x-bench-relay';

interface Stats {
  requests: number;
  entries: number;
  distinct: number;
  /** Messages the plain relay POSTed. */
  relayed: number;
}

/**
 * The receiver: keeps each POST's body and answers 200 as soon as it is in; GET /stats reads the
 * bodies kept so far and reports POSTs, entries and distinct entries; DELETE /stats resets.
 */
const runReceiver = () => {
  let bodies: Buffer[] = [];
  let stats: Stats = { requests: 0, entries: 0, distinct: 0, relayed: 0 };
  let seen = new Set<string>();
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      for (const body of bodies) {
        const { result } = JSON.parse(body.toString()) as { result: Array<{ device_id: string; timestamp_device: string; tag: string }> };
        stats.requests += 1;
        stats.entries += result.length;
        for (const e of result) seen.add(`${e.device_id}|${e.tag}|${e.timestamp_device}`);
      }
      bodies = [];
      stats.distinct = seen.size;
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    }
    if (req.method === 'DELETE') {
      bodies = [];
      stats = { requests: 0, entries: 0, distinct: 0, relayed: 0 };
      seen = new Set();
      return void res.writeHead(204).end();
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200).end();
      if (req.headers[RELAY_HEADER]) stats.relayed += Number(req.headers[RELAY_HEADER]);
      else if (!req.headers[DROP_HEADER]) bodies.push(Buffer.concat(chunks));
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`));
};

const startReceiverProcess = async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--receiver'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => {
    createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('PORT ') && resolve(Number(line.slice(5))));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    stats: async () => (await (await fetch(`${url}/stats`)).json()) as Stats,
    reset: () => fetch(`${url}/stats`, { method: 'DELETE' }),
    stop: () => child.kill('SIGTERM'),
  };
};

/** A first delivery of `body` as an SQS event record (for invoking the handler without a queue). */
const fakeRecord = (body: string, queueArn: string): SQSRecord => ({
  messageId: randomUUID(),
  receiptHandle: randomUUID(),
  body,
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: String(Date.now()),
    SenderId: '000000000000',
    ApproximateFirstReceiveTimestamp: String(Date.now()),
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: queueArn,
  awsRegion: 'us-east-1',
});

/** The machine's busy and total CPU time so far, in ticks (Linux's /proc/stat; undefined elsewhere). */
const machineTicks = () => {
  if (!existsSync('/proc/stat')) return undefined;
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = fields[3] + fields[4]; // idle and iowait
  const total = fields.reduce((sum, n) => sum + n, 0);
  return { busy: total - idle, total };
};

/** How many cores the whole machine kept busy since `from`, on average (every process: the receiver and DynamoDB Local too). */
const coresBusy = (from: ReturnType<typeof machineTicks>) => {
  const to = machineTicks();
  return from && to ? ((to.busy - from.busy) / (to.total - from.total)) * availableParallelism() : NaN;
};

/** User and system CPU of a `process.cpuUsage` difference, in ms. */
const cpuMs = ({ user, system }: NodeJS.CpuUsage) => (user + system) / 1000;

const place = (i: number) => ({ workspace_id: '', fleet_id: 'flt-bench00000000000000', device_id: `dev-bench${String(i % 100).padStart(15, '0')}` });

/**
 * The forwarder as deployed: its bundle (the stack's esbuild options) in CONSUMERS Lambda
 * containers, each running one invocation at a time; the handler it returns invokes an idle one.
 */
const forwarderContainers = async (env: Record<string, string>, timeoutSeconds: number, stops: Array<() => unknown>): Promise<SqsHandler> => {
  const codeDir = mkdtempSync(join(tmpdir(), 'bench-forwarder-'));
  stops.push(() => rmSync(codeDir, { recursive: true, force: true }));
  await build({ ...HANDLER_ESBUILD_OPTIONS, entryPoints: [handlerEntry('forwarder')], outfile: join(codeDir, 'index.mjs'), logLevel: 'error' });
  const idle = Array.from(
    { length: CONSUMERS },
    () => new LocalLambda({ name: 'forwarder', codeDir, handler: 'index.handler', memoryMb: HANDLER_MEMORY_MB, timeoutSeconds, env }),
  );
  for (const container of idle) stops.push(() => container.stop());
  await Promise.all(idle.map((container) => container.start()));
  return async (event) => {
    const container = idle.pop();
    if (!container) throw new Error(`more than ${CONSUMERS} invocations at once`);
    try {
      return (await container.invoke(event)) as SQSBatchResponse;
    } finally {
      idle.push(container);
    }
  };
};

const main = async () => {
  const receiver = await startReceiverProcess();
  const stops: Array<() => unknown> = [receiver.stop];
  try {
    console.log('starting DynamoDB Local and fauxqs (in memory)…');
    const dynamo = await startDynamoDbLocal();
    stops.push(dynamo.stop);
    const sqs = await startLocalSqs();
    stops.push(sqs.stop);
    const forward = sqs.queues.forward;
    // The handlers find the engines as in the cloud: standard SDK variables, set before they load.
    Object.assign(process.env, LOCAL_AWS_ENV, {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      REGISTRY_TABLE: 'bench-registry',
      FORWARD_QUEUE_URL: forward.url,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      POWERTOOLS_LOG_LEVEL: 'WARN',
    });
    await ensureTable(new DynamoDBClient({}), 'bench-registry');
    const { createAccount } = await import('../lambdas/domain/tenancy/accounts');
    const { createIntegration } = await import('../lambdas/domain/webhooks/integrations');
    const { dataMessage } = await import('../lambdas/domain/webhooks/events');
    const { packForward, renderEntry } = await import('../lambdas/domain/webhooks/forward-pack');
    const { ENTRY_OVERHEAD, MAX_POST_BYTES, webhookBody } = await import('../lambdas/domain/webhooks/forwarding');
    const { sendEncodedMessages } = await import('../lambdas/stores/queue-store');
    const { registryDb } = await import('../lambdas/shared/clients');
    const { webhookPoster } = await import('../lambdas/shared/webhook-client');
    const handler = IN_PROCESS
      ? ((await import('../lambdas/handlers/forwarder/handler')) as { handler: SqsHandler }).handler
      : await forwarderContainers(
          Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
          forward.definition.consumerTimeoutSeconds,
          stops,
        );

    const account = await createAccount(registryDb(), { name: 'bench' });
    const caller = { accountId: account.account_id, workspaceId: account.workspace_id, keyId: account.api_key_id };
    await createIntegration(registryDb(), caller, account.workspace_id, {
      name: 'bench',
      url: `${receiver.url}/hook`,
      data: true,
      events: true,
      tags: [],
      enabled: true,
    });

    const messages = Array.from({ length: MESSAGES }, (_, i) =>
      dataMessage(
        {
          ...place(i),
          workspace_id: account.workspace_id,
          tag: 'bench',
          timestamp_device: new Date(1_700_000_000_000 + i).toISOString(),
          timestamp_in: new Date().toISOString(),
          payload: { n: i, temp: 21.5 },
        },
        'bench-device',
      ),
    );

    // The receiver's own capacity, for POSTs as large as the forwarder sends (MAX_POST_BYTES), the
    // bodies read and dropped (the header tells it not to keep them).
    const perPost = Math.floor(MAX_POST_BYTES / (renderEntry(messages[0]).json.length + ENTRY_OVERHEAD));
    const sample = webhookBody(
      randomUUID(),
      messages.slice(0, perPost).map((m) => renderEntry(m).json),
    );
    console.log(`autocannon: ${AUTOCANNON_SECONDS} s of POSTs of ${perPost} entries (${(sample.length / 1024).toFixed(0)} KB) to the receiver…`);
    const capacity = await autocannon({
      url: `${receiver.url}/hook`,
      method: 'POST',
      body: sample,
      headers: { 'content-type': 'application/json', [DROP_HEADER]: '1' },
      connections: 10,
      duration: AUTOCANNON_SECONDS,
    });
    await receiver.reset();

    const packs = packForward(messages);
    const sqsClient = new SQSClient({ useQueueUrlAsEndpoint: false });
    // Both sides warm, as in a steady stream: each forwarder container has run a batch (its
    // modules, clients and connections to the table and the receiver are set up), and the relay's
    // client has sent, received and deleted a message.
    const context = () => lambdaContext({ functionName: 'forwarder', timeoutMs: forward.definition.consumerTimeoutSeconds * 1000 });
    await Promise.all(Array.from({ length: CONSUMERS }, () => handler({ Records: [fakeRecord(packs[0], forward.arn)] }, context())));
    await sendEncodedMessages(forward.url, [packs[0]]);
    for (let warm = 0; warm < 1; ) {
      const { Messages = [] } = await sqsClient.send(new ReceiveMessageCommand({ QueueUrl: forward.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      for (const m of Messages)
        await sqsClient.send(new DeleteMessageBatchCommand({ QueueUrl: forward.url, Entries: [{ Id: '0', ReceiptHandle: m.ReceiptHandle! }] }));
      warm += Messages.length;
    }
    await receiver.reset();
    console.log(`filling the forward queue with ${MESSAGES} data points in ${packs.length} packed messages…`);
    const fillMs = await timeMs(() => sendEncodedMessages(forward.url, packs, 16));

    // First the yardstick: a plain relay of the same queue. CONSUMERS workers (the forwarder's
    // invocations in flight) each receive up to 10 messages, POST their bodies unchanged, one POST a
    // batch, to the same receiver with the same HTTP client, and delete them once it answered 2xx;
    // nothing else (no integrations, no signing, no status). The relay ends with its last delete.
    const relayPost = webhookPoster({ timeoutMs: 30_000, allowPrivate: true });
    let relayed = 0;
    let relayPosts = 0;
    let relayMs = 0;
    const relayStart = performance.now();
    const relayCpu = process.cpuUsage();
    const relayTicks = machineTicks();
    let relayCpuMs = 0;
    let relayCores = 0;
    const relayWorker = async () => {
      while (relayed < packs.length) {
        const { Messages = [] } = await sqsClient.send(new ReceiveMessageCommand({ QueueUrl: forward.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
        if (!Messages.length) continue;
        const outcome = await relayPost({
          url: `${receiver.url}/hook`,
          body: Buffer.from(Messages.map((m) => m.Body!).join('\n')),
          headers: { 'content-type': 'text/plain', [RELAY_HEADER]: String(Messages.length) },
        });
        if (!outcome.ok) throw new Error(`the relay's POST failed: ${outcome.error}`);
        relayPosts += 1;
        await sqsClient.send(
          new DeleteMessageBatchCommand({ QueueUrl: forward.url, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }),
        );
        relayed += Messages.length;
        if (relayed === packs.length) {
          relayMs = performance.now() - relayStart;
          relayCpuMs = cpuMs(process.cpuUsage(relayCpu));
          relayCores = coresBusy(relayTicks);
        }
      }
    };
    await Promise.all(Array.from({ length: CONSUMERS }, relayWorker));
    sqsClient.destroy();
    const relayStats = await receiver.stats();
    if (relayStats.relayed !== packs.length) throw new Error(`the receiver got ${relayStats.relayed} of the relay's ${packs.length} messages`);
    await receiver.reset();
    await sendEncodedMessages(forward.url, packs, 16);
    console.log(
      `forwarding with ${CONSUMERS} poller(s) ${IN_PROCESS ? 'calling the handler in this process' : 'each invoking a forwarder container'}, batch size ${forward.definition.batchSize}, window ${forward.definition.maxBatchingWindowSeconds} s…`,
    );
    // The forwarder ends, as the relay does, when its poller has deleted the last message (each
    // deleted only after its POSTs succeeded): timed by that event, not by polling the receiver.
    let deletedByPoller = 0;
    const batchSizes: number[] = [];
    let done!: () => void;
    const allDeleted = new Promise<void>((resolve) => (done = resolve));
    const forwardStart = performance.now();
    const forwardCpu = process.cpuUsage();
    const forwardTicks = machineTicks();
    const poller = startSqsPoller({
      queueUrl: forward.url,
      queueArn: forward.arn,
      batchSize: forward.definition.batchSize,
      maxBatchingWindowMs: forward.definition.maxBatchingWindowSeconds * 1000,
      timeoutMs: forward.definition.consumerTimeoutSeconds * 1000,
      functionName: 'forwarder',
      handler,
      concurrency: CONSUMERS,
      onSettled: ({ records, deleted }) => {
        batchSizes.push(records);
        deletedByPoller += deleted;
        if (deletedByPoller >= packs.length) done();
      },
    });
    await Promise.race([
      allDeleted,
      new Promise((_, reject) => setTimeout(() => reject(new Error('the forwarder did not finish within 10 minutes')), 600_000).unref()),
    ]);
    const forwardMs = performance.now() - forwardStart;
    const forwardCpuMs = cpuMs(process.cpuUsage(forwardCpu));
    const forwardCores = coresBusy(forwardTicks);
    await poller.stop();
    const stats = await receiver.stats();
    if (stats.distinct < MESSAGES) throw new Error(`the poller deleted every message, but the receiver has only ${stats.distinct} of ${MESSAGES} entries`);

    // What the forwarder's own work costs, without a queue: the handler invoked directly with the
    // batches the poller formed (the same packs, as many invocations at once), so that the share of
    // the forwarder's time that is not SQS can be read beside the relay.
    await receiver.reset();
    const batches: SQSRecord[][] = [];
    for (let at = 0, i = 0; i < batchSizes.length; at += batchSizes[i++]) {
      batches.push(packs.slice(at, at + batchSizes[i]).map((body) => fakeRecord(body, forward.arn)));
    }
    let nextBatch = 0;
    const handlerMs = await timeMs(() =>
      Promise.all(
        Array.from({ length: CONSUMERS }, async () => {
          while (nextBatch < batches.length) {
            const response = await handler({ Records: batches[nextBatch++] }, context());
            if (response?.batchItemFailures.length) throw new Error('the handler failed some messages');
          }
        }),
      ),
    );
    if ((await receiver.stats()).distinct < MESSAGES) throw new Error('the handler alone did not deliver every entry');

    const capacityRps = capacity.requests.average;
    const forwardRps = (stats.requests / forwardMs) * 1000;
    const deliveredPerSecond = (MESSAGES / forwardMs) * 1000;
    printTable(`${MESSAGES} messages through the local forward queue`, [
      { what: 'receiver capacity (autocannon, 10 connections)', 'requests/s': capacityRps, 'entries/s': capacityRps * perPost },
      { what: 'forwarder → receiver', 'requests/s': forwardRps, 'entries/s': deliveredPerSecond },
      { what: 'plain relay (receive, POST the bodies, delete)', 'requests/s': (relayPosts / relayMs) * 1000, 'entries/s': (MESSAGES / relayMs) * 1000 },
      { what: 'forwarder handler alone (same batches, no queue)', 'requests/s': 0, 'entries/s': (MESSAGES / handlerMs) * 1000 },
    ]);
    console.log(`ratio delivered points/s / plain relay points/s = ${(relayMs / forwardMs).toFixed(2)} (target ≥ 0.8)`);
    // On a machine with few cores both sides are bound by CPU: the relay's is the SQS engine's, its
    // client's and its POSTs'; the forwarder's adds the containers' (read, build, sign) to theirs.
    console.log(
      `CPU of this process (all threads: SQS engine, poller${IN_PROCESS ? ', handler' : ', containers'}): relay ${(relayCpuMs / 1000).toFixed(2)} s, forwarder ${(forwardCpuMs / 1000).toFixed(2)} s`,
    );
    console.log(
      `cores the machine kept busy (all processes, of ${availableParallelism()}): relay ${relayCores.toFixed(2)}, forwarder ${forwardCores.toFixed(2)}`,
    );
    console.log(
      `times: relay ${(relayMs / 1000).toFixed(2)} s in ${relayPosts} POSTs, forwarder ${(forwardMs / 1000).toFixed(2)} s, handler alone ${(handlerMs / 1000).toFixed(2)} s in ${batches.length} invocations (${batchSizes.join(', ')} messages); batching window ${forward.definition.maxBatchingWindowSeconds} s`,
    );
    console.log(`\nfill: ${MESSAGES} messages enqueued in ${(fillMs / 1000).toFixed(1)} s; forwarding took ${(forwardMs / 1000).toFixed(1)} s`);
    console.log(
      `delivered messages/s: ${deliveredPerSecond.toFixed(0)} (${stats.distinct} distinct, ${stats.entries} entries received: ${stats.entries - stats.distinct} duplicates)`,
    );
    console.log(`HTTP requests per 1,000 messages: ${((stats.requests / MESSAGES) * 1000).toFixed(2)} (target ≤ 10)`);
    console.log(`ratio forwarder requests/s / receiver capacity = ${(forwardRps / capacityRps).toFixed(4)} (the share of the receiver the forwarder used)`);
    console.log(`ratio delivered messages/s / receiver capacity in entries/s = ${(deliveredPerSecond / (capacityRps * perPost)).toFixed(3)}`);
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
};

if (process.argv.includes('--receiver')) runReceiver();
else await main();
