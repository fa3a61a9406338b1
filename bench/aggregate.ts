/**
 * Aggregation and export: hourly avg/min/max of a month of 10 devices (POINTS points, 1,000,000
 * by default) with one GET of the aggregation, and the same range exported as one CSV file (POST
 * the export, poll it until ready: its queue, its run streaming the range read into a multipart
 * upload to the local S3), side by side in one run with the raw streamed query of the same range
 * (pages of 175,000 walked by time, as a client downloading the month would), all over the local
 * HTTP API. In process, for reference: the store's range read alone, which all three rest on.
 *
 *   npm run bench:aggregate                   POINTS=1000000 ROUNDS=1
 *
 * The API runs in a child process (the local runtime, in memory) whose peak RSS while answering is
 * compared with its RSS idle (after a GC), read from /proc. Targets (issue 20): the aggregation
 * takes ≤ 0.25 of the raw query's time, and its RSS stays flat (it holds one hour of buckets,
 * whatever the range). It is timed twice a round: first with no rollups (they are deleted before),
 * reading every point and keeping the rollup of each sealed hour, then again, from those rollups
 * (lambdas/domain/data/rollups.ts), as a dashboard that shows the month again does. The export writes
 * points at ≥ 0.5 of the raw query's rate (from the POST to `ready`; the file's download is timed
 * apart), its RSS flat but for the file itself, which the local S3 keeps in the same process's memory.
 */
import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { fieldHash } from '../lambdas/domain/data/rollups';
import { documentClient } from '../lambdas/shared/clients';
import { newId } from '../lambdas/shared/ids';
import { timeseriesStore, type DataPoint } from '../lambdas/stores/timeseries';
import { HOUR_MS, rollupPartition } from '../lambdas/stores/timeseries/keys';
import { getText, mb, rssOf, serveUntilStopped, startServingProcess, watchPeakRss } from './serving-process';
import { median, printTable, timeMs } from './stats';

const POINTS = Number(process.env.POINTS ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const DEVICES = 10;
const PAGE = 175_000;
const START = Date.UTC(2026, 0, 1);
const END = Date.UTC(2026, 0, 31);
/** Each point at its own millisecond: a client pages by time without ties at a page's edge. */
const STEP = (END - START) / POINTS;
const HOURS = (END - START) / HOUR_MS;

interface Ready {
  storage_url: string;
  api_key: string;
  workspace_id: string;
  dynamodb_endpoint: string;
  timeseries_table: string;
}

/** The child: the local runtime with POINTS points of one workspace over the month, answering until told to stop. */
const serve = async () => {
  const { startLocalRuntime } = await import('../local/runtime');
  const runtime = await startLocalRuntime({});
  const store = timeseriesStore();
  const devices = Array.from({ length: DEVICES }, () => newId('dev'));
  const fleet = newId('flt');
  const batch = 10_000;
  for (let i = 0; i < POINTS; i += batch) {
    const points: DataPoint[] = [];
    for (let j = i; j < Math.min(POINTS, i + batch); j++) {
      const at = new Date(START + Math.floor(j * STEP)).toISOString();
      points.push({
        workspace_id: runtime.workspace_id,
        fleet_id: fleet,
        device_id: devices[j % DEVICES],
        tag: 'climate',
        timestamp_device: at,
        timestamp_in: at,
        payload: { temp: ((j * 7919) % 4000) / 100, hum: j % 100 },
      });
    }
    await store.write(points);
  }
  serveUntilStopped(runtime, {
    storage_url: runtime.storage_url,
    api_key: runtime.api_key,
    workspace_id: runtime.workspace_id,
    dynamodb_endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
    timeseries_table: process.env.TIMESERIES_TABLE!,
  } satisfies Ready);
};

/** One GET, its total time and the server's peak RSS meanwhile; the body parsed after the clock stops. */
const timedGet = async (ready: Ready, pid: number, path: string) => {
  const watch = watchPeakRss(pid);
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  const { bytes, text } = await getText(`${ready.storage_url}${path}`, ready.api_key, false, elapsed);
  const totalMs = elapsed();
  return { totalMs, bytes, peakRss: watch.peak(), body: JSON.parse(text) as Record<string, unknown> };
};

const range = `start=${new Date(START).toISOString()}&end=${new Date(END).toISOString()}`;

/** The aggregation: hourly avg, min and max of each device, one request (7,200 buckets). */
const aggregate = async (ready: Ready, pid: number) => {
  const run = await timedGet(ready, pid, `/timeseries/${ready.workspace_id}/aggregate?${range}&field=temp&every=1h&fn=avg,min,max,count&group_by=device`);
  const buckets = run.body.buckets as Array<{ count: number }>;
  if (run.body.next !== null) throw new Error('the aggregation needed more than one page');
  const counted = buckets.reduce((n, b) => n + b.count, 0);
  if (counted !== POINTS) throw new Error(`the aggregation counted ${counted} points, expected ${POINTS}`);
  return { totalMs: run.totalMs, bytes: run.bytes, peakRss: run.peakRss, buckets: buckets.length };
};

/**
 * Deletes the rollups the aggregation keeps (lambdas/domain/data/rollups.ts), so that the next one reads
 * every point again, as the first aggregation of a month does.
 */
const dropRollups = async (ready: Ready) => {
  const doc = documentClient(new DynamoDBClient({ endpoint: ready.dynamodb_endpoint }));
  const pk = rollupPartition(ready.workspace_id, fieldHash(['temp']));
  const { Items = [] } = await doc.send(
    new QueryCommand({
      TableName: ready.timeseries_table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'pk, sk',
    }),
  );
  for (let i = 0; i < Items.length; i += 25) {
    await doc.send(new BatchWriteCommand({ RequestItems: { [ready.timeseries_table]: Items.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } })) } }));
  }
  return Items.length;
};

