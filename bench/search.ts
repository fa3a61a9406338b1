/**
 * `npm run bench:search`: device search against the unfiltered device list, side by side in one run
 * (spec/fleet-state.md §1, issue 34's benchmark). A workspace of DEVICES devices with realistic tags
 * (10 sites of unequal size, 3 models, 5 firmware versions, half of them connected, each with one
 * identity, listed on its item as the identities' own transactions list them), written
 * straight into the local runtime's table through the stores' own keys (as bench:lists does: the
 * API's rate per key would make seeding 100,000 devices a matter of minutes, not what is measured).
 *
 *   npm run bench:search                       DEVICES=100000 ROUNDS=3 LATE_DEVICES=1000
 *   npm run bench:search -- 10000              a workspace of 10,000 devices
 *   PARTS=continuous npm run bench:search      one half only (search, continuous)
 *
 * For each query, and for the unfiltered list: the time to the first page (`?limit=1000`, the
 * whole page received) and to the whole stream (the unpaged, streamed answer, every device
 * received), median of ROUNDS, and each as a ratio to the unfiltered list's (target ≤ 1.5×). Also
 * `GET …/groups/{id}` (device_count, counted now) for a group saved with the selective query.
 *
 * The queries: selective (~1 %, a tag: answered from the tag index), broad (~50 %, `connected`:
 * one pass), broad on an indexed field (~60 %, a tag IN three values: its pages read in one pass,
 * as their probe finds most devices matching; its stream from the index), and `firmware_version`
 * (~20 %, indexed; its pages take the index after their probe).
 *
 * Then the continuous-rollout half (LATE_DEVICES, 1,000, devices created in a fleet that a
 * continuous rollout on DEVICES devices targets: how long until each holds the job, and the AWS
 * requests per late device): {@link continuousRolloutFigures}; skipped, saying so, on an API
 * without continuous rollouts.
 */
import { getText, startServingProcess, serveUntilStopped } from './serving-process';
import { median, printTable } from './stats';

