/**
 * `npm run bench:search`: device search against the unfiltered device list, side by side in one run
 * (spec/fleet-state.md §1, issue 34's benchmark). A workspace of DEVICES devices with realistic tags
 * (10 sites of unequal size, 3 models, 5 firmware versions, half of them connected), written
 * straight into the local runtime's table through the stores' own keys (as bench:lists does: the
 * API's rate per key would make seeding 100,000 devices a matter of minutes, not what is measured).
 *
 *   npm run bench:search                       DEVICES=100000 ROUNDS=3
 *
 * For each query, and for the unfiltered list: the time to the first page (`?limit=1000`, the
 * whole page received) and to the whole stream (the unpaged, streamed answer, every device
 * received), median of ROUNDS, and each as a ratio to the unfiltered list's (target ≤ 1.5×). Also
 * `GET …/groups/{id}` (device_count, counted now) for a group saved with the selective query.
 *
 * The queries: selective (~1 %, a tag: answered from the tag index), broad (~50 %, `connected`:
 * one pass), broad through the index (~60 %, a tag IN three values), and a field of the device's
 * state: `state.reported.*` comes with issue 35, so `firmware_version` (~20 %, one pass) stands
 * for it until then.
 *
 * The continuous-rollout half of the benchmark (1,000 devices created in a fleet that a
 * continuous rollout on DEVICES devices targets: how long until each holds the job, and the AWS
 * requests per late device) is {@link continuousRolloutFigures}, to be filled once continuous
 * rollouts exist (issue 34, part h3).
 */
import { getText, startServingProcess, serveUntilStopped } from './serving-process';
import { median, printTable } from './stats';

const DEVICES = Number(process.env.DEVICES ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PAGE_LIMIT = 1000;

/** Ten sites of unequal size (shares of the devices, summing to 1): the last holds 1 %. */
const SITES: Array<[string, number]> = [
  ['milan', 0.25],
  ['rome', 0.2],
  ['naples', 0.15],
  ['turin', 0.12],
  ['bologna', 0.1],
  ['florence', 0.07],
  ['genoa', 0.05],
  ['venice', 0.03],
  ['bari', 0.02],
  ['trieste', 0.01],
];
const MODELS = ['v1', 'v2', 'v3'];
const FIRMWARE = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0'];

/** The site of the i-th device: the shares laid out over every 100 devices, so that any prefix of the workspace has them too. */
const siteOf = (i: number) => {
  let at = (i % 100) / 100;
  for (const [site, share] of SITES) {
    if (at < share) return site;
    at -= share;
  }
  return SITES[0][0];
};

const QUERIES: Array<{ name: string; q: string; share: number }> = [
  { name: 'selective: a tag (index)', q: 'tags.site = "trieste"', share: 0.01 },
  { name: 'broad: connected (one pass)', q: 'connected = true', share: 0.5 },
  { name: 'broad: a tag IN (index)', q: 'tags.site IN ("milan", "rome", "naples")', share: 0.6 },
  { name: 'state field: firmware_version (one pass)', q: 'firmware_version = "1.4.0"', share: 0.2 },
];

interface Ready {
  base_url: string;
  api_key: string;
  workspace_id: string;
}

/** The child: the local runtime with DEVICES tagged devices in its workspace, answering until told to stop. */
const serve = async () => {
  const { startLocalRuntime } = await import('../local/runtime');
  const { registryDb } = await import('../lambdas/shared/clients');
  const { newId } = await import('../lambdas/shared/ids');
  const { putAll } = await import('../lambdas/stores/items');
  const { deviceKey, tagIndexKey } = await import('../lambdas/stores/keys');
  const { getWorkspaceOfAccount } = await import('../lambdas/stores/workspace-store');
  const runtime = await startLocalRuntime({});
  const db = registryDb();
  const workspace = (await getWorkspaceOfAccount(db, runtime.account_id, runtime.workspace_id))!;
  const t0 = Date.UTC(2026, 0, 1);
  const batch = 5000;
  for (let i = 0; i < DEVICES; i += batch) {
    const items: object[] = [];
    for (let j = i; j < Math.min(DEVICES, i + batch); j++) {
      const created_at = new Date(t0 + j * 10).toISOString();
      const id = newId('dev', created_at);
      const tags = { site: siteOf(j), model: MODELS[j % 3] };
      items.push({
        ...deviceKey(workspace.id, id),
        id,
        name: `sensor-${j}`,
        account_id: workspace.account_id,
        workspace_id: workspace.id,
        fleet_id: workspace.default_fleet_id,
        created_at,
        tags,
        // Half of them connected (every other one), as the MQTT door's fields say it.
        connected: j % 2 === 0,
        last_connected_at: created_at,
        firmware_version: FIRMWARE[Math.floor(j / 7) % 5],
        last_seen_at: new Date(t0 + DEVICES * 10 + j).toISOString(),
      });
      // The tag index's entries, as the device's own transaction writes them (stores/device-tag-index.ts).
      for (const [key, value] of Object.entries(tags)) items.push({ ...tagIndexKey(workspace.id, id, key, value), device_id: id });
    }
    await putAll(db, items as never, 8);
    process.stderr.write(`\rseeded ${Math.min(DEVICES, i + batch)} / ${DEVICES} devices`);
  }
  process.stderr.write('\n');
  serveUntilStopped(runtime, { base_url: runtime.base_url, api_key: runtime.api_key, workspace_id: runtime.workspace_id } satisfies Ready);
};

/** Times one list: the first page (`limit`) received whole, and the unpaged stream received whole. */
const timeList = async (ready: Ready, path: string) => {
  const url = `${ready.base_url}/workspaces/${ready.workspace_id}${path}`;
  const separator = path.includes('?') ? '&' : '?';
  const clock = () => {
    const start = process.hrtime.bigint();
    return () => Number(process.hrtime.bigint() - start) / 1e6;
  };
  let elapsed = clock();
  const first = await getText(`${url}${separator}limit=${PAGE_LIMIT}`, ready.api_key, false, elapsed);
  const firstPageMs = elapsed();
  elapsed = clock();
  const whole = await getText(url, ready.api_key, false, elapsed);
  const streamMs = elapsed();
  const devices = (JSON.parse(whole.text) as { devices: unknown[] }).devices.length;
  const firstPage = (JSON.parse(first.text) as { devices: unknown[] }).devices.length;
  return { firstPageMs, streamMs, devices, firstPage };
};

/** Times `GET …/groups/{id}`: its device_count is the query evaluated at the request. */
const timeGroupCount = async (ready: Ready, groupId: string) => {
  const start = process.hrtime.bigint();
  const { text } = await getText(`${ready.base_url}/workspaces/${ready.workspace_id}/groups/${groupId}`, ready.api_key, false, () => 0);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, count: (JSON.parse(text) as { group: { device_count: number } }).group.device_count };
};

