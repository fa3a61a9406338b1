/**
 * Ingest: 100,000 data points (10% duplicates) through the ingest handler's work into the local
 * time-series store (DynamoDB Local), side by side in one run with plain BatchWriteItem of the
 * same items. Targets: ingest points/s ≥ 0.5 × BatchWriteItem items/s for the store alone, ≥ 0.8
 * with forwarding on.
 *
 *   npm run bench:ingest                       POINTS=100000 DUPLICATES=0.1 POINTS_PER_MESSAGE=10
 *
 * The points arrive as the device API queues them (one message per publish request of
 * POINTS_PER_MESSAGE points) in SQS events of the ingest queue's batch size, two invocations at
 * a time as the local poller runs them, each in its own container (its own store, so neither
 * knows what the other stored). Plain BatchWriteItem writes the same items: every arrival of
 * every point, duplicates included, with as many calls in flight as the two containers' stores
 * together. Two ingest rows: the store alone (forwarding off), and the
 * whole handler, forwarding each point and its data event to fauxqs in the same process.
 */
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { ingestBatch, type IngestDeps, type QueuedIngest } from '../lambdas/domain/data/ingest';
import type { IngestDataMessage } from '../lambdas/schemas/device-api';
import { documentClient } from '../lambdas/shared/clients';
import { WRITE_CONCURRENCY } from '../lambdas/shared/env';
import { ensureTable } from '../local/dynamodb-local';
import { recordUsage } from '../lambdas/domain/limits/usage';
import { dynamoDbTimeseriesStore } from '../lambdas/stores/timeseries/dynamodb';
import { packForward } from '../lambdas/domain/webhooks/forward-pack';
import { sendEncodedMessages } from '../lambdas/stores/queue-store';
import { seriesPartition, shardOf } from '../lambdas/stores/timeseries/keys';
import { CloudStamper } from '../lambdas/shared/timestamps';
import { LOCAL_AWS_ENV, startDynamoDbLocal } from '../local/dynamodb-local';
import { QUEUES } from '../lambdas/queues';
import { startLocalSqs } from '../local/queues-engine';
import { printTable, timeMs } from './stats';

const POINTS = Number(process.env.POINTS ?? 100_000);
const DUPLICATES = Number(process.env.DUPLICATES ?? 0.1);
const POINTS_PER_MESSAGE = Number(process.env.POINTS_PER_MESSAGE ?? 10);
const DEVICES = 100;
const INVOCATIONS_IN_FLIGHT = Number(process.env.INVOCATIONS ?? 2); // the local poller's consumerConcurrency default
const SLICES = 10;
const PLAIN_IN_FLIGHT = INVOCATIONS_IN_FLIGHT * WRITE_CONCURRENCY;
const WORKSPACE = 'wks-bench00000000000000';
const BATCH_WRITE_LIMIT = 25;

interface Point {
  device_id: string;
  tag: string;
  timestamp_device: string;
  payload: unknown;
}

/** POINTS points of DEVICES devices; DUPLICATES of them repeat an earlier point's key with another payload. */
const makePoints = (): Point[] => {
  const unique = Math.round(POINTS * (1 - DUPLICATES));
  const points: Point[] = Array.from({ length: unique }, (_, i) => ({
    device_id: `dev-bench${String(i % DEVICES).padStart(15, '0')}`,
    tag: i % 3 ? 'temperature' : 'humidity',
    timestamp_device: new Date(Date.UTC(2026, 0, 1) + Math.floor(i / DEVICES) * 1000).toISOString(),
    payload: { value: (i * 7919) % 1000, unit: 'c', seq: i },
  }));
  for (let i = unique; i < POINTS; i++) {
    const original = points[Math.floor(Math.random() * unique)];
    points.push({ ...original, payload: { value: -1, duplicate: true } });
  }
  // Duplicates arrive anywhere in the stream, not last.
  for (let i = points.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [points[i], points[j]] = [points[j], points[i]];
  }
  return points;
};

/**
 * The points as the device API queues them: each device posts its points as they come, in requests
 * of POINTS_PER_MESSAGE points (its last one of the slice maybe fewer), one message per request, in
 * SQS batches. (Cutting the stream into runs of POINTS_PER_MESSAGE and splitting each run by device
 * made messages of about one point: neighbouring points are of different devices.)
 */
