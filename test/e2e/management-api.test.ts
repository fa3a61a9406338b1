import { apiClient, type ApiClient } from '../helpers/api-client';
import type { LocalRuntime } from '../../local/runtime';
import { startRuntime } from '../helpers/runtime';
import { waitFor } from '../../local/ports';

let stack: LocalRuntime;
let api: ApiClient;
let ws: string;

beforeAll(async () => {
  stack = await startRuntime({ authorizerCacheTtlSeconds: 1 });
  api = apiClient(stack.base_url, stack.api_key);
  ws = stack.workspace_id;
});
afterAll(async () => {
  await stack?.stop();
});

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('workspaces', () => {
  it('lists the key’s bound workspace first, then the others', async () => {
    const created = await api.post('/workspaces', { name: 'second', description: 'another one' });

    const { status, body } = await api.get('/workspaces');

    expect(created.status).toBe(200);
    expect(status).toBe(200);
    expect(body.workspaces.map((w: { id: string }) => w.id)).toEqual([ws, created.body.workspace.id]);
  });

  it('creates a workspace with exactly the spec’s fields and its default fleet', async () => {
    const { body } = await api.post('/workspaces', { name: 'plant', description: 'north' });
    const workspace = body.workspace;

    const fleets = await api.get(`/workspaces/${workspace.id}/fleets`);

    expect(Object.keys(workspace).sort()).toEqual(['account_id', 'created_at', 'description', 'id', 'name']);
    expect(workspace).toMatchObject({ name: 'plant', description: 'north', account_id: stack.account_id });
    expect(workspace.id).toMatch(/^wks-[0-9a-z]{20}$/);
    expect(workspace.created_at).toMatch(RFC3339_MS);
    expect(fleets.body.fleets.map((f: { name: string }) => f.name)).toEqual(['default']);
    expect((await api.get(`/workspaces/${workspace.id}`)).body).toEqual({ workspace });
  });
});

describe('fleets and devices', () => {
  it('creates, lists and gets fleets', async () => {
    const { body } = await api.post(`/workspaces/${ws}/fleets`, { name: 'field', description: 'outdoor units' });

    const list = await api.get(`/workspaces/${ws}/fleets`);
    const one = await api.get(`/workspaces/${ws}/fleets/${body.fleet.id}`);

    expect(body.fleet).toMatchObject({ name: 'field', description: 'outdoor units', workspace_id: ws, account_id: stack.account_id });
    expect(body.fleet.id).toMatch(/^flt-/);
    expect(list.body.fleets).toContainEqual(body.fleet);
    expect(one.body).toEqual({ fleet: body.fleet });
  });

  it('puts a device without fleet_id in the default fleet with every field filled', async () => {
    const { status, body } = await api.post(`/workspaces/${ws}/devices`, { name: 'thermo-1' });

    expect(status).toBe(200);
    expect(body.device).toEqual({
      id: expect.stringMatching(/^dev-/),
      name: 'thermo-1',
      account_id: stack.account_id,
      fleet_id: expect.stringMatching(/^flt-/),
      fleet_name: 'default',
      workspace_id: ws,
      workspace_name: 'default',
      created_at: expect.stringMatching(RFC3339_MS),
      phys_id: '',
      identities: null,
      // The MQTT door's additive fields, before the device ever connects.
      connected: false,
      last_connected_at: null,
      last_disconnected_at: null,
      manifest: null,
      // Issue 33's additive fields, before the device ever sends data or installs a firmware.
      last_seen_at: null,
      firmware_version: null,
      // Issue 34's additive field: a device given no tags.
      tags: {},
    });
  });

  it('renames a device and moves it to another fleet with PUT', async () => {
    const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'lab' })).body.fleet;
    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'old' })).body.device;

    const { body } = await api.put(`/workspaces/${ws}/devices/${device.id}`, { name: 'new', fleet_id: fleet.id });

    expect(body.device).toMatchObject({ id: device.id, name: 'new', fleet_id: fleet.id, fleet_name: 'lab' });
    expect((await api.get(`/workspaces/${ws}/devices/${device.id}`)).body.device).toEqual(body.device);
    expect((await api.get(`/workspaces/${ws}/devices`)).body.devices).toContainEqual(body.device);
  });

  it('answers 404 for a fleet that does not exist and creates no device', async () => {
    const before = (await api.get(`/workspaces/${ws}/devices`)).body.devices.length;

    const { status, body } = await api.post(`/workspaces/${ws}/devices`, { name: 'x', fleet_id: 'flt-00000000000000000000' });

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
    expect((await api.get(`/workspaces/${ws}/devices`)).body.devices).toHaveLength(before);
  });
});

