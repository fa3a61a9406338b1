/**
 * Storage query: 175,000 stored records read with size=175000 over the local HTTP API, side by
 * side in one run with a plain paginated read of the same records from DynamoDB Local.
 *
 *   npm run bench:query                       RECORDS=175000 ROUNDS=3
 *
 * The API runs in a child process (the local runtime, in memory) so that its memory is its own:
 * its peak RSS while answering is compared with its RSS idle (after a GC), read from /proc.
 * Targets: peak RSS grows < 100 MB whatever `size` is; total time ≤ 1.5× the plain read.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../lambdas/shared/clients';
import { newId } from '../lambdas/shared/ids';
import { TIMESERIES_TABLE } from '../lambdas/shared/env';
import { timeseriesStore, type DataPoint } from '../lambdas/stores/timeseries';
import { queryPartitions } from '../lambdas/stores/timeseries/keys';
import { getText, mb, rssOf, serveUntilStopped, startServingProcess, watchPeakRss } from './serving-process';
import { median, printTable, timeMs } from './stats';

const RECORDS = Number(process.env.RECORDS ?? 175_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DEVICES = 50;
const TAGS = ['temperature', 'humidity', 'battery'];

interface Ready {
  storage_url: string;
  api_key: string;
  workspace_id: string;
  dynamodb_endpoint: string;
}

/** The child: the local runtime with RECORDS points of one workspace, answering until told to stop. */
const serve = async () => {
  const { startLocalRuntime } = await import('../local/runtime');
  const runtime = await startLocalRuntime({});
  const store = timeseriesStore();
  const devices = Array.from({ length: DEVICES }, () => newId('dev'));
  const fleet = newId('flt');
  const t0 = Date.UTC(2026, 0, 1);
  const batch = 5000;
  for (let i = 0; i < RECORDS; i += batch) {
    const points: DataPoint[] = [];
    for (let j = i; j < Math.min(RECORDS, i + batch); j++) {
      points.push({
        workspace_id: runtime.workspace_id,
        fleet_id: fleet,
        device_id: devices[j % DEVICES],
        tag: TAGS[j % TAGS.length],
        timestamp_device: new Date(t0 + Math.floor(j / (DEVICES * TAGS.length)) * 1000).toISOString(),
        timestamp_in: new Date(t0 + j).toISOString(),
        payload: { value: (j * 7919) % 1000, unit: 'c', seq: j },
      });
    }
    await store.write(points);
  }
  const ready: Ready = {
    storage_url: runtime.storage_url,
    api_key: runtime.api_key,
    workspace_id: runtime.workspace_id,
    dynamodb_endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
  };
  serveUntilStopped(runtime, ready);
};

/** One GET of the storage query: time to the first body byte, total time, bytes, records, peak RSS of the server. */
const timedGet = async (ready: Ready, pid: number, params: string, gzip: boolean) => {
  const watch = watchPeakRss(pid);
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  const { ttfbMs, bytes, text } = await getText(`${ready.storage_url}/timeseries/${ready.workspace_id}/data?${params}`, ready.api_key, gzip, elapsed);
  const totalMs = elapsed();
  const peakRss = watch.peak();
  // Parsed after the clock stops: the answer must be one valid JSON document.
  const records = (JSON.parse(text) as { result: unknown[] }).result.length;
  return { ttfbMs, totalMs, bytes, records, peakRss };
};

/** The plain read: every partition of the workspace, one after the other, 1 MB Query pages to the end. */
const plainRead = async (ready: Ready) => {
  const db = { doc: documentClient(new DynamoDBClient({ endpoint: ready.dynamodb_endpoint })), table: TIMESERIES_TABLE };
  let count = 0;
  for (const pk of queryPartitions(ready.workspace_id)) {
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await db.doc.send(
        new QueryCommand({ TableName: db.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ExclusiveStartKey }),
      );
      count += page.Items?.length ?? 0;
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
  }
  db.doc.destroy();
  return count;
};

