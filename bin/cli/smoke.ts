/**
 * `fleetstream smoke --url <base_url> --key <api key>` (`npm run smoke`): calls every route of the
 * route table against a deployed (or local) API and checks that each answers as expected. Prints one
 * line per call to stderr and a JSON summary to stdout; exits 1 when a call answered otherwise or a
 * route of the table was not called (2 on bad arguments, bin/commands/smoke.ts).
 */
import { SignJWT } from 'jose';
import { createHash } from 'node:crypto';
import { ROUTES } from '../../lambdas/routes';

/** `smoke`'s options: the API (its URL ends in /v3), an API key, how long ingest may take. */
export interface SmokeOptions {
  url: string;
  key: string;
  timeoutSeconds: number;
}

// Set once by runSmoke, before the calls: the command runs one smoke test per process.
let base = '';
let key = '';
let timeoutMs = 60_000;

const log = (line: string) => process.stderr.write(`smoke: ${line}\n`);
const called = new Set<string>();
const failures: string[] = [];

interface Answer {
  status: number;
  body: any;
}

/**
 * One call of one route: its operationId (so that the table's coverage can be checked), the
 * status it must answer, and a check of the body that says what is wrong, or nothing.
 */
const call = async (
  operationId: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; expect?: number; check?: (body: any) => string | undefined; quiet?: boolean } = {},
): Promise<Answer> => {
  called.add(operationId);
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(options.headers ?? { 'x-api-key': key }) },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  const expected = options.expect ?? 200;
  const problem = response.status !== expected ? `answered ${response.status}, expected ${expected}: ${text.slice(0, 300)}` : options.check?.(body);
  if (problem) failures.push(`${operationId} ${method} ${path}: ${problem}`);
  if (!options.quiet || problem)
    log(`${problem ? 'FAIL' : 'ok  '} ${operationId} ${method} ${path.split('?')[0]} → ${response.status}${problem ? ` (${problem})` : ''}`);
  return { status: response.status, body };
};

const has = (field: string) => (body: any) => (body && body[field] !== undefined ? undefined : `no "${field}" in the answer`);