/** The raw query of the range, page after page of 175,000, each starting after the last point of the one before. */
const raw = async (ready: Ready, pid: number) => {
  let totalMs = 0;
  let bytes = 0;
  let peakRss = 0;
  let records = 0;
  let start = new Date(START).toISOString();
  for (;;) {
    const run = await timedGet(
      ready,
      pid,
      `/timeseries/${ready.workspace_id}/data?start=${start}&end=${new Date(END).toISOString()}&sort=timestamp_device&size=${PAGE}`,
    );
    const result = run.body.result as Array<{ timestamp_device: string }>;
    totalMs += run.totalMs;
    bytes += run.bytes;
    peakRss = Math.max(peakRss, run.peakRss);
    records += result.length;
    if (result.length < PAGE) break;
    start = new Date(Date.parse(result[result.length - 1].timestamp_device) + 1).toISOString();
  }
  if (records !== POINTS) throw new Error(`the raw query returned ${records} points, expected ${POINTS}`);
  return { totalMs, bytes, peakRss, records };
};

/** How often a running export is read while the bench waits for it. */
const EXPORT_POLL_MS = 100;

/**
 * The range exported as CSV: from the POST to the export's `ready`, polled every EXPORT_POLL_MS
 * (the server's peak RSS meanwhile); then its file downloaded from the presigned URL (timed apart)
 * and its rows counted.
 */
