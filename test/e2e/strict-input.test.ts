import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { request } from 'node:http';
import type { z } from 'zod';
import { until, waitFor } from '../../local/ports';
import { ROUTES, type Route } from '../../lambdas/routes';
import { OPERATIONS } from '../../lambdas/schemas/operations';
import { openAlarmOn } from '../helpers/alarms';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceToken } from '../helpers/device-token';
import type { LocalRuntime } from '../../local/runtime';
import { startRuntime } from '../helpers/runtime';

// The rules of DESIGN §7 on every row of the route table, through the local gateway: unknown query
// parameters and body fields, a body where none is taken, IDs of another shape, malformed IDs.

let stack: LocalRuntime;
let api: ApiClient;
let token: string;
let credentials: Parameters<typeof deviceToken>[0];
/** This account's resources, by the path parameter that names them. */
let ids: Record<string, string>;
let tables: { db: DynamoDBDocumentClient; names: string[] };

beforeAll(async () => {
  stack = await startRuntime();
  api = forgetting(apiClient(stack.base_url, stack.api_key));
  const ws = stack.workspace_id;
  const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'field' })).body.fleet;
  const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'thermo', fleet_id: fleet.id })).body.device;
  await api.post(`/devices/${device.id}/jobs/reboot`, { value: {} });
  await api.post(`/devices/${device.id}/fota/fw/versions/1.0`);
  await api.post(`/workspaces/${ws}/firmwares/fw/versions/1.0`, { size: 1, sha256: 'd'.repeat(64) });
  const created = (await api.post(`/workspaces/${ws}/devices/${device.id}/identities`)).body;
  // disabled: the forwarder has nothing to deliver, so it writes nothing while the tests compare the tables
  const integration = (await api.post(`/workspaces/${ws}/integrations`, { url: 'http://127.0.0.1:9/hook', enabled: false })).body.integration;
  const key = (await api.post(`/workspaces/${ws}/api-keys`, { name: 'second' })).body.api_key;
  const group = (await api.post(`/workspaces/${ws}/groups`, { name: 'thermos', query: 'name = "thermo"' })).body.group;
  // A rollout (a fleet-wide job): its counts are kept by the registry stream's consumer, in the
  // background; the tests compare the tables once it has counted its one device.
  const rollout = (await api.post(`/workspaces/${ws}/jobs/upgrade?fleet=${fleet.id}`, { value: {} })).body.job.rollout_id as string;
  await until(async () => (await api.get(`/workspaces/${ws}/rollouts/${rollout}`)).body.rollout?.total === 1, 'the rollout counted', 30_000);
  // An export of the (empty) workspace, ended before the tests compare the tables: its run writes it in the background.
  const started = (await api.post(`/timeseries/${ws}/exports`, { format: 'csv' })).body.export;
  await waitFor(async () => {
    if ((await api.get(`/timeseries/${ws}/exports/${started.id}`)).body.export.status === 'running') throw new Error('the export is running');
  }, 'the export to end');
  // An alarm rule and an alarm of it, opened as the detection opens one (on the runtime's own table).
  const rule = (await api.post(`/workspaces/${ws}/alarm-rules`, { name: 'offline', kind: 'offline', severity: 'major', for_seconds: 60 })).body.alarm_rule;
  const { registryDb } = await import('../../lambdas/shared/clients');
  const alarmId = await openAlarmOn(registryDb(), { workspace_id: ws, fleet_id: fleet.id, device_id: device.id }, rule.id);
  credentials = created.credentials;
  token = await deviceToken(credentials);
  ids = {
    workspaceId: ws,
    fleetId: fleet.id,
    deviceId: device.id,
    jobName: 'reboot',
    firmwareId: 'fw',
    firmwareVersion: '1.0',
    keyId: key.id,
    identityId: created.identity.id,
    integrationId: integration.id,
    rolloutId: rollout,
    exportId: started.id,
    groupId: group.id,
    alarmRuleId: rule.id,
    alarmId,
  };
  // The runtime's tables, by the names and engine it gave the handlers (this process's environment).
  const client = new DynamoDBClient({});
  tables = { db: DynamoDBDocumentClient.from(client), names: [process.env.REGISTRY_TABLE!, process.env.TIMESERIES_TABLE!] };
  // A stack's start and an export's first run (on the template: the export Lambda's cold start in its worker) take a while on a busy machine.
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