describe('jobs', () => {
  let fleetA: string;
  let fleetB: string;
  let inA: string[];
  let inB: string;

  beforeAll(async () => {
    const workspace = (await api.post('/workspaces', { name: 'jobs' })).body.workspace;
    ws = workspace.id;
    fleetA = (await api.post(`/workspaces/${ws}/fleets`, { name: 'a' })).body.fleet.id;
    fleetB = (await api.post(`/workspaces/${ws}/fleets`, { name: 'b' })).body.fleet.id;
    inA = [];
    for (const name of ['a1', 'a2']) inA.push((await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: fleetA })).body.device.id);
    inB = (await api.post(`/workspaces/${ws}/devices`, { name: 'b1', fleet_id: fleetB })).body.device.id;
  });
  afterAll(() => {
    ws = stack.workspace_id;
  });

  it('schedules a job on one device as pending, and replaces it when scheduled again', async () => {
    const first = await api.post(`/devices/${inB}/jobs/reboot`, { value: { delay: 5 } });
    const second = await api.post(`/devices/${inB}/jobs/reboot`, { value: { delay: 1 } });

    const got = await api.get(`/devices/${inB}/jobs/reboot`);

    expect(first.body.job).toEqual({ name: 'reboot', status: 'pending', scheduled_at: expect.stringMatching(RFC3339_MS), value: { delay: 5 } });
    expect(second.body.job.value).toEqual({ delay: 1 });
    expect(got.body.job).toEqual(second.body.job);
    expect(Date.parse(second.body.job.scheduled_at)).toBeGreaterThanOrEqual(Date.parse(first.body.job.scheduled_at));
  });

  it('filters the job list by status', async () => {
    await api.post(`/devices/${inB}/jobs/calibrate`, { value: {} });

    const all = await api.get(`/devices/${inB}/jobs`);
    const pending = await api.get(`/devices/${inB}/jobs?status=pending`);
    const done = await api.get(`/devices/${inB}/jobs?status=done`);
    const bad = await api.get(`/devices/${inB}/jobs?status=later`);

    expect(all.body.jobs.map((j: { name: string }) => j.name).sort()).toEqual(['calibrate', 'reboot']);
    expect(pending.body.jobs).toHaveLength(2);
    expect(done.body.jobs).toEqual([]);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('query.status');
  });

  it.each(['workspace', 'workspaces'])('schedules on chosen fleets at /%s/{id}/jobs/{name}', async (segment) => {
    const { status, body } = await api.post(`/${segment}/${ws}/jobs/update-${segment}?fleet=${fleetA}`, { value: { v: 2 } });

    expect(status).toBe(200);
    expect(body.job).toMatchObject({ name: `update-${segment}`, status: 'pending', value: { v: 2 } });
    expect(body.job.devices.sort()).toEqual([...inA].sort());
    for (const id of inA) expect((await api.get(`/devices/${id}/jobs/update-${segment}`)).status).toBe(200);
    expect((await api.get(`/devices/${inB}/jobs/update-${segment}`)).status).toBe(404);
  });

  it('schedules on every fleet when no fleet is named, and on several with a repeated fleet', async () => {
    const all = await api.post(`/workspaces/${ws}/jobs/everyone`, { value: {} });
    const both = await api.post(`/workspaces/${ws}/jobs/both?fleet=${fleetA}&fleet=${fleetB}`, { value: {} });

    expect(all.body.job.devices.sort()).toEqual([...inA, inB].sort());
    expect(both.body.job.devices.sort()).toEqual([...inA, inB].sort());
  });

  it('answers 404 when one named fleet is not the workspace’s and writes no job', async () => {
    const { status } = await api.post(`/workspaces/${ws}/jobs/partial?fleet=${fleetA}&fleet=flt-00000000000000000000`, { value: {} });

    expect(status).toBe(404);
    for (const id of inA) expect((await api.get(`/devices/${id}/jobs/partial`)).status).toBe(404);
  });

  it('converges when a fleet job request is retried', async () => {
    const first = await api.post(`/workspaces/${ws}/jobs/retry?fleet=${fleetB}`, { value: { n: 1 } });
    const again = await api.post(`/workspaces/${ws}/jobs/retry?fleet=${fleetB}`, { value: { n: 1 } });

    const jobs = (await api.get(`/devices/${inB}/jobs`)).body.jobs.filter((j: { name: string }) => j.name === 'retry');

    const { devices, ...job } = again.body.job;
    expect(devices).toEqual(first.body.job.devices);
    expect(jobs).toEqual([job]);
  });

  it('schedules FOTA on a device and on fleets', async () => {
    const before = await api.get(`/devices/${inB}/fota`);
    const one = await api.post(`/devices/${inB}/fota/fw-main/versions/1.2.3`);
    const fleets = await api.post(`/workspaces/${ws}/fota/fw-main/versions/2.0.0?fleet=${fleetA}`);

    expect(before.status).toBe(404);
    expect(one.body.fota).toEqual({
      scheduled_at: expect.stringMatching(RFC3339_MS),
      status: 'pending',
      value: { firmware_id: 'fw-main', firmware_version: '1.2.3' },
    });
    expect((await api.get(`/devices/${inB}/fota`)).body).toEqual(one.body);
    expect(fleets.body.fota.devices.sort()).toEqual([...inA].sort());
    expect((await api.get(`/devices/${inA[0]}/fota`)).body.fota.value.firmware_version).toBe('2.0.0');
  });
});

