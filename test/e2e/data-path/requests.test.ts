import { measureDataPath, stageOf, type DataPathResult } from '../../../bench/data-path-scenario';
import { isAwsRequest, type CountRow } from '../../../local/request-counter';
import { startLocalRuntime, type InProcessRuntime } from '../../../local/runtime';
import { sharedEngine } from '../../helpers/runtime';

// The request counts of the data path, read from the runtime's counters (local/request-counter.ts)
// on the real local engines: a count, never a time. In-process only: the cloud-assembly runtime
// runs its functions in workers, whose requests this process does not see.
//
// The points meet the ingest queue's consumer as a backlog (its event source is enabled once every
// request is accepted), as under load: then the counts follow the points, not the machine's speed.
// Traffic that trickles in is split by the 1 s batching window into as many invocations (each with
// its receives, deletes, store write, forward sends and usage write) as the seconds it spans, which
// a slower machine stretches; `npm run bench:requests` measures that (docs/cost.md), as a benchmark
// measures anything that follows the clock.

/** Timestream's WriteRecords takes 100 records: what the store's writes cost with that backend. */
const TIMESTREAM_RECORDS_PER_WRITE = 100;
/** DynamoDB's BatchWriteItem takes 25 items. */
const BATCH_WRITE_ITEMS = 25;
/** ReceiveMessage and DeleteMessageBatch take 10 messages. */
const SQS_BATCH = 10;
const TARGET_PER_1000 = 25;

let runtime: InProcessRuntime;
beforeAll(async () => {
  runtime = await startLocalRuntime({ ...sharedEngine(), disabledEventSources: ['ingest'] });
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

const dataPath = (result: DataPathResult) => result.rows.filter((row) => stageOf(row) === 'data path' && isAwsRequest(row));
const isStoreWrite = (row: CountRow) => row.service === 'DynamoDB' && row.operation === 'BatchWriteItem' && row.resource === process.env.TIMESERIES_TABLE;
const sum = (rows: CountRow[], field: 'requests' | 'empty' = 'requests') => rows.reduce((total, row) => total + row[field], 0);

describe('AWS requests of the data path', () => {
  it('takes at most 25 AWS requests per 1,000 points from the ingest queue to the webhook, packing points and events', async () => {
    // 5,000 points from 5 devices, 100 per request (docs/cost.md: the traffic shapes).
    const messages = 50;
    const result = await measureDataPath(
      runtime,
      { door: 'https', devices: 5, pointsPerMessage: 100, messagesPerDevice: messages / 5 },
      { onSent: () => runtime.enableEventSource('ingest') },
    );

    expect(result.points).toBe(5000);
    expect(result.received.data).toBeGreaterThanOrEqual(5000);
    expect(result.received.events).toBeGreaterThanOrEqual(5000);
    const rows = dataPath(result);
    const storeWrites = sum(rows.filter(isStoreWrite));
    const ingestInvocations = sum(rows.filter((r) => r.service === 'Lambda' && r.resource === 'ingest'));
    // A backlog is taken in full batches: receives of 10, one delete per 10, and an invocation per
    // consumer (the local runtime runs two, as Lambda starts several pollers).
    const ingestQueue = rows.filter((r) => r.service === 'SQS' && r.resource === 'ingest');
    const byOperation = (operation: string) => ingestQueue.filter((r) => r.operation === operation);
    expect(sum(byOperation('ReceiveMessage')) - sum(byOperation('ReceiveMessage'), 'empty')).toBeLessThanOrEqual(messages / SQS_BATCH + 2);
    expect(sum(byOperation('DeleteMessageBatch'))).toBeLessThanOrEqual(messages / SQS_BATCH + 2);
    expect(ingestInvocations).toBeLessThanOrEqual(2);
    // The DynamoDB backend packs points (at least ten small ones an item of 4 KB), 25 items to a
    // call, plus one partly filled call per invocation at most.
    expect(storeWrites).toBeGreaterThan(0);
    expect(storeWrites).toBeLessThanOrEqual(result.points / (10 * BATCH_WRITE_ITEMS) + ingestInvocations);
    // Everything else the data path asks of AWS (queues, invocations, the forwarder's reads and
    // writes), with the store's writes of either backend (Timestream's at 100 records a call): at
    // most 25. Receives that found nothing are counted apart: they follow the clock (long polls,
    // the batching window), not the points.
    const others = rows.filter((r) => !isStoreWrite(r));
    const storePerThousand = Math.max((storeWrites * 1000) / result.points, Math.ceil(1000 / TIMESTREAM_RECORDS_PER_WRITE));
    const perThousand = ((sum(others) - sum(others, 'empty')) * 1000) / result.points + storePerThousand;
    expect(perThousand).toBeLessThanOrEqual(TARGET_PER_1000);
    // Packed: a few forward-queue sends carry the 10,000 entries (points and their data events).
    const forwardSends = sum(rows.filter((r) => r.service === 'SQS' && r.operation === 'SendMessageBatch' && r.resource === 'forward'));
    expect(forwardSends).toBeLessThanOrEqual(20);
  }, 300_000);
});