const toBatches = (workspaceId: string, points: Point[]): QueuedIngest[][] => {
  const messages: QueuedIngest[] = [];
  const pending = new Map<string, Point[]>();
  const post = (device_id: string, own: Point[]) => {
    const message: IngestDataMessage = {
      kind: 'data',
      workspace_id: workspaceId,
      fleet_id: 'flt-bench00000000000000',
      device_id,
      device_name: device_id,
      timestamp_in: new Date().toISOString(),
      points: own.map(({ tag, timestamp_device, payload }) => ({ tag, timestamp_device, payload })),
    };
    messages.push({ messageId: randomUUID(), body: JSON.stringify(message) });
  };
  for (const point of points) {
    const own = pending.get(point.device_id) ?? [];
    own.push(point);
    pending.set(point.device_id, own);
    if (own.length === POINTS_PER_MESSAGE) {
      post(point.device_id, own);
      pending.delete(point.device_id);
    }
  }
  for (const [device_id, own] of pending) post(device_id, own);
  const size = QUEUES.ingest.batchSize;
  return Array.from({ length: Math.ceil(messages.length / size) }, (_, i) => messages.slice(i * size, i * size + size));
};

/**
 * One item per arrival of a point, as a plain writer would store them (and as the store did
 * before packs: sharded by device, sorted by time, device, tag and arrival), for plain BatchWriteItem.
 */
const toItems = (batches: QueuedIngest[][]) =>
  batches.flat().flatMap(({ body }) => {
    const message = JSON.parse(body) as IngestDataMessage;
    return message.points.map(({ tag, timestamp_device, payload }, sequence) => {
      const { workspace_id, fleet_id, device_id, timestamp_in } = message;
      const key = { pk: seriesPartition(workspace_id, shardOf(device_id)), sk: `${timestamp_device}#${device_id}#${tag}#${timestamp_in}#${sequence}` };
      return { ...key, device_id, tag, fleet_id, timestamp_in, payload: JSON.stringify(payload) };
    });
  });

