import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { ROUTES } from '../../lambdas/routes';
import { OPERATIONS, buildOpenApi } from '../../lambdas/schemas/openapi';

const committed = JSON.parse(readFileSync(new URL('../../lambdas/handlers/openapi/openapi.json', import.meta.url), 'utf8'));

describe('OpenAPI document', () => {
  it('is current: the committed file equals what the schemas generate (run `npm run openapi`)', () => {
    expect(committed).toEqual(buildOpenApi());
  });

  it('has exactly the route table’s operations, each at its path and method', () => {
    const documented = Object.entries(committed.paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
    );

    expect(documented.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path} ${r.operationId}`).sort());
    expect(Object.keys(OPERATIONS).sort()).toEqual(ROUTES.map((r) => r.operationId).sort());
  });

  it('lets every management and storage route take an API key or a session (a bearer access token), device routes a device token', () => {
    expect(committed.security).toEqual([{ apiKey: [] }, { session: [] }]);
    expect(committed.components.securitySchemes.session).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    for (const route of ROUTES) {
      const op = committed.paths[route.path][route.method.toLowerCase()];
      if (route.auth === 'api-key')
        expect(op.security).toBeUndefined(); // the document's default: either one
      else expect(op.security).toEqual(route.auth === 'device' ? [{ deviceToken: [] }] : []);
    }
  });

  it('resolves every $ref to a component', () => {
    const refs = [...JSON.stringify(committed).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);

    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(committed.components.schemas).toHaveProperty([ref]);
  });
});

/** The statuses each operation can answer, derived here from what the route table and the domain say, not from the generator. */
const CONFLICTS = new Set([
  'reportJobResult',
  'reportCondition',
  'reportFotaResult',
  'updateWorkspace',
  'scheduleFota',
  'scheduleFleetFota',
  // a group (group=) deleted while the rollout is created
  'scheduleFleetJob',
  'scheduleFleetJobSingular',
  'changeFleetState',
  'registerFirmware',
  'deleteFirmware',
  'cancelJob',
  'cancelFota',
  'pauseRollout',
  'resumeRollout',
  'cancelRollout',
  'replayIntegrationDeadLetters',
  'deleteGroup',
  // spec/fleet-state.md §4: a rule changed meanwhile; an alarm already closed.
  'updateAlarmRule',
  'deleteAlarmRule',
  'acknowledgeAlarm',
  'patchDeviceState',
  // spec/fleet-state.md §5: a fleet or workspace that holds devices; a device into a fleet being deleted.
  'deleteWorkspace',
  'deleteFleet',
  'createDevice',
  'updateDevice',
  'patchDevice',
]);
/** The operations that create what a workspace's quota counts, and the device API's publish (a device's daily points). */
const QUOTAS = new Set([
  'createWorkspace',
  'createDevice',
  'createFleet',
  'createApiKey',
  'createIntegration',
  'createGroup',
  'createAlarmRule',
  'createIdentity',
  'registerFirmware',
  'createExport',
  'scheduleFleetJob',
  'scheduleFleetJobSingular',
  'scheduleFleetFota',
  'changeFleetState',
  'publishData',
  'reportDeviceEvents',
  'getDeviceStatus',
  'getDeviceSideState',
  'reportDeviceState',
  'reportCondition',
  'reportJobResult',
  'reportFotaResult',
]);

describe('OpenAPI statuses', () => {
  const operations = ROUTES.map((route) => [route.operationId, route, committed.paths[route.path][route.method.toLowerCase()]] as const);

  it.each(operations)('%s lists exactly the statuses it can answer', (operationId, route, documented) => {
    const op = OPERATIONS[operationId];
    const expected = [
      String(op.status ?? 200),
      '400',
      ...(route.auth === 'none' ? [] : ['401']),
      '403', // the firewall's, in front of every route
      ...(route.path.includes('{') || route.auth === 'device' ? ['404'] : []),
      ...(CONFLICTS.has(operationId) ? ['409'] : []),
      '413',
      '414',
      ...(op.body ? ['415'] : []),
      '429',
      '431',
      '500',
    ];

    expect(Object.keys(documented.responses).sort()).toEqual(expected.sort());
  });

  it('documents 403 on every operation, the firewall’s, and no other: no authorizer answers Deny but for a refused device token, a 401', () => {
    for (const [, , documented] of operations) {
      expect(documented.responses['403'].description).toMatch(/^The API’s firewall blocked the caller’s address/);
    }
  });

  it.each(operations)('%s answers every error in the error envelope, with the code of its status', (operationId, _route, documented) => {
    const codes: Record<string, string[]> = {
      400: ['validation_error', 'bad_request'],
      401: ['unauthorized'],
      403: ['forbidden'],
      404: ['not_found'],
      409: ['conflict'],
      413: ['payload_too_large'],
      414: ['bad_request'],
      415: ['unsupported_media_type'],
      // Every route may meet a rate (the key's, or the API's own) and a busy store; only those that count against a quota answer quota_exceeded.
      429: ['throttled', 'rate_limited', ...(QUOTAS.has(operationId) ? ['quota_exceeded'] : [])],
      431: ['bad_request'],
      500: ['internal_error'],
    };
    for (const [status, answer] of Object.entries(documented.responses as Record<string, { content: Record<string, { schema: { allOf?: unknown[] } }> }>)) {
      if (Number(status) < 400) continue;
      expect(answer.content['application/json'].schema.allOf).toEqual([
        { $ref: '#/components/schemas/Error' },
        { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes[status] } } } } },
      ]);
    }
  });

  it('marks a body required only where an absent body (read as {}) is refused', () => {
    const required = Object.fromEntries(operations.filter(([, , d]) => d.requestBody).map(([id, , d]) => [id, d.requestBody.required]));

    expect(required).toMatchObject({
      createIdentity: false,
      scheduleJob: false,
      reportJobResult: false,
      createWorkspace: true,
      publishData: true,
      updateIntegration: true,
    });
  });
});

describe('OpenAPI request schemas are as strict as validation', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(committed, 'openapi');
  const pointer = (...parts: string[]) => `openapi#/${parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
  const routeOf = (operationId: string) => ROUTES.find((r) => r.operationId === operationId)!;

  /** Whether the document accepts a body for the operation. */
  const documentAcceptsBody = (operationId: string, body: unknown) => {
    const route = routeOf(operationId);
    const validate = ajv.getSchema(pointer('paths', route.path, route.method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema'))!;
    return validate(body) as boolean;
  };
  /** Whether the document accepts a parameter value (query integers as the numbers they spell). */
  const documentAcceptsParameter = (operationId: string, name: string, value: string | string[]) => {
    const route = routeOf(operationId);
    const parameters = committed.paths[route.path][route.method.toLowerCase()].parameters as { name: string; schema: { type: string } }[];
    const index = parameters.findIndex((p) => p.name === name);
    if (index < 0) return false; // an undocumented parameter
    const validate = ajv.getSchema(pointer('paths', route.path, route.method.toLowerCase(), 'parameters', String(index), 'schema'))!;
    const typed = parameters[index].schema.type === 'integer' && /^-?\d+$/.test(String(value)) ? Number(value) : value;
    return validate(typed) as boolean;
  };
  /** Whether the handler's validation (the operation's zod schemas) accepts it. */
  const apiAccepts = (operationId: string, part: 'body' | 'path' | 'query', value: unknown) => {
    const schema = OPERATIONS[operationId][part];
    return schema ? schema.safeParse(value).success : false;
  };

  const far = new Date(Date.now() + 3600_000).toISOString();
  it.each([
    ['createWorkspace', { name: 'ok' }],
    ['createWorkspace', { name: 'ok', extra: 1 }],
    ['createWorkspace', { name: '' }],
    ['createWorkspace', { name: '   ' }],
    ['createWorkspace', { name: 'x'.repeat(128) }],
    ['createWorkspace', { name: 'x'.repeat(129) }],
    ['createWorkspace', { name: 'ok', description: 'x'.repeat(1025) }],
    ['createDevice', { name: 'd', fleet_id: 'flt-123456789' }],
    ['createDevice', { name: 'd', fleet_id: 'bad id!' }],
    ['createDevice', { name: 'd', fleet_id: 'f'.repeat(65) }],
    ['createDevice', { name: 'd', fleet_id: '' }],
    ['updateDevice', { name: 'd' }],
    ['createApiKey', { name: 'k', expires_at: far }],
    ['createApiKey', { name: 'k', expires_at: 'tomorrow' }],
    ['createApiKey', { name: 'k', expires_at: '2030-01-01' }],
    ['createApiKey', { name: 'k', expires_at: '2030-01-01T00:00:00+01:00' }],
    ['createIntegration', { url: 'https://example.com/hook' }],
    ['createIntegration', { url: 'ftp://example.com/hook' }],
    ['createIntegration', { url: 'not a url' }],
    ['createIntegration', { url: 'https://example.com/hook', tags: ['has space'] }],
    ['updateIntegration', {}],
    ['updateIntegration', { enabled: false }],
    ['scheduleJob', {}],
    ['scheduleJob', { value: [] }],
    ['scheduleJob', { value: {}, other: 1 }],
    ['createIdentity', { type: 'rsa' }],
    ['publishData', { tag: 't', payload: 1 }],
    ['publishData', { tag: 't', payload: 1, timestamp_device: '2026-01-01T00:00:00+01:00' }],
    ['publishData', { tag: 't', payload: 1, timestamp_device: '1969-12-31T23:59:59Z' }],
    ['publishData', { tag: 'has space', payload: 1 }],
    ['publishData', { tag: 't' }],
    ['publishData', { tag: 't', payload: 1, extra: true }],
    ['publishData', []],
    ['publishData', Array.from({ length: 101 }, () => ({ tag: 't', payload: 1 }))],
    ['reportDeviceEvents', { type: 'os_info', payload: {} }],
    ['reportDeviceEvents', { type: 'job', payload: {} }],
    ['reportFotaResult', { status: 'done' }],
    ['reportFotaResult', { status: 'pending' }],
    ['patchDeviceState', { desired: { interval: 60, gone: null } }],
    ['patchDeviceState', { desired: {}, version: 1.5 }],
    ['patchDeviceState', { desired: {}, extra: 1 }],
    ['reportDeviceState', { reported: { interval: 60 } }],
    ['reportDeviceState', { reported: [] }],
    ['reportCondition', { uuid: 'c-1', tag: 'overheat' }],
    ['reportCondition', { uuid: 'c-1', tag: 'overheat', payload: { t: 9 }, start: '2026-01-01T00:00:00Z' }],
    ['reportCondition', { uuid: 'c-1', finish_payload: null, finish: '2026-01-01T00:00:00Z' }],
    ['reportCondition', { uuid: 'c-1', tag: 'overheat', finish: '2026-01-01T00:00:00Z' }],
    ['reportCondition', { uuid: '', tag: 'overheat' }],
    ['reportCondition', { tag: 'overheat' }],
  ])('%s: the document and the API agree on the body %j', (operationId, body) => {
    expect(documentAcceptsBody(operationId, body)).toBe(apiAccepts(operationId, 'body', body));
  });

  it.each([
    ['getWorkspace', 'workspaceId', 'wks-123456789'],
    ['getWorkspace', 'workspaceId', 'x'.repeat(64)],
    ['getWorkspace', 'workspaceId', 'x'.repeat(65)],
    ['getWorkspace', 'workspaceId', 'wks 1'],
    ['getWorkspace', 'workspaceId', 'wks#1'],
    ['getDevice', 'deviceId', 'dev-doesnotexist1'],
    ['getJob', 'jobName', 'fw.1-2_3'],
    ['getJob', 'jobName', 'has/slash'],
  ])('%s: the document and the API agree on the path parameter %s = %j', (operationId, name, value) => {
    const other = Object.fromEntries(Object.keys(OPERATIONS[operationId].path!.shape).map((k) => [k, k === 'jobName' ? 'job' : 'x-1']));

    expect(documentAcceptsParameter(operationId, name, value)).toBe(apiAccepts(operationId, 'path', { ...other, [name]: value }));
  });

  it.each([
    ['queryTimeseries', 'size', '175000'],
    ['queryTimeseries', 'size', '175001'],
    ['queryTimeseries', 'size', '-1'],
    ['queryTimeseries', 'from', '1000000000'],
    ['queryTimeseries', 'from', '1000000001'],
    ['queryTimeseries', 'sort', 'timestamp_in'],
    ['queryTimeseries', 'start', '2021-07-08T14:21:15.915Z'],
    ['queryTimeseries', 'start', '2021-07-08'],
    ['queryTimeseries', 'device', ['dev-doesnotexist1']],
    ['queryTimeseries', 'device', ['bad id']],
    ['queryTimeseries', 'stauts', 'x'],
    ['queryTimeseries', 'fleet', ['flt-123456789']],
    ['queryTimeseries', 'fleet', ['bad id']],
    ['aggregateTimeseries', 'every', '15m'],
    ['aggregateTimeseries', 'every', '31d'],
    ['aggregateTimeseries', 'every', '7m'],
    ['aggregateTimeseries', 'every', '24h'],
    ['aggregateTimeseries', 'fn', 'avg,min,max'],
    ['aggregateTimeseries', 'fn', 'avg,median'],
    ['aggregateTimeseries', 'fn', 'avg,'],
    ['aggregateTimeseries', 'field', 'env.temp'],
    ['aggregateTimeseries', 'field', 'env..temp'],
    ['aggregateTimeseries', 'field', 'a.b.c.d.e.f.g.h.i'],
    ['aggregateTimeseries', 'tz', 'Europe/Rome'],
    ['aggregateTimeseries', 'group_by', 'device'],
    ['aggregateTimeseries', 'group_by', 'fleet'],
    ['aggregateTimeseries', 'limit', '10000'],
    ['aggregateTimeseries', 'limit', '10001'],
    ['aggregateTimeseries', 'limit', '0'],
    ['listJobs', 'status', 'done'],
    ['listJobs', 'status', 'failed'],
    ['listJobs', 'stauts', 'done'],
    ['scheduleFleetJob', 'fleet', ['flt-123456789']],
    ['scheduleFleetJob', 'fleet', ['']],
    ['scheduleFleetJob', 'fleet', Array.from({ length: 101 }, (_, i) => `flt-${i}`)],
    ['listDevices', 'fleet', ['flt-123456789']],
    ['listConditions', 'min_duration_seconds', '0'],
    ['listConditions', 'min_duration_seconds', '31622400'],
    ['listConditions', 'min_duration_seconds', '31622401'],
    ['listConditions', 'min_duration_seconds', '-1'],
    ['listConditions', 'status', 'closed'],
    ['listConditions', 'status', 'acknowledged'],
    ['listConditions', 'start', '2026-01-01T00:00:00Z'],
    ['listConditions', 'end', '2026-01-01'],
  ])('%s: the document and the API agree on the query parameter %s = %j', (operationId, name, value) => {
    expect(documentAcceptsParameter(operationId, name, value)).toBe(apiAccepts(operationId, 'query', { [name]: value }));
  });
});
