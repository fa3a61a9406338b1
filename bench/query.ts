/**
 * Storage query: 175,000 stored records read with size=175000 over the local HTTP API, side by
 * side in one run with a plain paginated read of the same records (their packs, parsed) from
 * DynamoDB Local, and with that read writing each record as the answer's JSON (the yardstick: the
 * least a reader that answers with the records does; the read alone, now that packs made it a
 * tenth of its former self, leaves out most of the answer's work).
 *
 *   npm run bench:query                       RECORDS=175000 ROUNDS=3
 *
 * The API runs in a child process (the local runtime, in memory) so that its memory is its own:
 * its peak RSS while answering is compared with its RSS idle (after a GC), read from /proc.
 * Targets: peak RSS grows < 100 MB whatever `size` is; total time ≤ 1.5× the plain read written as JSON.
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

/**
 * The plain read: every partition of the workspace, one after the other, 1 MB Query pages to the
 * end, each pack's points parsed and counted (what any reader of the table must do), in no order.
 * With `json`, each point is also written as the answer's record, and the records joined as the
 * answer's text, to be dropped: the least any reader that answers with them must do.
 */
const plainRead = async (ready: Ready, { json = false } = {}) => {
  const db = { doc: documentClient(new DynamoDBClient({ endpoint: ready.dynamodb_endpoint })), table: TIMESERIES_TABLE };
  let count = 0;
  let bytes = 0;
  for (const pk of queryPartitions(ready.workspace_id)) {
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await db.doc.send(
        new QueryCommand({ TableName: db.table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk }, ExclusiveStartKey }),
      );
      for (const item of page.Items ?? []) {
        const pack = JSON.parse(item.p as string) as { d: string[]; f: string[]; r: Array<[number, number, string, number, number, number, string, unknown]> };
        count += pack.r.length;
        if (!json) continue;
        const at = Date.parse((item.sk as string).slice(0, 24));
        let text = '';
        for (const [device, fleet, tag, , inMs, , , payload] of pack.r) {
          const record = {
            timestamp_device: new Date(at).toISOString(),
            timestamp_in: new Date(at + inMs).toISOString(),
            fleet_id: pack.f[fleet],
            device_id: pack.d[device],
            tag,
            payload,
          };
          text += `${JSON.stringify(record)},`;
        }
        bytes += text.length;
      }
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
  }
  db.doc.destroy();
  return json && bytes === 0 ? -1 : count;
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
    const samples = {
      store: [] as number[],
      plain: [] as number[],
      plainJson: [] as number[],
      http: [] as Array<Awaited<ReturnType<typeof timedGet>>>,
      gzip: [] as Array<Awaited<ReturnType<typeof timedGet>>>,
      small: [] as Array<Awaited<ReturnType<typeof timedGet>>>,
    };
    for (let round = 0; round < ROUNDS; round++) {
      let count = 0;
      samples.plain.push(await timeMs(async () => (count = await plainRead(ready))));
      if (count !== RECORDS) throw new Error(`the plain read found ${count} records, expected ${RECORDS}`);
      samples.plainJson.push(await timeMs(async () => (count = await plainRead(ready, { json: true }))));
      if (count !== RECORDS) throw new Error(`the plain read with JSON found ${count} records, expected ${RECORDS}`);
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
    for (const run of [...samples.http, ...samples.gzip])
      if (run.records !== RECORDS) throw new Error(`the API returned ${run.records} records, expected ${RECORDS}`);

    const plainMs = median(samples.plain);
    const plainJsonMs = median(samples.plainJson);
    const row = (what: string, runs: typeof samples.http) => {
      const totalMs = median(runs.map((r) => r.totalMs));
      const peak = median(runs.map((r) => r.peakRss));
      return {
        what,
        records: runs[0].records,
        'MB sent': mb(median(runs.map((r) => r.bytes))),
        'TTFB ms': median(runs.map((r) => r.ttfbMs)),
        'total s': totalMs / 1000,
        'total / plain': totalMs / plainMs,
        'total / plain + JSON': totalMs / plainJsonMs,
        'peak RSS MB': mb(peak),
        'RSS growth MB': mb(peak - idleRss),
        'peak / idle RSS': peak / idleRss,
      };
    };
    const rows = [
      {
        what: 'plain paginated Query (8 partitions, 1 MB pages)',
        records: RECORDS,
        'MB sent': '-',
        'TTFB ms': '-',
        'total s': plainMs / 1000,
        'total / plain': 1,
        'total / plain + JSON': plainMs / plainJsonMs,
        'peak RSS MB': '-',
        'RSS growth MB': '-',
        'peak / idle RSS': '-',
      },
      {
        what: 'the same, each point written as the answer’s JSON',
        records: RECORDS,
        'MB sent': '-',
        'TTFB ms': '-',
        'total s': plainJsonMs / 1000,
        'total / plain': plainJsonMs / plainMs,
        'total / plain + JSON': 1,
        'peak RSS MB': '-',
        'RSS growth MB': '-',
        'peak / idle RSS': '-',
      },
      {
        what: 'store.query in process (partitions merged)',
        records: RECORDS,
        'MB sent': '-',
        'TTFB ms': '-',
        'total s': median(samples.store) / 1000,
        'total / plain': median(samples.store) / plainMs,
        'total / plain + JSON': median(samples.store) / plainJsonMs,
        'peak RSS MB': '-',
        'RSS growth MB': '-',
        'peak / idle RSS': '-',
      },
      row(`GET size=${size}`, samples.http),
      row(`GET size=${size}, gzip`, samples.gzip),
      row(`GET size=${Math.round(size / 100)}`, samples.small),
    ];
    printTable(`${RECORDS} records, median of ${ROUNDS} rounds; serving process idle RSS ${mb(idleRss).toFixed(1)} MB (after GC)`, rows);
    const http = rows[3];
    console.log(`\nratio total(GET size=${size}) / plain read written as JSON = ${(http['total / plain + JSON'] as number).toFixed(2)} (target ≤ 1.5)`);
    console.log(`ratio total(GET size=${size}) / plain read = ${(http['total / plain'] as number).toFixed(2)} (for reference: that read writes no answer)`);
    console.log(
      `peak RSS growth while answering size=${size} = ${(http['RSS growth MB'] as number).toFixed(1)} MB (target < 100 MB); peak / idle = ${(http['peak / idle RSS'] as number).toFixed(2)}`,
    );
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