const main = async () => {
  const stamp = `smoke-${Date.now().toString(36)}`;
  const workspaces = await call('listWorkspaces', 'GET', '/workspaces', {
    check: (b) => (Array.isArray(b?.workspaces) && b.workspaces.length ? undefined : 'no workspaces'),
  });
  if (workspaces.status !== 200) throw new Error('the key does not list its workspaces: check --url (it ends in /v3) and --key');
  const ws = workspaces.body.workspaces[0].id as string;
  await call('getWorkspace', 'GET', `/workspaces/${ws}`, { check: has('workspace') });
  const made = (await call('createWorkspace', 'POST', '/workspaces', { body: { name: stamp, description: 'made by npm run smoke' }, check: has('workspace') }))
    .body?.workspace;
  // Changed on the workspace the smoke test made, never on one of the user's.
  await call('updateWorkspace', 'PATCH', `/workspaces/${made?.id}`, {
    body: { description: 'changed by npm run smoke', data_retention_days: 30 },
    check: (b) => (b?.workspace?.data_retention_days === 30 ? undefined : 'the retention was not set'),
  });

  const fleet = (await call('createFleet', 'POST', `/workspaces/${ws}/fleets`, { body: { name: stamp, description: 'npm run smoke' }, check: has('fleet') }))
    .body?.fleet;
  await call('listFleets', 'GET', `/workspaces/${ws}/fleets`, { check: has('fleets') });
  await call('getFleet', 'GET', `/workspaces/${ws}/fleets/${fleet?.id}`, { check: has('fleet') });

  const device = (
    await call('createDevice', 'POST', `/workspaces/${ws}/devices`, { body: { name: stamp, fleet_id: fleet?.id, tags: { gone: 'x' } }, check: has('device') })
  ).body?.device;
  await call('listDevices', 'GET', `/workspaces/${ws}/devices`, { check: has('devices') });
  // Tags merged (one set, one removed: the tag index's put and delete) and the device found by them.
  await call('patchDevice', 'PATCH', `/workspaces/${ws}/devices/${device?.id}`, {
    body: { tags: { smoke: stamp, gone: null } },
    check: (b) => (JSON.stringify(b?.device?.tags) === JSON.stringify({ smoke: stamp }) ? undefined : 'tags not merged'),
  });
  await call('listDevices', 'GET', `/workspaces/${ws}/devices?limit=5&q=${encodeURIComponent(`tags.smoke = "${stamp}" AND NOT EXISTS tags.gone`)}`, {
    check: (b) => (b?.devices?.length === 1 && b.devices[0].id === device?.id && b.next === null ? undefined : 'the search did not find the device alone'),
  });
  await call('getDevice', 'GET', `/workspaces/${ws}/devices/${device?.id}`, { check: has('device') });
  await call('updateDevice', 'PUT', `/workspaces/${ws}/devices/${device?.id}`, {
    body: { name: `${stamp}-renamed`, fleet_id: fleet?.id },
    check: (b) => (b?.device?.name === `${stamp}-renamed` ? undefined : 'not renamed'),
  });

  // A group (a saved query) that matches the renamed device: counted, listed, changed, deleted.
  const group = (
    await call('createGroup', 'POST', `/workspaces/${ws}/groups`, {
      body: { name: stamp, query: `name = "${stamp}-renamed"` },
      expect: 201,
      check: has('group'),
    })
  ).body?.group;
  await call('listGroups', 'GET', `/workspaces/${ws}/groups?limit=10`, { check: has('groups') });
  await call('getGroup', 'GET', `/workspaces/${ws}/groups/${group?.id}`, {
    check: (b) => (b?.group?.device_count === 1 ? undefined : `device_count is ${b?.group?.device_count}, not 1`),
  });
  await call('listGroupDevices', 'GET', `/workspaces/${ws}/groups/${group?.id}/devices`, {
    check: (b) => (b?.devices?.map?.((d: any) => d.id).join() === device?.id ? undefined : 'the group does not list exactly its device'),
  });
  await call('updateGroup', 'PATCH', `/workspaces/${ws}/groups/${group?.id}`, { body: { name: `${stamp}-renamed` }, check: has('group') });
  await call('deleteGroup', 'DELETE', `/workspaces/${ws}/groups/${group?.id}`, { check: has('group') });

  // An alarm rule on the renamed device's fleet: created, listed, changed, disabled and deleted; the
  // alarm list, and an acknowledgement of an alarm the workspace does not hold (no detection runs here).
  const rule = (
    await call('createAlarmRule', 'POST', `/workspaces/${ws}/alarm-rules`, {
      body: { name: stamp, kind: 'offline', severity: 'warning', for_seconds: 60, target: { fleets: [fleet?.id] } },
      expect: 201,
      check: has('alarm_rule'),
    })
  ).body?.alarm_rule;
  await call('listAlarmRules', 'GET', `/workspaces/${ws}/alarm-rules?limit=10`, { check: has('alarm_rules') });
  await call('getAlarmRule', 'GET', `/workspaces/${ws}/alarm-rules/${rule?.id}`, { check: has('alarm_rule') });
  await call('updateAlarmRule', 'PATCH', `/workspaces/${ws}/alarm-rules/${rule?.id}`, {
    body: { enabled: false },
    check: (b) => (b?.alarm_rule?.enabled === false ? undefined : 'not disabled'),
  });
  await call('listAlarms', 'GET', `/workspaces/${ws}/alarms?rule=${rule?.id}`, { check: (b) => (Array.isArray(b?.alarms) ? undefined : 'no alarms list') });
  await call('acknowledgeAlarm', 'POST', `/workspaces/${ws}/alarms/alm-${'0'.repeat(20)}/acknowledge`, { body: { note: stamp }, expect: 404 });
  await call('deleteAlarmRule', 'DELETE', `/workspaces/${ws}/alarm-rules/${rule?.id}`, { check: has('alarm_rule') });

  // The device's desired state (spec/fleet-state.md §3): set, then read; the device reports it below.
  await call('patchDeviceState', 'PATCH', `/workspaces/${ws}/devices/${device?.id}/state`, {
    body: { desired: { smoke: stamp } },
    check: (b) => (b?.state?.version === 1 && b.state.delta?.smoke === stamp ? undefined : 'desired state not set'),
  });
  await call('getDeviceState', 'GET', `/workspaces/${ws}/devices/${device?.id}/state`, { check: has('state') });

  const created = (await call('createIdentity', 'POST', `/workspaces/${ws}/devices/${device?.id}/identities`, { check: has('credentials') })).body;
  await call('listIdentities', 'GET', `/workspaces/${ws}/devices/${device?.id}/identities`, { check: has('identities') });

  await call('scheduleJob', 'POST', `/devices/${device?.id}/jobs/smoke`, {
    body: { value: { from: 'smoke' } },
    check: (b) => (b?.job?.status === 'pending' ? undefined : 'job not pending'),
  });
  await call('listJobs', 'GET', `/devices/${device?.id}/jobs?status=pending`, { check: has('jobs') });
  await call('getJob', 'GET', `/devices/${device?.id}/jobs/smoke`, { check: has('job') });
  const onFleet = (b: any) =>
    b?.job?.devices?.includes?.(device?.id) || b?.job?.devices?.some?.((d: any) => d?.id === device?.id || d === device?.id)
      ? undefined
      : 'the fleet’s device is not in the answer';
  // The dry run (issue 33's guard): the fleet's count, nothing scheduled.
  await call('scheduleFleetJob', 'POST', `/workspaces/${ws}/jobs/smoke-dry?fleet=${fleet?.id}&dry_run=true`, {
    body: { value: {} },
    check: (b) => (b?.dry_run === true && b.targets >= 1 && b.fleet_ids?.[0] === fleet?.id ? undefined : `not a dry run's count: ${JSON.stringify(b)}`),
  });
  await call('scheduleFleetJobSingular', 'POST', `/workspace/${ws}/jobs/smoke-fleet?fleet=${fleet?.id}`, { body: { value: {} }, check: onFleet });
  const rolloutId = (
    await call('scheduleFleetJob', 'POST', `/workspaces/${ws}/jobs/smoke-fleets?fleet=${fleet?.id}`, {
      body: { value: {}, rollout: { max_per_minute: 1 } },
      check: onFleet,
    })
  ).body?.job?.rollout_id;
  const rollout = `/workspaces/${ws}/rollouts/${rolloutId}`;
  const inStatus = (status: string) => (b: any) => (b?.rollout?.status === status ? undefined : `the rollout is ${b?.rollout?.status}, not ${status}`);
  await call('listRollouts', 'GET', `/workspaces/${ws}/rollouts?limit=10`, {
    check: (b) => (b?.rollouts?.some?.((r: any) => r.id === rolloutId) ? undefined : 'the new rollout is not listed'),
  });
  await call('getRollout', 'GET', rollout, { check: has('rollout') });
  await call('listRolloutDevices', 'GET', `${rollout}/devices`, { check: has('devices') });
  await call('pauseRollout', 'POST', `${rollout}/pause`, { check: inStatus('paused') });
  await call('resumeRollout', 'POST', `${rollout}/resume`, { check: inStatus('in_progress') });
  await call('cancelRollout', 'POST', `${rollout}/cancel`, { check: inStatus('canceled') });
  await call('scheduleJob', 'POST', `/devices/${device?.id}/jobs/smoke-cancel`, { body: { value: {}, timeout_seconds: 3600 }, quiet: true });
  await call('cancelJob', 'DELETE', `/devices/${device?.id}/jobs/smoke-cancel`, {
    check: (b) => (b?.job?.status === 'canceled' ? undefined : 'job not canceled'),
  });
  // The fleet-wide desired state (a rollout of kind state), on the smoke's own device only (q=).
  await call('changeFleetState', 'PATCH', `/workspaces/${ws}/state?fleet=${fleet?.id}&q=${encodeURIComponent(`name = "${stamp}-renamed"`)}`, {
    body: { desired: { smoke: stamp } },
    check: (b) =>
      b?.state_change?.rollout_id && b.state_change.devices?.join?.() === device?.id ? undefined : 'the state change does not name exactly its device',
  });
  await call('scheduleFleetFota', 'POST', `/workspaces/${ws}/fota/smoke-fw/versions/0.0.1?fleet=${fleet?.id}`, { check: has('fota') });
  await call('scheduleFota', 'POST', `/devices/${device?.id}/fota/smoke-fw/versions/0.0.2`, {
    check: (b) => (b?.fota?.status === 'pending' ? undefined : 'FOTA not pending'),
  });
  await call('getFota', 'GET', `/devices/${device?.id}/fota`, { check: has('fota') });

  // A firmware image through S3: registered, uploaded with its presigned PUT, checked ready, listed, deleted.
  const image = Buffer.from(`firmware image of ${stamp}`);
  const firmwarePath = `/workspaces/${ws}/firmwares/smoke-fw/versions/${stamp}`;
  const registered = await call('registerFirmware', 'POST', firmwarePath, {
    body: { size: image.length, sha256: createHash('sha256').update(image).digest('hex') },
    expect: 201,
    check: (b) => (b?.firmware?.upload?.url ? undefined : 'no upload URL'),
  });
  const upload = registered.body?.firmware?.upload;
  if (upload) {
    const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: image });
    if (put.status !== 200) failures.push(`the firmware upload to S3 answered ${put.status}: ${(await put.text()).slice(0, 300)}`);
    log(`${put.status === 200 ? 'ok  ' : 'FAIL'} PUT <presigned S3 URL> → ${put.status}`);
  }
  await call('getFirmware', 'GET', firmwarePath, { check: (b) => (b?.firmware?.status === 'ready' ? undefined : `not ready: ${b?.firmware?.status}`) });
  await call('listFirmwares', 'GET', `/workspaces/${ws}/firmwares`, { check: has('firmwares') });
  await call('deleteFirmware', 'DELETE', firmwarePath, { check: has('firmware') });

  // The device's side, with a token signed by its new identity (HS256, as device clients sign).
  const credentials = created?.credentials;
  const token = credentials
    ? await new SignJWT({ sub: credentials.devinfo.device_id, key: credentials.devinfo.key_id })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setExpirationTime(Math.floor(Date.now() / 1000) + 600)
        .sign(Buffer.from(credentials.prvkey, 'base64'))
    : 'none';
  const asDevice = { authorization: `Bearer ${token}` };
  const timestamp = new Date(Date.now() - 1000).toISOString();
  await call('publishData', 'POST', '/device/data', {
    headers: asDevice,
    body: { tag: 'smoke', payload: { ok: true, n: 1 }, timestamp_device: timestamp },
    expect: 202,
  });
  await call('reportDeviceEvents', 'POST', '/device/events', { headers: asDevice, body: { type: 'os_info', payload: { smoke: true } }, expect: 202 });
  await call('getDeviceStatus', 'GET', '/device/status', {
    headers: asDevice,
    check: (b) => (b?.jobs?.some?.((j: any) => j.name === 'smoke') ? undefined : 'the pending job is not listed'),
  });
  await call('reportDeviceState', 'POST', '/device/state', {
    headers: asDevice,
    body: { reported: { smoke: stamp } },
    check: (b) => (b?.state?.reported?.smoke === stamp && Object.keys(b.state.delta ?? {}).length === 0 ? undefined : 'reported state not kept'),
  });
  await call('getDeviceSideState', 'GET', '/device/state', {
    headers: asDevice,
    check: (b) => (b?.state?.desired?.smoke === stamp ? undefined : 'desired state not seen by the device'),
  });
  await call('reportJobResult', 'POST', '/device/jobs/smoke/result', {
    headers: asDevice,
    body: { result: { ok: true } },
    check: (b) => (b?.job?.status === 'done' ? undefined : 'job not done'),
  });
  await call('reportFotaResult', 'POST', '/device/fota/result', {
    headers: asDevice,
    body: { status: 'done' },
    check: (b) => (b?.fota?.status === 'done' ? undefined : 'FOTA not done'),
  });
  // A condition opened and closed over HTTPS (spec/fleet-state.md §4), then read back in the workspace's list.
  await call('reportCondition', 'POST', '/device/conditions', {
    headers: asDevice,
    body: { uuid: stamp, tag: 'smoke', payload: { ok: false } },
    check: (b) => (b?.condition?.status === 'open' ? undefined : 'condition not open'),
  });
  await call('reportCondition', 'POST', '/device/conditions', {
    headers: asDevice,
    body: { uuid: stamp, finish_payload: { ok: true } },
    check: (b) => (b?.condition?.status === 'closed' ? undefined : 'condition not closed'),
  });
  await call('scheduleFota', 'POST', `/devices/${device?.id}/fota/smoke-fw/versions/0.0.3`, { body: { timeout_seconds: 3600 }, quiet: true });
  await call('cancelFota', 'DELETE', `/devices/${device?.id}/fota`, { check: (b) => (b?.fota?.status === 'canceled' ? undefined : 'FOTA not canceled') });
  await call('listDeviceEvents', 'GET', `/workspaces/${ws}/devices/${device?.id}/events?limit=10`, { check: has('events') });
  await call('getOverview', 'GET', `/workspaces/${ws}/overview`, { check: has('overview') });
  await call('listConditions', 'GET', `/workspaces/${ws}/conditions?device=${device?.id}&status=closed&limit=10`, {
    check: (b) => (b?.conditions?.some?.((c: any) => c.uuid === stamp && c.finish_payload?.ok === true) ? undefined : 'the closed condition is not listed'),
  });

  // The published point comes back through ingest and the storage query.
  const query = `/timeseries/${ws}/data?device=${device?.id}&tag=smoke`;
  const deadline = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    const answer = await call('queryTimeseries', 'GET', query, { quiet: true });
    if (answer.status !== 200 || answer.body?.result?.length) {
      if (answer.status === 200) log(`ok   queryTimeseries GET ${query.split('?')[0]} → 200 (the published point came back)`);
      break;
    }
    if (Date.now() > deadline) {
      failures.push(`queryTimeseries GET ${query}: the published point did not come back within ${timeoutMs / 1000} s`);
      break;
    }
    // Ingest is asynchronous (device API → queue → ingest Lambda): poll to the deadline.
    await new Promise((resolve) => setTimeout(resolve, delay));
  }

  // The same point, aggregated: one bucket that counts it.
  await call('aggregateTimeseries', 'GET', `/timeseries/${ws}/aggregate?device=${device?.id}&tag=smoke&field=n&fn=count,sum&every=1d`, {
    check: (b) => (b?.buckets?.[0]?.count === 1 && b.buckets[0].sum === 1 ? undefined : `not one bucket counting the point: ${JSON.stringify(b?.buckets)}`),
  });

  // The same point, exported: an export through the queue and S3, polled until ready, its file downloaded with the presigned GET.
  const exportsPath = `/timeseries/${ws}/exports`;
  const started = (
    await call('createExport', 'POST', exportsPath, { body: { format: 'csv', device: [device?.id], tag: ['smoke'] }, expect: 202, check: has('export') })
  ).body?.export;
  let exported: any;
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    exported = (await call('getExport', 'GET', `${exportsPath}/${started?.id}`, { quiet: true, check: has('export') })).body?.export;
    if (exported?.status !== 'running' || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  if (exported?.status !== 'ready' || exported.rows !== 1)
    failures.push(`getExport GET ${exportsPath}/${started?.id}: not ready with the one point: ${JSON.stringify(exported)}`);
  else {
    const file = await fetch(exported.url);
    const text = await file.text();
    if (!file.ok || !text.startsWith('device_id,fleet_id,tag,timestamp_device,timestamp_in,payload\r\n') || !text.includes(device?.id)) {
      failures.push(`the export's download answered ${file.status}: ${text.slice(0, 300)}`);
    } else log(`ok   getExport GET ${exportsPath}/{export_id} → ready, its file downloaded (${text.length} bytes)`);
  }
  await call('listExports', 'GET', exportsPath, {
    check: (b) => (b?.exports?.some?.((e: any) => e.id === started?.id) ? undefined : 'the export is not listed'),
  });

  // The workspace's limits, and its usage of today (the published point is counted once ingest stored it).
  await call('getWorkspaceLimits', 'GET', `/workspaces/${ws}/limits`, {
    check: (b) => (Number.isInteger(b?.limits?.devices) ? undefined : 'no limits.devices'),
  });
  const today = new Date().toISOString().slice(0, 10);
  // Counted as ingest ends its batch, a moment after the point is stored: poll to the deadline.
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    const usage = await call('getWorkspaceUsage', 'GET', `/workspaces/${ws}/usage?start=${today}&end=${today}`, {
      check: (b) => (b?.usage?.days?.length === 1 ? undefined : 'not one day'),
    });
    if (usage.status !== 200 || usage.body?.usage?.totals?.points_stored >= 1) break;
    if (Date.now() > deadline) {
      failures.push(`getWorkspaceUsage GET /workspaces/${ws}/usage: today’s stored point was not counted within ${timeoutMs / 1000} s`);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }

  const secondKey = (await call('createApiKey', 'POST', `/workspaces/${ws}/api-keys`, { body: { name: stamp }, check: has('key') })).body?.api_key;
  await call('listApiKeys', 'GET', `/workspaces/${ws}/api-keys`, { check: has('api_keys') });
  await call('revokeApiKey', 'DELETE', `/workspaces/${ws}/api-keys/${secondKey?.id}`, { check: has('api_key') });

  const integration = (
    await call('createIntegration', 'POST', `/workspaces/${ws}/integrations`, {
      body: { name: stamp, url: 'https://fleetstream-smoke.invalid/hook', enabled: false },
      check: has('secret'),
    })
  ).body?.integration;
  await call('listIntegrations', 'GET', `/workspaces/${ws}/integrations`, { check: has('integrations') });
  await call('getIntegration', 'GET', `/workspaces/${ws}/integrations/${integration?.id}`, { check: has('integration') });
  await call('updateIntegration', 'PATCH', `/workspaces/${ws}/integrations/${integration?.id}`, { body: { tags: ['smoke'] }, check: has('integration') });
  // `.invalid` never resolves (RFC 6761): the test delivery reaches no one and must say it failed.
  await call('testIntegration', 'POST', `/workspaces/${ws}/integrations/${integration?.id}/test`, {
    check: (b) =>
      b?.delivery?.ok === false && b.integration?.status?.last_error ? undefined : `a test to an .invalid host did not fail: ${JSON.stringify(b?.delivery)}`,
  });
  await call('listIntegrationDeliveries', 'GET', `/workspaces/${ws}/integrations/${integration?.id}/deliveries?limit=5`, {
    check: (b) => (b?.deliveries?.[0]?.test === true && b.deliveries[0].ok === false ? undefined : `the test delivery is not logged: ${JSON.stringify(b)}`),
  });
  // Disabled, it has nothing to replay: 409, and the DLQ is not touched (the replay itself: test/e2e/forward/dlq-replay.test.ts).
  await call('replayIntegrationDeadLetters', 'POST', `/workspaces/${ws}/integrations/${integration?.id}/replay`, {
    expect: 409,
    check: (b) => (b?.error?.code === 'conflict' ? undefined : 'not the error envelope'),
  });
  await call('rotateIntegrationSecret', 'POST', `/workspaces/${ws}/integrations/${integration?.id}/secret`, { check: has('secret') });
  await call('deleteIntegration', 'DELETE', `/workspaces/${ws}/integrations/${integration?.id}`);

  // Revoked last: the device's token stops working once the authorizer cache lets it go.
  await call('revokeIdentity', 'DELETE', `/workspaces/${ws}/devices/${device?.id}/identities/${created?.identity?.id}`, {
    check: (b) => (b?.identity?.revoked_at ? undefined : 'not revoked'),
  });
  // Deleted last (spec/fleet-state.md §5): the smoke test's own device with its data points, its fleet (then empty), and the workspace it made (holding none).
  await call('deleteDevice', 'DELETE', `/workspaces/${ws}/devices/${device?.id}?purge=data`, {
    check: (b) => (b?.device?.id === device?.id ? undefined : 'not the device as it was'),
  });
  await call('deleteFleet', 'DELETE', `/workspaces/${ws}/fleets/${fleet?.id}`, { check: has('fleet') });
  await call('deleteWorkspace', 'DELETE', `/workspaces/${made?.id}`, { check: has('workspace') });
  await call('getOpenApi', 'GET', '/openapi.json', { headers: {}, check: (b) => (b?.openapi ? undefined : 'not an OpenAPI document') });
  await call('unknownRoute', 'GET', '/no-such-route', { expect: 404, check: (b) => (b?.error?.code === 'not_found' ? undefined : 'not the error envelope') });
  await call('missingKey', 'GET', '/workspaces', {
    headers: {},
    expect: 401,
    check: (b) => (b?.error?.code === 'unauthorized' ? undefined : 'not the error envelope'),
  });

  const missed = ROUTES.filter((r) => !called.has(r.operationId)).map((r) => `${r.operationId} ${r.method} ${r.path}`);
  for (const route of missed) failures.push(`${route}: not called by the smoke test`);
  const summary = { base_url: base, routes: ROUTES.length, called: ROUTES.length - missed.length, failures };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  log(failures.length ? `${failures.length} failed` : `all ${ROUTES.length} routes answered as expected`);
  process.exit(failures.length ? 1 : 0);
};

/** Runs the smoke test against the API the options name, and exits 0 when every route answered as expected, 1 otherwise. */
export const runSmoke = (options: SmokeOptions) => {
  base = options.url.replace(/\/+$/, '');
  key = options.key;
  timeoutMs = options.timeoutSeconds * 1000;
  return main().catch((error: Error) => {
    log(`failed: ${error.message}`);
    process.exit(1);
  });
};
