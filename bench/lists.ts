/**
 * Device list: a workspace of 100,000 devices listed with GET …/devices over the local HTTP API,
 * side by side in one run with a plain paginated Query of the same device items from DynamoDB Local.
 *
 *   npm run bench:lists                       DEVICES=100000 ROUNDS=3
 *   HEAP_MB=96 npm run bench:lists            the serving process with V8's old space capped: a list
 *                                             that held its items would fail there
 *
 * The API runs in a child process (the local runtime, in memory, where the handler runs) so that
 * its memory is its own: its peak RSS while answering is compared with its RSS idle (after a GC),
 * read from /proc (and with its RSS before the first list, the handler not yet loaded). Every tenth device has an identity, which the list joins in (the plain Query
 * reads the devices only). Targets: total time ≤ 1.5× the plain Query; peak RSS growth < 100 MB.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../lambdas/shared/clients';
import { REGISTRY_TABLE } from '../lambdas/shared/env';
import { getText, mb, rssOf, serveUntilStopped, startServingProcess, watchPeakRss } from './serving-process';
import { median, printTable, timeMs } from './stats';

const DEVICES = Number(process.env.DEVICES ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PAGE_LIMIT = 1000;
const HEAP_MB = process.env.HEAP_MB ? Number(process.env.HEAP_MB) : undefined;

interface Ready {
  base_url: string;
  api_key: string;
  workspace_id: string;
  dynamodb_endpoint: string;
}

/** The child: the local runtime with DEVICES devices in its workspace, answering until told to stop. */
const serve = async () => {
  const { startLocalRuntime } = await import('../local/runtime');
  const { registryDb } = await import('../lambdas/shared/clients');
  const { newId } = await import('../lambdas/shared/ids');
  const { putAll } = await import('../lambdas/stores/items');
  const { deviceKey, identityKey } = await import('../lambdas/stores/keys');
  const { getWorkspaceOfAccount } = await import('../lambdas/stores/workspace-store');
  const runtime = await startLocalRuntime({});
  const db = registryDb();
  const workspace = (await getWorkspaceOfAccount(db, runtime.account_id, runtime.workspace_id))!;
  const t0 = Date.UTC(2026, 0, 1);
  const batch = 5000;
  for (let i = 0; i < DEVICES; i += batch) {
    const items = [];
    for (let j = i; j < Math.min(DEVICES, i + batch); j++) {
      const created_at = new Date(t0 + j * 10).toISOString();
      const id = newId('dev', created_at);
      items.push({
        ...deviceKey(workspace.id, id),
        id,
        name: `sensor-${j}`,
        account_id: workspace.account_id,
        workspace_id: workspace.id,
        fleet_id: workspace.default_fleet_id,
        phys_id: `phys-${j.toString(16).padStart(8, '0')}`,
        created_at,
      });
      if (j % 10 === 0) {
        const idn = newId('idn', created_at);
        items.push({
          ...identityKey(workspace.id, id, idn),
          id: idn,
          type: 'sym',
          device_id: id,
          workspace_id: workspace.id,
          account_id: workspace.account_id,
          created_at,
          secret: 'c2VjcmV0',
        });
      }
    }
    await putAll(db, items, 8);
  }
  const ready: Ready = {
    base_url: runtime.base_url,
    api_key: runtime.api_key,
    workspace_id: runtime.workspace_id,
    dynamodb_endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB!,
  };
  serveUntilStopped(runtime, ready);
};

interface Run {
  ttfbMs: number;
  totalMs: number;
  bytes: number;
  devices: number;
  pages: number;
  peakRss: number;
}

/** GETs the device list (every page of it when `limit` is given): times, bytes, devices, peak RSS of the server. */
const timedList = async (ready: Ready, pid: number, gzip: boolean, limit?: number): Promise<Run> => {
  const watch = watchPeakRss(pid);
  const start = process.hrtime.bigint();
  const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6;
  const getOne = (query: string) => getText(`${ready.base_url}/workspaces/${ready.workspace_id}/devices${query}`, ready.api_key, gzip, elapsed);
  const texts: string[] = [];
  let first = 0;
  let bytes = 0;
  let cursor: string | null | undefined;
  do {
    const query = limit ? `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}` : '';
    const answer = await getOne(query);
    first ||= answer.ttfbMs;
    bytes += answer.bytes;
    texts.push(answer.text);
    cursor = limit ? (JSON.parse(answer.text) as { next: string | null }).next : null;
  } while (cursor);
  const totalMs = elapsed();
  const peakRss = watch.peak();
  // Parsed after the clock stops: each answer must be one valid JSON document.
  const devices = texts.reduce((n, text) => n + (JSON.parse(text) as { devices: unknown[] }).devices.length, 0);
  return { ttfbMs: first, totalMs, bytes, devices, pages: texts.length, peakRss };
};