const exportCsv = async (ready: Ready, pid: number) => {
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await fetch(`${ready.storage_url}${path}`, {
      method,
      headers: { 'x-api-key': ready.api_key, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as { export: { id: string; status: string; rows: number; bytes: number; url: string | null; error: unknown } };
  };
  const watch = watchPeakRss(pid);
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  let shown = (
    await call('POST', `/timeseries/${ready.workspace_id}/exports`, { format: 'csv', start: new Date(START).toISOString(), end: new Date(END).toISOString() })
  ).export;
  while (shown.status === 'running') {
    await new Promise((resolve) => setTimeout(resolve, EXPORT_POLL_MS));
    shown = (await call('GET', `/timeseries/${ready.workspace_id}/exports/${shown.id}`)).export;
  }
  const totalMs = elapsed();
  const peakRss = watch.peak();
  if (shown.status !== 'ready') throw new Error(`the export ended ${shown.status}: ${JSON.stringify(shown.error)}`);
  const downloadMs = await timeMs(async () => {
    const file = await fetch(shown.url!);
    const text = await file.text();
    // The header line, then one CRLF-ended line a point (no payload here holds a line break).
    const lines = text.split('\r\n').length - 2;
    if (!file.ok || lines !== POINTS || Buffer.byteLength(text) !== shown.bytes)
      throw new Error(
        `the export's file answered ${file.status} with ${lines} rows and ${Buffer.byteLength(text)} bytes, expected ${POINTS} rows and ${shown.bytes}`,
      );
  });
  if (shown.rows !== POINTS) throw new Error(`the export wrote ${shown.rows} rows, expected ${POINTS}`);
  return { totalMs, bytes: shown.bytes, peakRss, downloadMs };
};

const main = async () => {
  console.log(`starting the local runtime in a child process and storing ${POINTS} points of ${DEVICES} devices over a month through the store…`);
  const { ready, pid, gc, stop } = await startServingProcess<Ready>(import.meta.url);
  try {
    process.env.AWS_ENDPOINT_URL_DYNAMODB = ready.dynamodb_endpoint;
    // Warm up both ways once: JIT, connections, DynamoDB Local's caches.
    await aggregate(ready, pid);
    await raw(ready, pid);
    await exportCsv(ready, pid);
    const storeRead = async () => {
      let count = 0;
      for await (const run of timeseriesStore().readRange({
        workspaceId: ready.workspace_id,
        start: new Date(START).toISOString(),
        end: new Date(END).toISOString(),
      }))
        count += run.length;
      if (count !== POINTS) throw new Error(`the range read found ${count} points, expected ${POINTS}`);
    };
    const samples = {
      aggregate: [] as Array<Awaited<ReturnType<typeof aggregate>>>,
      cold: [] as Array<Awaited<ReturnType<typeof aggregate>>>,
      raw: [] as Array<Awaited<ReturnType<typeof raw>>>,
      exported: [] as Array<Awaited<ReturnType<typeof exportCsv>>>,
      store: [] as number[],
      idle: [] as number[],
      exportIdle: [] as number[],
    };
    for (let round = 0; round < ROUNDS; round++) {
      await gc();
      samples.idle.push(rssOf(pid, 'VmRSS'));
      // The first aggregation of the month reads every point and keeps the hours' rollups; the next reads those.
      const dropped = await dropRollups(ready);
      if (dropped !== HOURS) throw new Error(`${dropped} rollups were kept, expected one for each of the ${HOURS} hours`);
      samples.cold.push(await aggregate(ready, pid));
      await gc();
      samples.aggregate.push(await aggregate(ready, pid));
      await gc();
      samples.raw.push(await raw(ready, pid));
      await gc();
      samples.exportIdle.push(rssOf(pid, 'VmRSS'));
      samples.exported.push(await exportCsv(ready, pid));
      samples.store.push(await timeMs(storeRead));
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    const idle = median(samples.idle);
    const aggregateMs = median(samples.aggregate.map((s) => s.totalMs));
    const coldMs = median(samples.cold.map((s) => s.totalMs));
    const rawMs = median(samples.raw.map((s) => s.totalMs));
    const exportMs = median(samples.exported.map((s) => s.totalMs));
    const exportIdle = median(samples.exportIdle);
    const exportBytes = median(samples.exported.map((s) => s.bytes));
    const row = (what: string, totalMs: number, bytes: number | string, peak: number | undefined, from = idle) => ({
      what,
      'total s': totalMs / 1000,
      'share of raw': totalMs / rawMs,
      'MB sent': typeof bytes === 'number' ? mb(bytes) : bytes,
      'peak RSS MB': peak === undefined ? '-' : mb(peak),
      'RSS growth MB': peak === undefined ? '-' : mb(peak - from),
    });
    printTable(
      `${POINTS} points, ${DEVICES} devices, ${new Date(START).toISOString().slice(0, 10)} to ${new Date(END).toISOString().slice(0, 10)}; median of ${ROUNDS} round(s); serving process idle RSS ${mb(idle).toFixed(1)} MB (after GC)`,
      [
        row(
          `GET aggregate, first (1h, avg/min/max/count, by device: ${samples.cold[0].buckets} buckets; reads every point, keeps ${HOURS} hourly rollups)`,
          coldMs,
          median(samples.cold.map((s) => s.bytes)),
          median(samples.cold.map((s) => s.peakRss)),
        ),
        row(
          'GET aggregate, again (the same, from the rollups of its sealed hours)',
          aggregateMs,
          median(samples.aggregate.map((s) => s.bytes)),
          median(samples.aggregate.map((s) => s.peakRss)),
        ),
        row(
          `GET data, ${Math.ceil(POINTS / PAGE)} pages of ${PAGE} walked by time`,
          rawMs,
          median(samples.raw.map((s) => s.bytes)),
          median(samples.raw.map((s) => s.peakRss)),
        ),
        row(
          `POST exports (csv) until ready, polled every ${EXPORT_POLL_MS} ms (MB: the file)`,
          exportMs,
          exportBytes,
          median(samples.exported.map((s) => s.peakRss)),
          exportIdle,
        ),
        row('GET of the ready file from its presigned URL (the local S3)', median(samples.exported.map((s) => s.downloadMs)), exportBytes, undefined),
        row('store.readRange in this process (what all three read)', median(samples.store), '-', undefined),
      ],
    );
    console.log(
      `\nratio aggregate / raw query of the same range = ${(aggregateMs / rawMs).toFixed(2)} from rollups (target ≤ 0.25); ${(coldMs / rawMs).toFixed(2)} the first time, reading every point`,
    );
    console.log(
      `peak RSS growth while aggregating ${POINTS} points = ${mb(median(samples.cold.map((s) => s.peakRss)) - idle).toFixed(1)} MB the first time (flat: one hour of buckets is held), ${mb(median(samples.aggregate.map((s) => s.peakRss)) - idle).toFixed(1)} MB from rollups`,
    );
    console.log(
      `ratio export rate / raw query rate of the same range = ${(rawMs / exportMs).toFixed(2)} (target ≥ 0.5; ${Math.round(POINTS / (exportMs / 1000))} vs ${Math.round(POINTS / (rawMs / 1000))} points/s)`,
    );
    // fauxqs keeps an upload's parts, then concatenates them into the object: the file twice, at the end.
    const exportGrowth = median(samples.exported.map((s) => s.peakRss)) - exportIdle;
    console.log(
      `peak RSS growth while exporting ${POINTS} points = ${mb(exportGrowth).toFixed(1)} MB: ${mb(2 * exportBytes).toFixed(1)} MB are the local S3's two copies of the ${mb(exportBytes).toFixed(1)} MB file in the same process (its parts, and the object made of them), ${mb(exportGrowth - 2 * exportBytes).toFixed(1)} MB the rest (flat: a run holds at most two parts of 8 MiB)`,
    );
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