describe('API keys', () => {
  it('creates a key shown once, lists keys without secrets, and stops a revoked key', async () => {
    const created = await api.post(`/workspaces/${ws}/api-keys`, { name: 'ci' });
    const secret: string = created.body.key;
    const other = apiClient(stack.base_url, secret);

    const works = await other.get('/workspaces');
    const listed = await api.get(`/workspaces/${ws}/api-keys`);
    const revoked = await api.delete(`/workspaces/${ws}/api-keys/${created.body.api_key.id}`);

    expect(secret).toMatch(/^fsk_[A-Za-z0-9_-]{43}$/);
    expect(works.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(listed.body.api_keys).toContainEqual({ ...created.body.api_key });
    expect(revoked.body.api_key.revoked_at).toMatch(RFC3339_MS);
    // the authorizer cache of this stack lives 1 s: the key stops within that time
    await waitFor(
      async () => {
        const { status } = await other.get('/workspaces');
        if (status !== 401) throw new Error(`still ${status}`);
      },
      'revoked key rejection',
      10_000,
    );
  });
});

describe('errors', () => {
  it('answers 401 in the error envelope for a missing or unknown key', async () => {
    const missing = await apiClient(stack.base_url).get('/workspaces');
    const unknown = await apiClient(stack.base_url, 'fsk_nope').get('/workspaces');

    for (const r of [missing, unknown]) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error: { code: 'unauthorized', message: expect.any(String), details: [] }, request_id: expect.any(String) });
    }
  });

  it('answers 404 for an unknown route', async () => {
    const { status, body } = await api.get('/gadgets');

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  it('names each bad field and stores nothing', async () => {
    const before = (await api.get('/workspaces')).body.workspaces.length;

    const { status, body } = await api.post('/workspaces', { name: 'x'.repeat(129), description: 7, extra: true });

    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['body.description', 'body.extra', 'body.name']);
    expect((await api.get('/workspaces')).body.workspaces).toHaveLength(before);
  });

  it('rejects malformed JSON, another content type and oversize bodies', async () => {
    const malformed = await api.call('POST', '/workspaces', '{"name":');
    const text = await api.call('POST', '/workspaces', 'name=x', { 'content-type': 'text/plain' });
    const huge = await api.post(`/devices/dev-00000000000000000000/jobs/big`, { value: { blob: 'x'.repeat(70 * 1024) } });

    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'validation_error']);
    expect([text.status, text.body.error.code]).toEqual([415, 'unsupported_media_type']);
    expect([huge.status, huge.body.error.code]).toEqual([413, 'payload_too_large']);
  });

  it('rejects malformed IDs, bad job names and repeated single-valued parameters with 400', async () => {
    // not-an-id is a well-formed ID that is no one's (a 404); what cannot be an ID at all is a 400
    const badId = await api.get('/workspaces/not%20an%20id');
    const badName = await api.post('/devices/dev-00000000000000000000/jobs/bad%20name', { value: {} });
    const repeated = await api.get('/devices/dev-00000000000000000000/jobs?status=done&status=pending');

    expect(badId.body.error.details[0].field).toBe('path.workspaceId');
    expect(badName.body.error.details[0].field).toBe('path.jobName');
    expect(repeated.body.error.details[0].field).toBe('query.status');
    expect([badId.status, badName.status, repeated.status]).toEqual([400, 400, 400]);
  });

  it('serves the OpenAPI document without a key', async () => {
    const { status, body } = await apiClient(stack.base_url).get('/openapi.json');

    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
  });
});