const main = async () => {
  console.log(`starting the local runtime in a child process and storing ${RECORDS} records through the store…`);
  const { ready, pid, gc, stop } = await startServingProcess<Ready>(import.meta.url);
  try {
    const size = RECORDS;
    // Warm up both ways once: JIT, connections, DynamoDB Local's caches.
    await plainRead(ready);
    await timedGet(ready, pid, `size=${size}`, false);
    await gc();
    const idleRss = rssOf(pid, 'VmRSS');

    process.env.AWS_ENDPOINT_URL_DYNAMODB = ready.dynamodb_endpoint;
    const storeRead = async () => {
      let count = 0;
      for await (const _ of timeseriesStore().query({ workspaceId: ready.workspace_id, from: 0, size, order: 'desc' })) count++;
      return count;
    };
    await storeRead();
    const samples = { store: [] as number[], plain: [] as number[], http: [] as Array<Awaited<ReturnType<typeof timedGet>>>, gzip: [] as Array<Awaited<ReturnType<typeof timedGet>>>, small: [] as Array<Awaited<ReturnType<typeof timedGet>>> };
    for (let round = 0; round < ROUNDS; round++) {
      let count = 0;
      samples.plain.push(await timeMs(async () => (count = await plainRead(ready))));
      if (count !== RECORDS) throw new Error(`the plain read found ${count} records, expected ${RECORDS}`);
      samples.store.push(await timeMs(async () => (count = await storeRead())));
      if (count !== RECORDS) throw new Error(`the store read found ${count} records, expected ${RECORDS}`);
      await gc();
      samples.http.push(await timedGet(ready, pid, `size=${size}`, false));
      await gc();
      samples.gzip.push(await timedGet(ready, pid, `size=${size}`, true));
      await gc();
      samples.small.push(await timedGet(ready, pid, `size=${Math.round(size / 100)}`, false));
      await gc();
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    for (const run of [...samples.http, ...samples.gzip]) if (run.records !== RECORDS) throw new Error(`the API returned ${run.records} records, expected ${RECORDS}`);

    const plainMs = median(samples.plain);
    const row = (what: string, runs: typeof samples.http) => {
      const totalMs = median(runs.map((r) => r.totalMs));
      const peak = median(runs.map((r) => r.peakRss));
      return {
        what,
        'records': runs[0].records,
        'MB sent': mb(median(runs.map((r) => r.bytes))),
        'TTFB ms': median(runs.map((r) => r.ttfbMs)),
        'total s': totalMs / 1000,
        'total / plain': totalMs / plainMs,
        'peak RSS MB': mb(peak),
        'RSS growth MB': mb(peak - idleRss),
        'peak / idle RSS': peak / idleRss,
      };
    };
    const rows = [
      { what: 'plain paginated Query (8 partitions, 1 MB pages)', 'records': RECORDS, 'MB sent': '-', 'TTFB ms': '-', 'total s': plainMs / 1000, 'total / plain': 1, 'peak RSS MB': '-', 'RSS growth MB': '-', 'peak / idle RSS': '-' },
      { what: 'store.query in process (partitions merged)', 'records': RECORDS, 'MB sent': '-', 'TTFB ms': '-', 'total s': median(samples.store) / 1000, 'total / plain': median(samples.store) / plainMs, 'peak RSS MB': '-', 'RSS growth MB': '-', 'peak / idle RSS': '-' },
      row(`GET size=${size}`, samples.http),
      row(`GET size=${size}, gzip`, samples.gzip),
      row(`GET size=${Math.round(size / 100)}`, samples.small),
    ];
    printTable(`${RECORDS} records, median of ${ROUNDS} rounds; serving process idle RSS ${mb(idleRss).toFixed(1)} MB (after GC)`, rows);
    const http = rows[2];
    console.log(`\nratio total(GET size=${size}) / plain read = ${(http['total / plain'] as number).toFixed(2)} (target ≤ 1.5)`);
    console.log(`peak RSS growth while answering size=${size} = ${(http['RSS growth MB'] as number).toFixed(1)} MB (target < 100 MB); peak / idle = ${(http['peak / idle RSS'] as number).toFixed(2)}`);
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