/**
 * What the API writes for every request it admits, whatever the answer: the keys' per-second
 * request counters (their rates) and the workspaces' usage counters (docs/limits.md). A request
 * refused as invalid is never admitted; one answered 404 was, and counts. Left out by the scan
 * itself: the counters (one a second per caller, the most items of the tables by far) are never
 * sent back to be dropped. Left out too: the alarm rule's backfill item (docs/alarms.md), which
 * its creation writes and the minute sweep deletes in the background while the tests compare.
 */
const NOT_REQUEST_BOOKKEEPING = {
  FilterExpression: 'NOT begins_with(#pk, :rate) AND NOT begins_with(#sk, :usage) AND NOT begins_with(#sk, :backfill)',
  ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
  ExpressionAttributeValues: { ':rate': 'RATE#', ':usage': 'USAGE#', ':backfill': 'ALARMBACKFILL#' },
};

/** Every item of the registry and time-series tables, but the requests' bookkeeping, in a stable order: what "nothing changed" compares. */
const snapshot = async () => {
  const items: string[] = [];
  for (const TableName of tables.names) {
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await tables.db.send(new ScanCommand({ TableName, ExclusiveStartKey, ConsistentRead: true, ...NOT_REQUEST_BOOKKEEPING }));
      items.push(...(page.Items ?? []).map((item) => `${TableName} ${JSON.stringify(item, Object.keys(item).sort())}`));
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey);
  }
  return items.sort();
};

/** A valid body for each operation that takes one, so that only the fault under test can refuse the request. */
const bodyFor = (operationId: string): unknown => {
  if (!OPERATIONS[operationId].body) return undefined;
  const bodies: Record<string, unknown> = {
    createWorkspace: { name: 'w' },
    updateWorkspace: { data_retention_days: 30 },
    createFleet: { name: 'f' },
    createDevice: { name: 'd' },
    updateDevice: { name: 'd', fleet_id: ids.fleetId },
    patchDevice: { tags: { site: 'milan' } },
    createIdentity: { type: 'sym' },
    scheduleJob: { value: { n: 1 } },
    scheduleFleetJob: { value: { n: 1 } },
    scheduleFleetJobSingular: { value: { n: 1 } },
    scheduleFota: {},
    scheduleFleetFota: {},
    publishData: { tag: 't', payload: 1 },
    reportDeviceEvents: { type: 'os_info', payload: {} },
    reportJobResult: { result: {} },
    reportFotaResult: { status: 'done' },
    createApiKey: { name: 'k' },
    createIntegration: { url: 'http://127.0.0.1:9/other' },
    updateIntegration: { name: 'renamed' },
    registerFirmware: { size: 1, sha256: 'c'.repeat(64) },
    createExport: { format: 'csv' },
    createGroup: { name: 'g', query: 'name = "thermo"' },
    updateGroup: { name: 'renamed' },
    createAlarmRule: { name: 'r', kind: 'offline', severity: 'minor', for_seconds: 60 },
    updateAlarmRule: { name: 'renamed' },
    acknowledgeAlarm: { note: 'seen' },
    patchDeviceState: { desired: { interval: 60 } },
    reportDeviceState: { reported: { interval: 60 } },
    reportCondition: { uuid: 'strict-1', tag: 'overheat' },
    changeFleetState: { desired: { interval: 60 } },
  };
  if (!(operationId in bodies)) throw new Error(`the strict-input test has no valid body for ${operationId}: add one to bodyFor`);
  return bodies[operationId];
};

