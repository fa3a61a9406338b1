/**
 * Groups (spec/fleet-state.md §2): saved queries of the device search on `npm start`. A group's
 * count and devices are its query evaluated at the request, so a device joins or leaves it by its
 * tags or fleet at once; another account's group is 404 on every route and a group never lists
 * another account's devices; a malformed query is a 400 that names `body.query` and where, and
 * writes nothing; DELETE is 409 while something holds the group (`used_by`); the quota
 * `limits.groups` holds.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { fleetstreamArgs } from '../helpers/cli';
import { registryReader } from '../helpers/fuzz/registry-snapshot';
import { findRuntime } from '../../local/runtime-file';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';

const run = promisify(execFile);

let stack: LocalStack;
let api: ApiClient;
let ws: string;
let registry: ReturnType<typeof registryReader>;
let doc: DynamoDBDocumentClient;
let table: string;
/** Another account: its own key, workspace and devices, tagged as ours are. */
let other: { api: ApiClient; workspaceId: string; deviceId: string; groupId: string };

const fleetstream = (command: string, ...args: string[]) =>
  run(process.execPath, fleetstreamArgs(command, ['--local', '--data-dir', stack.dataDir, ...args])).then((r) => r.stdout);

const newDevice = async (client: ApiClient, workspaceId: string, name: string, tags: Record<string, string>, fleet_id?: string) => {
  const { status, body } = await client.post(`/workspaces/${workspaceId}/devices`, { name, tags, ...(fleet_id ? { fleet_id } : {}) });
  expect([status, body.device?.tags]).toEqual([200, tags]);
  return body.device.id as string;
};
const retag = async (deviceId: string, tags: Record<string, string | null>) => {
  const { status, body } = await api.call('PATCH', `/workspaces/${ws}/devices/${deviceId}`, { tags });
  expect(status).toBe(200);
  return body.device;
};
const countOf = async (groupId: string) => (await api.get(`/workspaces/${ws}/groups/${groupId}`)).body.group.device_count as number;
const membersOf = async (groupId: string, client = api, workspaceId = ws) =>
  ((await client.get(`/workspaces/${workspaceId}/groups/${groupId}/devices`)).body.devices as Array<{ id: string }>).map((d) => d.id);
const newGroup = async (name: string, query: string) => {
  const { status, body } = await api.post(`/workspaces/${ws}/groups`, { name, query });
  expect(status).toBe(201);
  return body.group.id as string;
};
/** The registry's group items of a workspace, read from the table itself. */
const storedGroups = async (workspaceId = ws) => [...(await registry.snapshot()).keys()].filter((key) => key.startsWith(`WKS#${workspaceId}|GRP#`));

beforeAll(async () => {
  stack = await startLocalStack({ LIMITS_CACHE_SECONDS: '0' }, undefined, { readyTimeoutMs: 170_000 });
  api = apiClient(stack.base_url, stack.api_key);
  ws = stack.workspace_id;
  registry = registryReader(stack.dataDir);
  const { env } = findRuntime(stack.dataDir) as { env: Record<string, string> };
  doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: env.AWS_ENDPOINT_URL_DYNAMODB,
      region: env.AWS_REGION ?? 'us-east-1',
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
    }),
  );
  table = env.REGISTRY_TABLE;
  const made = JSON.parse(await fleetstream('create-account', '--name', 'other')) as { workspace_id: string; api_key: string };
  const theirs = apiClient(stack.base_url, made.api_key);
  const deviceId = await newDevice(theirs, made.workspace_id, 'their-milan', { site: 'milan' });
  const group = (await theirs.post(`/workspaces/${made.workspace_id}/groups`, { name: 'theirs', query: 'tags.site = "milan"' })).body.group;
  other = { api: theirs, workspaceId: made.workspace_id, deviceId, groupId: group.id };
}, 180_000);
afterAll(async () => {
  registry?.close();
  doc?.destroy();
  await stack?.stop();
});