/**
 * TO FILL (issue 34, part h3: continuous rollouts): on the same workspace, schedule a continuous
 * rollout (`"rollout": {"continuous": true}`) on a fleet holding DEVICES devices, then create
 * 1,000 devices in that fleet through the API and measure how long after the last create every one
 * of them holds the job (target ≤ 60 s locally), and the AWS requests per late device (the local
 * runtime counts every SDK request: local/request-counter.ts, as bench:requests reads it). Return
 * rows for the table printed below; undefined while continuous rollouts do not exist.
 */
const continuousRolloutFigures = async (_ready: Ready): Promise<Array<Record<string, string | number>> | undefined> => undefined;

const main = async () => {
  console.log(`starting the local runtime in a child process and writing ${DEVICES} tagged devices into its workspace…`);
  const { ready, stop } = await startServingProcess<Ready>(import.meta.url);
  try {
    const post = await fetch(`${ready.base_url}/workspaces/${ready.workspace_id}/groups`, {
      method: 'POST',
      headers: { 'x-api-key': ready.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench: selective', query: QUERIES[0].q }),
    });
    const groupId = ((await post.json()) as { group: { id: string } }).group.id;
    const lists = [{ name: 'unfiltered list', path: '/devices', share: 1 }, ...QUERIES.map((q) => ({ ...q, path: `/devices?q=${encodeURIComponent(q.q)}` }))];
    // Warm up every list once: JIT, connections, DynamoDB Local's caches.
    for (const list of lists) await timeList(ready, list.path);
    const samples = new Map(lists.map((l) => [l.name, [] as Awaited<ReturnType<typeof timeList>>[]]));
    const counts: Array<Awaited<ReturnType<typeof timeGroupCount>>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const list of lists) samples.get(list.name)!.push(await timeList(ready, list.path));
      counts.push(await timeGroupCount(ready, groupId));
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    const base = samples.get('unfiltered list')!;
    const [baseFirst, baseStream] = [median(base.map((s) => s.firstPageMs)), median(base.map((s) => s.streamMs))];
    const rows = lists.map((list) => {
      const runs = samples.get(list.name)!;
      const [first, stream] = [median(runs.map((s) => s.firstPageMs)), median(runs.map((s) => s.streamMs))];
      return {
        list: list.name,
        query: 'q' in list ? list.q : '-',
        matches: `${runs[0].devices} (${((100 * runs[0].devices) / DEVICES).toFixed(1)} %)`,
        'first page ms': first,
        'first page / list': first / baseFirst,
        'whole stream s': stream / 1000,
        'stream / list': stream / baseStream,
      };
    });
    printTable(`${DEVICES} devices, median of ${ROUNDS} rounds; first page: ?limit=${PAGE_LIMIT} received whole; stream: unpaged, received whole`, rows);
    const count = median(counts.map((c) => c.ms));
    console.log(`\nGET …/groups/{id} with device_count for "${QUERIES[0].q}": ${counts[0].count} devices counted in ${count.toFixed(0)} ms (median)`);
    const worst = Math.max(...rows.slice(1).flatMap((r) => [r['first page / list'], r['stream / list']]));
    console.log(`worst ratio to the unfiltered list: ${worst.toFixed(2)} (target ≤ 1.5)`);
    for (const [i, list] of lists.entries()) {
      const found = samples.get(list.name)![0].devices;
      if (Math.abs(found - list.share * DEVICES) > DEVICES * 0.02)
        throw new Error(`${list.name} matched ${found} devices, expected about ${list.share * DEVICES}`);
      if (i && samples.get(list.name)![0].firstPage !== Math.min(PAGE_LIMIT, found)) throw new Error(`${list.name}'s first page is short`);
    }
    const continuous = await continuousRolloutFigures(ready);
    if (continuous) printTable('continuous rollout: 1,000 late devices', continuous);
    else console.log('\ncontinuous rollout: not measured (continuousRolloutFigures in bench/search.ts awaits continuous rollouts)');
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