const pathOf = (route: Route, replace: Record<string, string> = {}) =>
  route.path.replace(/\{(\w+)\}/g, (_m, param: string) => {
    const value = replace[param] ?? ids[param];
    if (value === undefined) throw new Error(`the strict-input test has no resource for {${param}}: add one in beforeAll`);
    return encodeURIComponent(value);
  });

/** Sends a request with node:http, which (unlike fetch) sends a body with any method, GET included. */
const send = (method: string, url: string, headers: Record<string, string>, body: string | undefined) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });

/** Calls a route with the credentials its row asks for. */
const call = async (route: Route, { path = pathOf(route), query = '', body = bodyFor(route.operationId) as unknown } = {}) => {
  const credential: Record<string, string> =
    route.auth === 'api-key' ? { 'x-api-key': stack.api_key } : route.auth === 'device' ? { authorization: `Bearer ${token}` } : {};
  const { status, text } = await send(
    route.method,
    `${stack.base_url}${path}${query}`,
    { 'content-type': 'application/json', ...credential },
    body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  );
  return { status, body: text ? JSON.parse(text) : undefined };
};

/**
 * The tables as the last refused request left them, while nothing else has been sent since: the
 * next refusal's "before" (one scan of both tables a refusal, not two). Any other request of the
 * file forgets it (`forgetting`, and `status` below).
 */
let settled: string[] | undefined;

/** The API client, forgetting the settled tables whenever it sends anything. */
const forgetting = (client: ApiClient): ApiClient =>
  new Proxy(client, {
    get: (target, property, receiver) => {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        settled = undefined;
        return value.apply(target, args);
      };
    },
  });

/** Sends a request that must be refused, and checks that no table changed. */
const refused = async (route: Route, request: Parameters<typeof call>[1]) => {
  const before = settled ?? (await snapshot());
  settled = undefined;
  const answer = await call(route, request);
  const after = await snapshot();
  expect(after).toEqual(before);
  settled = after;
  return answer;
};

const rows = ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const);
const withBody = rows.filter(([, r]) => OPERATIONS[r.operationId].body);
const withoutBody = rows.filter(([, r]) => !OPERATIONS[r.operationId].body);

describe('unknown input is refused on every route, and changes nothing', () => {
  it.each(rows)('%s: an unknown query parameter is a 400 naming it', async (_name, route) => {
    const { status, body } = await refused(route, { query: '?zz_typo=1' });

    expect(status).toBe(400);
    expect(body.error).toEqual({ code: 'validation_error', message: expect.any(String), details: [{ field: 'query.zz_typo', message: 'Unknown field.' }] });
  });

  it.each(withBody)('%s: an unknown body field is a 400 naming it', async (_name, route) => {
    const { status, body } = await refused(route, { body: { ...(bodyFor(route.operationId) as object), zz_typo: 1 } });

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'body.zz_typo', message: 'Unknown field.' }]);
  });

  it.each(rows.filter(([, r]) => !OPERATIONS[r.operationId].body))('%s: a body is a 400 naming it (this route takes none)', async (_name, route) => {
    const { status, body } = await refused(route, { body: { zz_typo: 1 } });

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'body', message: expect.stringMatching(/no body/) }]);
  });

  it.each(withoutBody)('%s: even an empty JSON object or a text body is refused with 400, never read', async (_name, route) => {
    const empty = await refused(route, { body: '{}' });
    const text = await refused(route, { body: 'not json' });

    expect([empty.status, text.status]).toEqual([400, 400]);
  });

  it('lists only the named fleets’ devices with ?fleet=, and every device without', async () => {
    const fleets = (await api.get(`/workspaces/${ids.workspaceId}/fleets`)).body.fleets as { id: string; name: string }[];
    const defaultFleet = fleets.find((f) => f.name === 'default')!.id;
    const other = (await api.post(`/workspaces/${ids.workspaceId}/devices`, { name: 'elsewhere' })).body.device;
    const names = async (query: string) =>
      ((await api.get(`/workspaces/${ids.workspaceId}/devices${query}`)).body.devices as { name: string }[]).map((d) => d.name);

    expect(await names(`?fleet=${ids.fleetId}`)).toEqual(['thermo']);
    expect(await names(`?fleet=${defaultFleet}`)).toEqual([other.name]);
    expect(await names(`?fleet=${defaultFleet}&fleet=${ids.fleetId}`)).toEqual(['thermo', 'elsewhere']);
    expect(await names('')).toEqual(['thermo', 'elsewhere']);
  });

  it('a typo in the device list’s query no longer answers every device', async () => {
    const { status, body } = await api.get(`/workspaces/${ids.workspaceId}/devices?flete=${ids.fleetId}`);

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'query.flete', message: 'Unknown field.' }]);
  });
});