describe('a group', () => {
  it('is created 201 with its query as given, listed, counted now and lists its devices as the device list does', async () => {
    const a = await newDevice(api, ws, 'milan-v2', { site: 'milan', model: 'v2' });
    const b = await newDevice(api, ws, 'milan-v1', { site: 'milan', model: 'v1' });
    await newDevice(api, ws, 'rome-v2', { site: 'rome', model: 'v2' });

    const created = await api.post(`/workspaces/${ws}/groups`, { name: '  Milan boards ', query: 'tags.site = "milan"' });
    const id = created.body.group.id as string;

    expect(created.status).toBe(201);
    expect(created.body.group).toEqual({
      id: expect.stringMatching(/^grp-[0-9a-z]{20}$/),
      name: 'Milan boards',
      query: 'tags.site = "milan"',
      created_at: expect.any(String),
      updated_at: created.body.group.created_at,
      used_by: [],
    });
    expect((await api.get(`/workspaces/${ws}/groups/${id}`)).body.group).toEqual({ ...created.body.group, device_count: 2 });
    const listed = await api.get(`/workspaces/${ws}/groups/${id}/devices`);
    expect(listed.body.devices.map((d: { id: string }) => d.id)).toEqual([a, b]);
    // Each device exactly as the device list answers it.
    const all = (await api.get(`/workspaces/${ws}/devices`)).body.devices as Array<{ id: string }>;
    expect(listed.body.devices).toEqual(all.filter((d) => d.id === a || d.id === b));
    expect((await api.get(`/workspaces/${ws}/groups`)).body.groups.map((g: { id: string }) => g.id)).toContain(id);
  });

  it('pages its devices with limit and cursor, each once, and the group list too', async () => {
    const id = await newGroup('paged', 'tags.batch = "paged"');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await newDevice(api, ws, `paged-${i}`, { batch: 'paged' }));
    await newGroup('paged-2', 'tags.batch = "none"');

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { status, body }: { status: number; body: any } = await api.get(
        `/workspaces/${ws}/groups/${id}/devices?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(status).toBe(200);
      expect(body.devices.length).toBeLessThanOrEqual(2);
      seen.push(...body.devices.map((d: { id: string }) => d.id));
      cursor = body.next;
      pages++;
    } while (cursor);

    expect(seen).toEqual(made);
    expect(pages).toBe(3);
    const first = await api.get(`/workspaces/${ws}/groups?limit=1`);
    expect([first.body.groups.length, typeof first.body.next]).toEqual([1, 'string']);
    expect((await api.get(`/workspaces/${ws}/groups?limit=1000`)).body.next).toBeNull();
    expect((await api.get(`/workspaces/${ws}/groups?cursor=not-ours`)).status).toBe(400);
  });

  it('follows tags and fleets at once: a device joins and leaves by its tags, and by moving fleet', async () => {
    const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'lab' })).body.fleet.id as string;
    const id = await newGroup('turin v3', 'tags.site = "turin" AND tags.model = "v3"');
    const d1 = await newDevice(api, ws, 'turin-1', { site: 'turin', model: 'v3' });
    const d2 = await newDevice(api, ws, 'turin-2', { site: 'turin', model: 'v2' });

    expect([await countOf(id), await membersOf(id)]).toEqual([1, [d1]]);
    await retag(d2, { model: 'v3' });
    expect([await countOf(id), await membersOf(id)]).toEqual([2, [d1, d2]]);
    await retag(d1, { site: null });
    expect([await countOf(id), await membersOf(id)]).toEqual([1, [d2]]);

    const inLab = await newGroup('lab', `fleet_id = "${fleet}"`);
    expect(await countOf(inLab)).toBe(0);
    expect((await api.put(`/workspaces/${ws}/devices/${d1}`, { name: 'turin-1', fleet_id: fleet })).status).toBe(200);
    expect([await countOf(inLab), await membersOf(inLab)]).toEqual([1, [d1]]);
  });

  it('changes its name or query with PATCH, and its members follow the new query', async () => {
    const id = await newGroup('rome', 'tags.site = "rome"');
    const before = (await api.get(`/workspaces/${ws}/groups/${id}`)).body.group;

    const renamed = await api.call('PATCH', `/workspaces/${ws}/groups/${id}`, { name: 'Rome' });
    const requeried = await api.call('PATCH', `/workspaces/${ws}/groups/${id}`, { query: 'tags.site = "nowhere"' });

    expect(renamed.status).toBe(200);
    expect(renamed.body.group).toMatchObject({ name: 'Rome', query: 'tags.site = "rome"' });
    expect(requeried.body.group).toMatchObject({ name: 'Rome', query: 'tags.site = "nowhere"', created_at: before.created_at });
    expect(requeried.body.group.updated_at >= before.updated_at).toBe(true);
    expect(before.device_count).toBe(1);
    expect(await countOf(id)).toBe(0);
    expect(await membersOf(id)).toEqual([]);
  });

  it('refuses a malformed, empty or too long query 400 naming body.query and where, and writes nothing', async () => {
    const id = await newGroup('kept', 'tags.site = "milan"');
    const before = await registry.snapshot();

    const bad = await api.post(`/workspaces/${ws}/groups`, { name: 'bad', query: 'tags.site = = "milan"' });
    const unknownField = await api.post(`/workspaces/${ws}/groups`, { name: 'bad', query: 'colour = "red"' });
    const empty = await api.post(`/workspaces/${ws}/groups`, { name: 'bad', query: '   ' });
    const long = await api.post(`/workspaces/${ws}/groups`, { name: 'bad', query: `name = "${'x'.repeat(2000)}"` });
    const missing = await api.post(`/workspaces/${ws}/groups`, { name: 'bad' });
    const patched = await api.call('PATCH', `/workspaces/${ws}/groups/${id}`, { name: 'changed', query: 'tags.site = ' });
    const nothing = await api.call('PATCH', `/workspaces/${ws}/groups/${id}`, {});

    for (const answer of [bad, unknownField, empty, long, missing, patched, nothing])
      expect([answer.status, answer.body.error.code]).toEqual([400, 'validation_error']);
    expect(bad.body.error.details).toEqual([{ field: 'body.query', message: expect.stringMatching(/\b1[0-3]\b/) }]);
    expect(patched.body.error.details).toEqual([{ field: 'body.query', message: expect.stringMatching(/\d/) }]);
    expect(unknownField.body.error.details[0].field).toBe('body.query');
    expect(await registry.snapshot()).toEqual(before);
    expect((await api.get(`/workspaces/${ws}/groups/${id}`)).body.group).toMatchObject({ name: 'kept', query: 'tags.site = "milan"' });
  });

  it('is deleted with DELETE (then 404), but 409 while something holds it in used_by, and nothing is deleted', async () => {
    const id = await newGroup('held', 'tags.site = "milan"');
    // What a continuous rollout writes when it targets the group (h3's transaction), written here directly.
    const hold = (expression: string) =>
      doc.send(
        new UpdateCommand({
          TableName: table,
          Key: { pk: `WKS#${ws}`, sk: `GRP#${id}` },
          UpdateExpression: expression,
          ExpressionAttributeValues: { ':r': new Set(['rol-000000000000000000001']) },
        }),
      );
    await hold('ADD used_by :r');

    const refused = await api.delete(`/workspaces/${ws}/groups/${id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'conflict', message: expect.stringContaining('rol-000000000000000000001') });
    expect((await api.get(`/workspaces/${ws}/groups/${id}`)).body.group.used_by).toEqual(['rol-000000000000000000001']);

    await hold('DELETE used_by :r');
    const deleted = await api.delete(`/workspaces/${ws}/groups/${id}`);
    expect([deleted.status, deleted.body.group.id, deleted.body.group.used_by]).toEqual([200, id, []]);
    expect((await api.get(`/workspaces/${ws}/groups/${id}`)).status).toBe(404);
    expect((await api.delete(`/workspaces/${ws}/groups/${id}`)).status).toBe(404);
    expect((await api.call('PATCH', `/workspaces/${ws}/groups/${id}`, { name: 'x' })).status).toBe(404);
    expect((await api.get(`/workspaces/${ws}/groups/${id}/devices`)).status).toBe(404);
  });
});

describe('groups and other accounts', () => {
  it('answers 404 to every route with another account’s group, and changes nothing of theirs', async () => {
    const path = `/workspaces/${other.workspaceId}/groups/${other.groupId}`;
    const mineInTheirPath = `/workspaces/${ws}/groups/${other.groupId}`;
    const answers = [
      await api.get(path),
      await api.get(`${path}/devices`),
      await api.call('PATCH', path, { name: 'mine' }),
      await api.delete(path),
      await api.get(mineInTheirPath),
      await api.get(`${mineInTheirPath}/devices`),
      await api.delete(mineInTheirPath),
      await api.get(`/workspaces/${other.workspaceId}/groups`),
      await api.post(`/workspaces/${other.workspaceId}/groups`, { name: 'x', query: 'name = "x"' }),
    ];

    for (const answer of answers) expect([answer.status, answer.body.error.code]).toEqual([404, 'not_found']);
    expect((await other.api.get(path)).body.group).toMatchObject({ name: 'theirs', device_count: 1 });
    expect(await storedGroups(other.workspaceId)).toHaveLength(1);
  });

  it('never lists or counts another account’s devices, whatever their tags', async () => {
    const id = await newGroup('all of milan', 'tags.site = "milan"');

    const mine = await membersOf(id);
    const theirs = await membersOf(other.groupId, other.api, other.workspaceId);

    expect(mine).not.toContain(other.deviceId);
    expect(mine.length).toBeGreaterThan(0);
    expect(await countOf(id)).toBe(mine.length);
    expect(theirs).toEqual([other.deviceId]);
  });
});

describe('the groups quota', () => {
  it('lets exactly `groups` of 6 creates at once through, refuses the rest 429 naming limits.groups, and a delete frees a place', async () => {
    const made = JSON.parse(await fleetstream('create-account', '--name', 'grouper')) as { workspace_id: string; api_key: string };
    await fleetstream('limits', '--workspace', made.workspace_id, '--set', 'groups=2');
    const client = apiClient(stack.base_url, made.api_key);
    const groups = `/workspaces/${made.workspace_id}/groups`;

    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => client.post(groups, { name: `g${i}`, query: `name = "d${i}"` })));
    const created = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status === 429);

    expect([created.length, refused.length]).toEqual([2, 4]);
    expect(refused[0].body.error).toMatchObject({ code: 'quota_exceeded', details: [{ field: 'limits.groups', message: expect.any(String), value: 2 }] });
    expect(await storedGroups(made.workspace_id)).toHaveLength(2);
    expect((await client.get(`/workspaces/${made.workspace_id}/limits`)).body).toMatchObject({ limits: { groups: 2 }, used: { groups: 2 } });
    expect((await client.delete(`${groups}/${created[0].body.group.id}`)).status).toBe(200);
    expect((await client.post(groups, { name: 'again', query: 'name = "d"' })).status).toBe(201);
    expect((await client.post(groups, { name: 'over', query: 'name = "d"' })).status).toBe(429);
  });
});