// `npm run bench:search -- 10000` (or DEVICES=10000): a smaller workspace. The child (`--serve`) inherits it through the environment.
const sizeArgument = process.argv.slice(2).find((a) => /^\d+$/.test(a));
if (sizeArgument) process.env.DEVICES = sizeArgument;
const DEVICES = Number(process.env.DEVICES ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PAGE_LIMIT = 1000;
// Which halves to run: `search`, `continuous` (default both).
const PARTS = new Set((process.env.PARTS ?? 'search,continuous').split(','));

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
/** The first device's creation; devices are 10 ms apart, and each was last seen after the last was created. */
const T0 = Date.UTC(2026, 0, 1);
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
  { name: 'broad: a tag IN (pages one pass)', q: 'tags.site IN ("milan", "rome", "naples")', share: 0.6 },
  { name: 'firmware_version (index)', q: 'firmware_version = "1.4.0"', share: 0.2 },
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
  const { deviceKey, identityKey, tagIndexKey } = await import('../lambdas/stores/keys');
  const { ACTIVE_IDENTITIES } = await import('../lambdas/stores/identity-store');
  const { FIRMWARE_INDEX_KEY } = await import('../lambdas/stores/device-tag-index');
  const { getWorkspaceOfAccount } = await import('../lambdas/stores/workspace-store');
  const runtime = await startLocalRuntime({});
  const db = registryDb();
  const workspace = (await getWorkspaceOfAccount(db, runtime.account_id, runtime.workspace_id))!;
  const batch = 5000;
  for (let i = 0; i < DEVICES; i += batch) {
    const items: object[] = [];
    for (let j = i; j < Math.min(DEVICES, i + batch); j++) {
      const created_at = new Date(T0 + j * 10).toISOString();
      const id = newId('dev', created_at);
      const tags = { site: siteOf(j), model: MODELS[j % 3] };
      const firmware_version = FIRMWARE[Math.floor(j / 7) % 5];
      // One identity each, as a device that connects has (stores/identity-store.ts): its item, and its entry in the device's list.
      const identity = { id: newId('idn', created_at), type: 'sym', created_at };
      items.push({
        ...identityKey(workspace.id, id, identity.id),
        ...identity,
        device_id: id,
        workspace_id: workspace.id,
        account_id: workspace.account_id,
        secret: 'YmVuY2g=',
      });
      items.push({
        [ACTIVE_IDENTITIES]: { [identity.id]: { type: identity.type, created_at } },
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
        firmware_version,
        last_seen_at: new Date(T0 + DEVICES * 10 + j).toISOString(),
      });
      // The tag index's entries, as the device's own transaction writes them (stores/device-tag-index.ts).
      for (const [key, value] of Object.entries({ ...tags, [FIRMWARE_INDEX_KEY]: firmware_version }))
        items.push({ ...tagIndexKey(workspace.id, id, key, value), device_id: id });
    }
    await putAll(db, items as never, 8);
    process.stderr.write(`\rseeded ${Math.min(DEVICES, i + batch)} / ${DEVICES} devices`);
  }
  process.stderr.write('\n');
  const { requestCounter } = await import('../local/request-counter');
  process.on('message', (message) => message === 'requests' && process.send!({ requests: requestCounter().rows() }));
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

const LATE_DEVICES = Number(process.env.LATE_DEVICES ?? 1000);
// How many creates of late devices are in flight at once: within the key's rate (requests_per_second_per_key, 100 by default).
const CREATES_AT_ONCE = 16;

type CountRow = Pick<import('../local/request-counter').CountRow, 'service' | 'operation' | 'resource' | 'caller' | 'requests' | 'empty'>;

/**
 * Requests that go on whatever the runtime is doing: the minute sweep's (its invocations, its alarm
 * timers' and rollouts' index queries) and the stream poller's GetRecords (which Lambda makes on
 * AWS, and the figures below leave out as well).
 */
const isBackground = (r: CountRow) =>
  r.caller === 'rollout-sweep' || (r.service === 'Lambda' && r.operation === 'Invoke' && r.resource === 'rollout-sweep') || r.service === 'DynamoDB Streams';

/** Requests added up by the function that made them and the operation. */
const byCaller = (rows: CountRow[]) => {
  const by = new Map<string, number>();
  for (const r of rows) {
    const what = `${r.caller || 'runtime'}: ${r.service} ${r.operation}`;
    by.set(what, (by.get(what) ?? 0) + r.requests);
  }
  return by;
};

/** The request counts once two reads 2 s apart agree: the runtime has stopped working on its own. */
const quiet = async (read: () => Promise<{ requests: CountRow[] }>) => {
  // The pollers' empty receives, the stream's reads and the minute sweep's runs go on forever: only requests that found work count here.
  const total = (counts: { requests: CountRow[] }) => counts.requests.filter((r) => !isBackground(r)).reduce((n, r) => n + r.requests - (r.empty ?? 0), 0);
  let last = await read();
  for (let waited = 0; waited < 600; waited += 2) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const now = await read();
    if (total(now) === total(last)) return now;
    // What is still working: the row that grew the most since the last read.
    const before = new Map(last.requests.map((r) => [`${r.caller || 'runtime'}: ${r.service} ${r.operation} ${r.resource}`, r.requests - (r.empty ?? 0)]));
    const [busiest] = now.requests
      .filter((r) => !isBackground(r))
      .map((r) => ({ what: `${r.caller || 'runtime'}: ${r.service} ${r.operation} ${r.resource}`, grew: r.requests - (r.empty ?? 0) }))
      .map((r) => ({ ...r, grew: r.grew - (before.get(r.what) ?? 0) }))
      .sort((a, b) => b.grew - a.grew);
    last = now;
    process.stderr.write(`\rwaiting for the snapshot's work to settle (${total(now)} requests so far; busiest: ${busiest?.what} +${busiest?.grew})`);
  }
  throw new Error('the runtime was still making requests 600 s after the continuous rollout was scheduled');
};

/**
 * The continuous-rollout half (issue 34): a continuous rollout of a job on the default fleet, which
 * holds the workspace's DEVICES devices; then LATE_DEVICES devices created in that fleet through
 * the API; the time from the last create's answer until the rollout has given every one of them
 * the job (its `total` and its `pending` count, read every 250 ms; each late device's job is then
 * checked), against the 60 s of the spec, and the AWS requests the runtime made meanwhile per late
 * device (local/request-counter.ts), those of the creates themselves included and shown apart.
 * Undefined when the API has no continuous rollouts (the scheduling answers without them).
 */