/** IDs shaped as in the reference's examples: well-formed, and no one's. */
const EXAMPLE_IDS: Record<string, string> = {
  workspaceId: 'wks-123456789',
  fleetId: 'flt-123456789',
  deviceId: 'dev-doesnotexist1',
  keyId: 'key-123456789',
  identityId: 'idn-123456789',
  integrationId: 'int-123456789',
  rolloutId: 'rol-123456789',
  exportId: 'exp-123456789',
  groupId: 'grp-123456789',
  alarmRuleId: 'alr-123456789',
  alarmId: 'alm-123456789',
};
const ID_PARAMS = Object.keys(EXAMPLE_IDS);
const idCases = ROUTES.flatMap((route) =>
  [...route.path.matchAll(/\{(\w+)\}/g)]
    .map((m) => m[1])
    .filter((p) => ID_PARAMS.includes(p))
    .map((param) => [`${route.method} ${route.path}`, param, route] as const),
);
const shapeOf = (schema: z.ZodType | undefined) => (schema && 'shape' in schema ? (schema.shape as Record<string, unknown>) : {});
const fleetQueryRoutes = rows.filter(([, r]) => 'fleet' in shapeOf(OPERATIONS[r.operationId].query));
const fleetBodyRoutes = rows.filter(([, r]) => 'fleet_id' in shapeOf(OPERATIONS[r.operationId].body));

describe('an ID of another shape is unknown, not invalid', () => {
  it('covers every ID parameter of the route table', () => {
    const params = new Set(ROUTES.flatMap((r) => [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])));

    expect([...params].filter((p) => /Id$/.test(p) && !['firmwareId'].includes(p)).sort()).toEqual([...ID_PARAMS].sort());
    expect(fleetQueryRoutes.length).toBeGreaterThan(0);
    expect(fleetBodyRoutes.length).toBeGreaterThan(0);
  });

  it.each(idCases)('%s with {%s} as in the reference’s examples: 404', async (_name, param, route) => {
    const { status, body } = await refused(route, { path: pathOf(route, { [param]: EXAMPLE_IDS[param] }) });

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  // The longest ID of every allowed character: each store lookup takes any well-formed ID (never a 500).
  it.each(idCases)('%s with {%s} of 64 letters, digits, "_" and "-": 404', async (_name, param, route) => {
    const { status, body } = await refused(route, { path: pathOf(route, { [param]: `Az09_-${'x'.repeat(58)}` }) });

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  it.each(fleetQueryRoutes)('%s with ?fleet= as in the reference’s examples: 404', async (_name, route) => {
    const { status, body } = await refused(route, { query: `?fleet=${ids.fleetId}&fleet=${EXAMPLE_IDS.fleetId}` });

    expect(status).toBe(404);
    expect(body.error.message).toContain(EXAMPLE_IDS.fleetId);
  });

  it.each(fleetBodyRoutes)('%s with fleet_id as in the reference’s examples: 404', async (_name, route) => {
    const { status, body } = await refused(route, { body: { ...(bodyFor(route.operationId) as object), fleet_id: EXAMPLE_IDS.fleetId } });

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  it('answers an empty page for a storage query filtered by an unknown device (a filter, not a lookup)', async () => {
    const { status, body } = await api.get(`/timeseries/${ids.workspaceId}/data?device=${EXAMPLE_IDS.deviceId}`);

    expect([status, body]).toEqual([200, { result: [] }]);
  });
});

describe('what cannot be an ID at all is a 400 naming it', () => {
  it.each(idCases.flatMap(([name, param, route]) => ['x'.repeat(65), 'bad!id', 'wks.1'].map((value) => [name, param, value, route] as const)))(
    '%s with {%s} = %j',
    async (_name, param, value, route) => {
      const { status, body } = await refused(route, { path: pathOf(route, { [param]: value }) });

      expect(status).toBe(400);
      expect(body.error.details).toEqual([{ field: `path.${param}`, message: expect.stringMatching(/Must be an ID/) }]);
    },
  );

  it.each(fleetQueryRoutes)('%s with an empty ?fleet=', async (_name, route) => {
    const { status, body } = await refused(route, { query: '?fleet=' });

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'query.fleet.0', message: expect.stringMatching(/Must be an ID/) }]);
  });

  it.each(fleetBodyRoutes)('%s with a fleet_id of other characters', async (_name, route) => {
    const { status, body } = await refused(route, { body: { ...(bodyFor(route.operationId) as object), fleet_id: 'flt 1' } });

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'body.fleet_id', message: expect.stringMatching(/Must be an ID/) }]);
  });
});