/** The plain read: the workspace's device items, 1 MB Query pages to the end, strongly consistent as the list reads them. */
const plainQuery = async (ready: Ready) => {
  const db = { doc: documentClient(new DynamoDBClient({ endpoint: ready.dynamodb_endpoint })), table: REGISTRY_TABLE };
  let count = 0;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': `WKS#${ready.workspace_id}`, ':prefix': 'DEV#' },
        ExclusiveStartKey,
      }),
    );
    count += page.Items?.length ?? 0;
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  db.doc.destroy();
  return count;
};

const main = async () => {
  console.log(`starting the local runtime in a child process and writing ${DEVICES} devices into its workspace…`);
  const { ready, pid, gc, stop } = await startServingProcess<Ready>(import.meta.url, HEAP_MB);
  try {
    // Before any list: the devices handler not yet loaded.
    await gc();
    const coldRss = rssOf(pid, 'VmRSS');
    // Warm up both ways once: JIT, connections, DynamoDB Local's caches.
    await plainQuery(ready);
    await timedList(ready, pid, false);
    await gc();
    const idleRss = rssOf(pid, 'VmRSS');

    const samples = { plain: [] as number[], http: [] as Run[], gzip: [] as Run[], paged: [] as Run[] };
    for (let round = 0; round < ROUNDS; round++) {
      let count = 0;
      samples.plain.push(await timeMs(async () => (count = await plainQuery(ready))));
      if (count !== DEVICES) throw new Error(`the plain Query found ${count} devices, expected ${DEVICES}`);
      await gc();
      samples.http.push(await timedList(ready, pid, false));
      await gc();
      samples.gzip.push(await timedList(ready, pid, true));
      await gc();
      samples.paged.push(await timedList(ready, pid, false, PAGE_LIMIT));
      await gc();
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    for (const run of [...samples.http, ...samples.gzip, ...samples.paged]) {
      if (run.devices !== DEVICES) throw new Error(`the API listed ${run.devices} devices, expected ${DEVICES}`);
    }

    const plainMs = median(samples.plain);
    const row = (what: string, runs: Run[]) => {
      const totalMs = median(runs.map((r) => r.totalMs));
      const peak = median(runs.map((r) => r.peakRss));
      return {
        what,
        devices: runs[0].devices,
        requests: runs[0].pages,
        'MB sent': mb(median(runs.map((r) => r.bytes))),
        'TTFB ms': median(runs.map((r) => r.ttfbMs)),
        'total s': totalMs / 1000,
        'total / plain': totalMs / plainMs,
        'peak RSS MB': mb(peak),
        'RSS growth MB': mb(peak - idleRss),
        'peak - cold MB': mb(peak - coldRss),
      };
    };
    const rows = [
      {
        what: 'plain paginated Query (1 MB pages)',
        devices: DEVICES,
        requests: '-',
        'MB sent': '-',
        'TTFB ms': '-',
        'total s': plainMs / 1000,
        'total / plain': 1,
        'peak RSS MB': '-',
        'RSS growth MB': '-',
        'peak - cold MB': '-',
      },
      row('GET …/devices (streamed)', samples.http),
      row('GET …/devices, gzip', samples.gzip),
      row(`GET …/devices?limit=${PAGE_LIMIT}, every page`, samples.paged),
    ];
    printTable(
      `${DEVICES} devices, median of ${ROUNDS} rounds${HEAP_MB ? `, serving process's old space capped at ${HEAP_MB} MB` : ''}; serving process RSS ${mb(coldRss).toFixed(1)} MB cold (before any list), ${mb(idleRss).toFixed(1)} MB idle (after a warm-up list and a GC)`,
      rows,
    );
    const http = rows[1];
    console.log(`\nratio total(GET …/devices) / plain Query = ${(http['total / plain'] as number).toFixed(2)} (target ≤ 1.5)`);
    console.log(
      `peak RSS growth of the serving process while listing ${DEVICES} devices = ${(http['RSS growth MB'] as number).toFixed(1)} MB over idle, ${(http['peak - cold MB'] as number).toFixed(1)} MB over cold, first load of the handler included (target < 100 MB)`,
    );
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