const main = async () => {
  console.log('starting DynamoDB Local and fauxqs (in memory)…');
  const dynamo = await startDynamoDbLocal();
  const sqs = await startLocalSqs();
  Object.assign(process.env, LOCAL_AWS_ENV, { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, AWS_ENDPOINT_URL_SQS: sqs.endpoint });
  const client = new DynamoDBClient({});
  const doc = documentClient(client);
  const freshTable = async () => {
    const table = `bench-${randomUUID()}`;
    await ensureTable(client, table);
    return table;
  };
  // Where the ingest handler writes its usage counts (the registry), as deployed.
  const registry = await freshTable();
  /** Points the store's query returns from `table`: one per series key. */
  const readBack = async (table: string) => {
    let count = 0;
    const store = dynamoDbTimeseriesStore({ doc, table }, { writeConcurrency: 1 });
    for await (const _ of store.query({ workspaceId: WORKSPACE, from: 0, size: POINTS, order: 'asc' })) count++;
    return count;
  };
  /** Items in `table`: every stored arrival. */
  const countOf = async (table: string) => {
    let count = 0;
    let ExclusiveStartKey: Record<string, never> | undefined;
    do {
      const page = await client.send(new ScanCommand({ TableName: table, Select: 'COUNT', ExclusiveStartKey }));
      count += page.Count ?? 0;
      ExclusiveStartKey = page.LastEvaluatedKey as typeof ExclusiveStartKey;
    } while (ExclusiveStartKey);
    return count;
  };

  /**
   * Plain BatchWriteItem of the messages' items, unprocessed items retried, with as many calls in
   * flight as the ingest invocations together may have (each container's store writes
   * WRITE_CONCURRENCY at once), so that neither side has more connections to the table.
   */
  const plainWrite = async (table: string, batches: QueuedIngest[][]) => {
    const items = toItems(batches);
    const chunks: (typeof items)[] = [];
    for (let i = 0; i < items.length; i += BATCH_WRITE_LIMIT) {
      // A BatchWriteItem may not name one key twice: keep the last, as a later call would.
      const unique = new Map(items.slice(i, i + BATCH_WRITE_LIMIT).map((item) => [`${item.pk} ${item.sk}`, item]));
      chunks.push([...unique.values()]);
    }
    let next = 0;
    const worker = async () => {
      while (next < chunks.length) {
        let requests = chunks[next++].map((Item) => ({ PutRequest: { Item } }));
        while (requests.length) {
          const result = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
          requests = (result.UnprocessedItems?.[table] ?? []) as typeof requests;
        }
      }
    };
    await Promise.all(Array.from({ length: PLAIN_IN_FLIGHT }, worker));
  };

  /**
   * What the ingest handler builds once per container, for INVOCATIONS_IN_FLIGHT containers: each
   * its own store of `table` (its own memory of stored keys) and a way to forward.
   */
  const containers = (table: string, forward: IngestDeps['forward']): IngestDeps[] =>
    Array.from({ length: INVOCATIONS_IN_FLIGHT }, () => ({
      store: dynamoDbTimeseriesStore({ doc, table }, { writeConcurrency: WRITE_CONCURRENCY }),
      forward,
      concurrency: WRITE_CONCURRENCY,
      // HTTPS messages only: no MQTT publish to look up, stamp or count against its device's day.
      places: async () => new Map(),
      settings: async () => undefined,
      stamper: new CloudStamper(),
      points: async () => {
        throw new Error('the ingest benchmark sends no MQTT publish');
      },
      // The usage counts of a batch: one UpdateItem per workspace and day, as the handler writes them.
      recordUsage: (tally) => recordUsage({ doc, table: registry }, tally),
      closedSessions: async () => {
        throw new Error('the ingest benchmark sends no MQTT publish');
      },
    }));

  /** The ingest handler's work on every batch, one invocation in flight per container. */
  const ingest = async (deployed: IngestDeps[], batches: QueuedIngest[][]) => {
    let next = 0;
    let failed = 0;
    const invoker = async (deps: IngestDeps) => {
      while (next < batches.length) failed += (await ingestBatch(deps, batches[next++])).length;
    };
    await Promise.all(deployed.map(invoker));
    if (failed) throw new Error(`${failed} messages failed`);
  };
  const noForwarding: IngestDeps['forward'] = async () => undefined;
  // What publishForward does with the local runtime's FORWARD_QUEUE_URL: packs, then SendMessageBatch.
  const toFauxqs: IngestDeps['forward'] = (messages) => sendEncodedMessages(sqs.queues.forward.url, packForward(messages), WRITE_CONCURRENCY);

  try {
    console.log('warming up (10,000 points each way)…');
    const warm = toBatches(WORKSPACE, makePoints().slice(0, 10_000));
    await plainWrite(await freshTable(), warm);
    await ingest(containers(await freshTable(), noForwarding), warm);

    const points = makePoints();
    const unique = new Set(points.map((p) => `${p.device_id} ${p.tag} ${p.timestamp_device}`)).size;
    const tables = { plain: await freshTable(), store: await freshTable(), forwarding: await freshTable() };
    const storeOnly = containers(tables.store, noForwarding);
    const withForwarding = containers(tables.forwarding, toFauxqs);
    console.log(`measuring ${POINTS} points (${POINTS - unique} duplicates) in ${SLICES} interleaved slices…`);
    // Slices taken in turn by each way, into the same three tables: load from other processes hits
    // the three alike, and a duplicate meets its original whichever slice holds it. Each slice is
    // queued once, so the three ways write the same items.
    let [plainMs, storeMs, forwardingMs] = [0, 0, 0];
    const sliceSize = Math.ceil(points.length / SLICES);
    for (let i = 0; i < points.length; i += sliceSize) {
      const slice = toBatches(WORKSPACE, points.slice(i, i + sliceSize));
      plainMs += await timeMs(() => plainWrite(tables.plain, slice));
      storeMs += await timeMs(() => ingest(storeOnly, slice));
      forwardingMs += await timeMs(() => ingest(withForwarding, slice));
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    const [plainItems, storeItems, forwardingItems] = await Promise.all([countOf(tables.plain), countOf(tables.store), countOf(tables.forwarding)]);
    const [storeRead, forwardingRead] = await Promise.all([readBack(tables.store), readBack(tables.forwarding)]);

    const perSecond = (ms: number) => (POINTS / ms) * 1000;
    printTable(`${POINTS} points, ${POINTS - unique} duplicates, ${POINTS_PER_MESSAGE} per message, ${QUEUES.ingest.batchSize} messages per invocation`, [
      {
        what: `plain BatchWriteItem (25 items, ${PLAIN_IN_FLIGHT} in flight)`,
        s: plainMs / 1000,
        'points/s': perSecond(plainMs),
        items: plainItems,
        'read back': '',
        ratio: 1,
      },
      {
        what: 'ingest: store only (forwarding off)',
        s: storeMs / 1000,
        'points/s': perSecond(storeMs),
        items: storeItems,
        'read back': storeRead,
        ratio: plainMs / storeMs,
      },
      {
        what: 'ingest: store + forward each point and its data event, packed (fauxqs)',
        s: forwardingMs / 1000,
        'points/s': perSecond(forwardingMs),
        items: forwardingItems,
        'read back': forwardingRead,
        ratio: plainMs / forwardingMs,
      },
    ]);
    console.log(`\nratio ingest (store) / plain BatchWriteItem = ${(plainMs / storeMs).toFixed(2)} (target ≥ 0.5)`);
    console.log(`ratio ingest (store + forwarding) / plain BatchWriteItem = ${(plainMs / forwardingMs).toFixed(2)} (target ≥ 0.8)`);
    console.log(`items: every stored arrival; read back: points the storage query returns (one per series key; ${unique} expected)`);
    if (storeRead !== unique || forwardingRead !== unique) throw new Error(`read back ${storeRead}/${forwardingRead} points, expected ${unique}`);
  } finally {
    client.destroy();
    await sqs.stop();
    await dynamo.stop();
  }
};

await main();