describe('storage query range', () => {
  it('answers 400 naming start when start is after end, rather than an empty page', async () => {
    const { status, body } = await api.get(`/timeseries/${ids.workspaceId}/data?start=2026-02-02T00:00:00Z&end=2026-02-01T00:00:00Z`);

    expect(status).toBe(400);
    expect(body.error.details).toEqual([{ field: 'query.start', message: 'Must not be after end.' }]);
  });
});

describe('a refused device token', () => {
  const status = async (bearer: string) => {
    settled = undefined;
    const response = await fetch(`${stack.base_url}/device/status`, { headers: { authorization: `Bearer ${bearer}` } });
    return { status: response.status, body: (await response.json()) as { error: { code: string; details: unknown[] } } };
  };
  const forged = () => ({ ...credentials, prvkey: Buffer.alloc(32, 7).toString('base64') });

  it.each([
    ['expired', { expiresIn: -600 }, /token expired/],
    ['living longer than allowed', { expiresIn: 24 * 3600 }, /token lifetime exceeds 3600 s/],
  ])('signed by the device’s key but %s: 401 saying why', async (_name, options, reason) => {
    const answer = await status(await deviceToken(credentials, options));

    expect(answer.status).toBe(401);
    expect(answer.body.error).toEqual({
      code: 'unauthorized',
      message: expect.any(String),
      details: [{ field: 'header.authorization', message: expect.stringMatching(reason) }],
    });
  });

  it('of a revoked identity, signed by its key: 401 saying so; forged for that identity: the generic 401', async () => {
    const { credentials: revoked, identity } = (await api.post(`/workspaces/${ids.workspaceId}/devices/${ids.deviceId}/identities`)).body;
    await api.delete(`/workspaces/${ids.workspaceId}/devices/${ids.deviceId}/identities/${identity.id}`);

    const signed = await status(await deviceToken(revoked));
    const forgery = await status(await deviceToken({ ...revoked, prvkey: forged().prvkey }));

    expect(signed.status).toBe(401);
    expect(signed.body.error.details).toEqual([{ field: 'header.authorization', message: expect.stringMatching(/identity revoked/) }]);
    expect(forgery.status).toBe(401);
    expect(forgery.body.error.details).toEqual([]);
  });

  it.each([
    ['signed with another key', async () => deviceToken(forged())],
    ['expired and signed with another key', async () => deviceToken(forged(), { expiresIn: -600 })],
    ['malformed', async () => 'not.a.jwt'],
  ])('%s: the one generic 401, with no reason', async (_name, tokenOf) => {
    const answer = await status(await tokenOf());

    expect(answer.status).toBe(401);
    expect(answer.body.error).toEqual({ code: 'unauthorized', message: expect.any(String), details: [] });
  });
});