const continuousRolloutFigures = async (ready: Ready, ask: <T>(message: string) => Promise<T>) => {
  const api = async (method: string, path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${ready.base_url}${path}`, {
      method,
      headers: { 'x-api-key': ready.api_key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    // The key's rate (requests_per_second_per_key): sent again after its Retry-After, as a client does.
    if (response.status === 429 && text.includes('rate_limited')) {
      await new Promise((resolve) => setTimeout(resolve, 1000 * Number(response.headers.get('retry-after') ?? 1)));
      return api(method, path, body);
    }
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as any;
  };
  const ws = ready.workspace_id;
  const fleet = (await api('GET', `/workspaces/${ws}/fleets?limit=1`)).fleets[0].id as string;
  let start = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - start) / 1e9;
  // The answer names every device; it is read whole.
  const scheduled = await api('POST', `/workspaces/${ws}/jobs/bench-continuous?fleet=${fleet}`, { value: { from: 'bench' }, rollout: { continuous: true } });
  const scheduleSeconds = seconds();
  const rolloutId = scheduled.job?.rollout_id as string;
  const rolloutOf = async () => (await api('GET', `/workspaces/${ws}/rollouts/${rolloutId}`)).rollout;
  const first = await rolloutOf();
  if (first?.settings?.continuous !== true) return undefined;
  const before = first.total as number;

  // The snapshot's own work (its jobs streamed to the devices) runs on for a while: the late
  // devices' requests are counted from when the runtime has gone quiet.
  const counted = await quiet(() => ask<{ requests: CountRow[] }>('requests'));
  const late: string[] = [];
  let next = 0;
  start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CREATES_AT_ONCE }, async () => {
      for (let i = next++; i < LATE_DEVICES; i = next++)
        late.push((await api('POST', `/workspaces/${ws}/devices`, { name: `late-${i}`, fleet_id: fleet })).device.id);
    }),
  );
  const createSeconds = seconds();
  start = process.hrtime.bigint();
  let rollout = first;
  for (;;) {
    rollout = await rolloutOf();
    if (rollout.total >= before + LATE_DEVICES) break;
    if (seconds() > 600) throw new Error(`after 600 s the rollout holds ${rollout.total - before} of ${LATE_DEVICES} late devices`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const allSeconds = seconds();
  const after = await ask<{ requests: CountRow[] }>('requests');
  // Checked after the clock stopped: each late device holds the job, once.
  let holding = 0;
  for (const id of late) if ((await api('GET', `/devices/${id}/jobs/bench-continuous`)).job?.status) holding++;
  if (holding !== LATE_DEVICES) throw new Error(`${holding} of ${LATE_DEVICES} late devices hold the job`);
  await api('POST', `/workspaces/${ws}/rollouts/${rolloutId}/cancel`);

  const key = (r: CountRow) => `${r.service} ${r.operation} ${r.resource} ${r.caller}`;
  const was = new Map(counted.requests.map((r) => [key(r), r.requests]));
  const spent = after.requests
    .map((r) => ({ ...r, requests: r.requests - (was.get(key(r)) ?? 0) }))
    .filter((r) => r.requests > 0 && r.service !== 'Webhook' && r.service !== 'DynamoDB Streams');
  const sum = (rows: CountRow[]) => rows.reduce((n, r) => n + r.requests, 0);
  const ofCreates = spent.filter((r) => r.caller === 'devices' || r.service === 'API Gateway' || r.caller.includes('authorizer'));
  const total = sum(spent);
  return [
    { what: `schedule the continuous job on ${before} devices (answer read whole)`, value: `${scheduleSeconds.toFixed(1)} s` },
    { what: `create ${LATE_DEVICES} devices in its fleet (${CREATES_AT_ONCE} at once, through the API)`, value: `${createSeconds.toFixed(1)} s` },
    { what: 'from the last create to every late device holding the job (target ≤ 60 s)', value: `${allSeconds.toFixed(1)} s` },
    { what: 'AWS requests per late device, all (creates included)', value: (total / LATE_DEVICES).toFixed(2) },
    { what: 'AWS requests per late device, its create (API, authorizer, devices handler)', value: (sum(ofCreates) / LATE_DEVICES).toFixed(2) },
    { what: 'AWS requests per late device, the rollout reaching it (the rest)', value: ((total - sum(ofCreates)) / LATE_DEVICES).toFixed(2) },
    // Where the rest went, by the function that made them ('' : the runtime's own, e.g. the stream's and queues' pollers).
    ...[...byCaller(spent.filter((r) => !ofCreates.includes(r)))]
      .sort(([, a], [, b]) => b - a)
      .slice(0, 8)
      .map(([what, n]) => ({ what: `  of which ${what}`, value: (n / LATE_DEVICES).toFixed(2) })),
  ];
};

/** The search half: every list timed against the unfiltered one, and a group's count. */
const searchFigures = async (ready: Ready) => {
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
};

const main = async () => {
  console.log(`starting the local runtime in a child process and writing ${DEVICES} tagged devices into its workspace…`);
  const { ready, stop, ask } = await startServingProcess<Ready>(import.meta.url);
  try {
    if (PARTS.has('search')) await searchFigures(ready);
    if (!PARTS.has('continuous')) return;
    const continuous = await continuousRolloutFigures(ready, ask);
    if (continuous) printTable(`continuous rollout on ${DEVICES} devices: ${LATE_DEVICES} late devices`, continuous);
    else console.log('\ncontinuous rollout: not measured (this API has no continuous rollouts: settings.continuous not answered)');
  } finally {
    await stop();
  }
};

if (process.argv.includes('--serve')) await serve();
else await main();
