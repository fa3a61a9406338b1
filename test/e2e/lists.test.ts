/**
 * Issue 11.1: every list route streams its answer (complete, one valid JSON document, oldest first)
 * whatever its size, and pages when asked (`limit` + `cursor`), each item exactly once; a cursor
 * never crosses lists or accounts. Errors found before the first byte keep their status and the
 * JSON envelope.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { createAccount } from '../../lambdas/domain/tenancy/accounts';
import type { Db } from '../../lambdas/shared/clients';
import { newId } from '../../lambdas/shared/ids';
import { putAll } from '../../lambdas/stores/items';
import { deviceKey, identityKey } from '../../lambdas/stores/keys';
import { runtimeFilePath, type RuntimeFile } from '../../local/runtime-file';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';

let stack: LocalStack;
let api: ApiClient;
let db: Db;
/** Another account, with its own key and workspace. */
let other: { api: ApiClient; workspaceId: string };

beforeAll(async () => {
  stack = await startLocalStack();
  api = apiClient(stack.base_url, stack.api_key);
  // The running stack's engines, as the CLIs find them (its runtime file in its data folder).
  const { env } = JSON.parse(readFileSync(runtimeFilePath(stack.dataDir, Number(new URL(stack.base_url).port)), 'utf8')) as RuntimeFile;
  const client = new DynamoDBClient({
    endpoint: env.AWS_ENDPOINT_URL_DYNAMODB,
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY },
  });
  db = { doc: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }), table: env.REGISTRY_TABLE };
  const account = await createAccount(db, { name: 'other' });
  other = { api: apiClient(stack.base_url, account.api_key), workspaceId: account.workspace_id };
});
afterAll(async () => {
  db?.doc.destroy();
  await stack?.stop();
});

type Item = { id: string; name?: string };

/** GETs a path as raw bytes, so that the test sees the answer exactly as it was sent. */
const getRaw = (path: string, headers: Record<string, string> = {}, key = stack.api_key) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    request(`${stack.base_url}${path}`, { headers: { 'x-api-key': key, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });

/** Walks a list page by page with `limit`, checking each page's shape; returns every item and the number of pages. */
const walk = async (client: ApiClient, path: string, key: string, limit: number) => {
  const items: Item[] = [];
  let pages = 0;
  let cursor: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const { status, body }: { status: number; body: Record<string, any> } = await client.get(
      `${path}${separator}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual([key, 'next'].sort());
    expect(body[key].length).toBeLessThanOrEqual(limit);
    items.push(...body[key]);
    cursor = body.next;
    pages++;
    // A page that says more follows is full.
    if (cursor) expect(body[key]).toHaveLength(limit);
  } while (cursor);
  return { items, pages };
};

const idsOf = (items: Item[]) => items.map((i) => i.id);

describe('a device list larger than one DynamoDB page (1 MB)', () => {
  const DEVICES = 3000;
  let workspaceId: string;
  let fleets: { a: string; b: string };
  let written: Array<{ id: string; fleet_id: string; created_at: string; identities: string[] }>;

  beforeAll(async () => {
    workspaceId = (await api.post('/workspaces', { name: 'large' })).body.workspace.id;
    const defaultFleet = (await api.get(`/workspaces/${workspaceId}/fleets`)).body.fleets[0];
    const b = (await api.post(`/workspaces/${workspaceId}/fleets`, { name: 'b', description: '' })).body.fleet;
    fleets = { a: defaultFleet.id, b: b.id };
    // Written straight into the table (through the API it would take minutes): ~600 bytes each,
    // so the devices span two DynamoDB pages; every third has an identity, every ninth two.
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    written = Array.from({ length: DEVICES }, (_, i) => {
      // Some share a millisecond: ties are ordered by ID, as before.
      const created_at = new Date(t0 + Math.floor(i / 3)).toISOString();
      // Oldest first, ties by ID, as a device's `identities` lists them.
      const identities = i % 3 ? [] : i % 9 ? [newId('idn', created_at)] : [newId('idn', created_at), newId('idn', created_at)].sort();
      return { id: newId('dev', created_at), fleet_id: i % 4 ? fleets.a : fleets.b, created_at, identities };
    });
    const padding = 'p'.repeat(500);
    await putAll(
      db,
      written.flatMap((d, i) => [
        {
          ...deviceKey(workspaceId, d.id),
          id: d.id,
          name: `device ${i}`,
          account_id: stack.account_id,
          workspace_id: workspaceId,
          fleet_id: d.fleet_id,
          phys_id: padding,
          created_at: d.created_at,
        },
        ...d.identities.map((idn) => ({
          ...identityKey(workspaceId, d.id, idn),
          id: idn,
          type: 'sym',
          device_id: d.id,
          workspace_id: workspaceId,
          account_id: stack.account_id,
          created_at: d.created_at,
          secret: 'c2VjcmV0',
        })),
      ]),
      4,
    );
  }, 120_000);

  it('streams every device once, oldest first, with fleet names and identities, as one JSON document', async () => {
    const { status, headers, body } = await getRaw(`/workspaces/${workspaceId}/devices`);

    expect(status).toBe(200);
    expect(headers['content-type']).toBe('application/json');
    // Streamed: sent in chunks as it is read, never measured first.
    expect(headers['transfer-encoding']).toBe('chunked');
    expect(headers['content-length']).toBeUndefined();
    expect(body.length).toBeGreaterThan(1024 * 1024);
    const answer = JSON.parse(body.toString('utf8'));
    expect(Object.keys(answer)).toEqual(['devices']);
    const expected = [...written].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
    expect(idsOf(answer.devices)).toEqual(expected.map((d) => d.id));
    for (const [i, device] of (answer.devices as Array<Record<string, any>>).entries()) {
      expect(device.fleet_name).toBe(expected[i].fleet_id === fleets.a ? 'default' : 'b');
      expect(device.identities?.map((idn: { id: string }) => idn.id) ?? []).toEqual(expected[i].identities);
    }
    expect(body.toString('utf8')).not.toContain('c2VjcmV0');
  });

  it('sends the same document gzipped when the client accepts gzip', async () => {
    const plain = await getRaw(`/workspaces/${workspaceId}/devices`);
    const zipped = await getRaw(`/workspaces/${workspaceId}/devices`, { 'accept-encoding': 'gzip' });

    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(plain.body.length / 4);
    expect(JSON.parse(gunzipSync(zipped.body).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
  });

  it('walks every device exactly once in pages, in the unpaged order', async () => {
    const all = (await api.get(`/workspaces/${workspaceId}/devices`)).body.devices as Item[];

    const { items, pages } = await walk(api, `/workspaces/${workspaceId}/devices`, 'devices', 700);

    expect(pages).toBe(Math.ceil(DEVICES / 700));
    expect(items).toEqual(all);
  });

  it('keeps the fleet filter, streamed and paged', async () => {
    const ofB = written.filter((d) => d.fleet_id === fleets.b).sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));

    const streamed = await api.get(`/workspaces/${workspaceId}/devices?fleet=${fleets.b}`);
    const paged = await walk(api, `/workspaces/${workspaceId}/devices?fleet=${fleets.b}`, 'devices', 300);
    const both = await api.get(`/workspaces/${workspaceId}/devices?fleet=${fleets.b}&fleet=${fleets.a}`);

    expect(idsOf(streamed.body.devices)).toEqual(ofB.map((d) => d.id));
    expect(paged.items).toEqual(streamed.body.devices);
    expect(both.body.devices).toHaveLength(DEVICES);
  });
});

describe('paging every list', () => {
  it('walks workspaces, fleets, API keys, integrations, identities and jobs exactly once each, bound workspace first', async () => {
    const { body: created } = await api.post('/workspaces', { name: 'paged' });
    const ws = created.workspace.id;
    for (let i = 0; i < 4; i++) await api.post(`/workspaces/${ws}/fleets`, { name: `f${i}`, description: '' });
    for (let i = 0; i < 4; i++) await api.post(`/workspaces/${ws}/api-keys`, { name: `k${i}` });
    for (let i = 0; i < 3; i++) await api.post(`/workspaces/${ws}/integrations`, { url: `http://127.0.0.1:9/hook${i}`, enabled: false });
    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'd' })).body.device;
    for (let i = 0; i < 3; i++) await api.post(`/workspaces/${ws}/devices/${device.id}/identities`);
    for (const name of ['b', 'a', 'c', 'e', 'd']) await api.post(`/devices/${device.id}/jobs/${name}`, { value: {} });
    // A revoked identity is still listed.
    await api.delete(
      `/workspaces/${ws}/devices/${device.id}/identities/${(await api.get(`/workspaces/${ws}/devices/${device.id}/identities`)).body.identities[0].id}`,
    );
    const lists: Array<[string, string]> = [
      ['/workspaces', 'workspaces'],
      [`/workspaces/${ws}/fleets`, 'fleets'],
      [`/workspaces/${ws}/api-keys`, 'api_keys'],
      [`/workspaces/${ws}/integrations`, 'integrations'],
      [`/workspaces/${ws}/devices/${device.id}/identities`, 'identities'],
      [`/devices/${device.id}/jobs`, 'jobs'],
    ];

    for (const [path, key] of lists) {
      const whole = await api.get(path);
      const paged = await walk(api, path, key, 2);

      expect(Object.keys(whole.body)).toEqual([key]);
      expect(whole.body[key].length).toBeGreaterThanOrEqual(3);
      expect(paged.items).toEqual(whole.body[key]);
      expect(new Set(paged.items.map((i) => (i as Item).id ?? (i as Item).name)).size).toBe(paged.items.length);
    }
    const workspaces = (await api.get('/workspaces')).body.workspaces as Item[];
    expect(workspaces[0].id).toBe(stack.workspace_id);
    expect(workspaces.slice(1).map((w) => w.id)).toEqual(
      workspaces
        .slice(1)
        .map((w) => w.id)
        .sort(),
    );
    expect((await api.get(`/devices/${device.id}/jobs`)).body.jobs.map((j: Item) => j.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect((await walk(api, `/devices/${device.id}/jobs?status=pending`, 'jobs', 1)).items).toHaveLength(5);
    expect((await walk(api, '/workspaces', 'workspaces', 1)).items[0].id).toBe(stack.workspace_id);
  });

  it('answers a page and null when nothing follows, and a cursor alone reads the rest', async () => {
    const ws = (await api.post('/workspaces', { name: 'short' })).body.workspace.id;
    await api.post(`/workspaces/${ws}/fleets`, { name: 'second', description: '' });

    const first = await api.get(`/workspaces/${ws}/fleets?limit=1`);
    const rest = await api.get(`/workspaces/${ws}/fleets?cursor=${first.body.next}`);
    const all = await api.get(`/workspaces/${ws}/fleets?limit=2`);

    expect(first.body.fleets.map((f: Item) => f.name)).toEqual(['default']);
    expect(typeof first.body.next).toBe('string');
    expect(rest.body).toEqual({ fleets: [expect.objectContaining({ name: 'second' })], next: null });
    expect(all.body.next).toBeNull();
  });
});

describe('errors before the first byte', () => {
  it('answers another account’s workspace 404 in the JSON envelope, paged or not', async () => {
    for (const query of ['', '?limit=5']) {
      const { status, headers, body } = await getRaw(`/workspaces/${other.workspaceId}/devices${query}`);

      expect(status).toBe(404);
      expect(headers['content-type']).toBe('application/json');
      expect(JSON.parse(body.toString('utf8'))).toMatchObject({ error: { code: 'not_found' }, request_id: expect.any(String) });
    }
  });

  it('refuses a bad limit or cursor with a 400 naming it', async () => {
    const ws = stack.workspace_id;
    const cases: Array<[string, string]> = [
      ['limit=0', 'query.limit'],
      ['limit=1001', 'query.limit'],
      ['limit=ten', 'query.limit'],
      ['limit=1&limit=2', 'query.limit'],
      ['cursor=', 'query.cursor'],
      ['cursor=not%20a%20cursor', 'query.cursor'],
      ['cursor=bm90IGpzb24', 'query.cursor'],
      [`cursor=${Buffer.from(JSON.stringify({ l: `devices/${ws}`, k: 'FLT#flt-x' })).toString('base64url')}`, 'query.cursor'],
    ];

    for (const [query, field] of cases) {
      const { status, body } = await api.get(`/workspaces/${ws}/devices?${query}`);

      expect({ query, status }).toEqual({ query, status: 400 });
      expect(body.error.code).toBe('validation_error');
      expect(body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
  });

  it('refuses a cursor of another list, workspace or account', async () => {
    const ws = stack.workspace_id;
    await api.post(`/workspaces/${ws}/fleets`, { name: 'one more', description: '' });
    const fleetsCursor = (await api.get(`/workspaces/${ws}/fleets?limit=1`)).body.next;
    await other.api.post('/workspaces', { name: 'their second' });
    const theirWorkspacesCursor = (await other.api.get('/workspaces?limit=1')).body.next;
    await other.api.post(`/workspaces/${other.workspaceId}/fleets`, { name: 'theirs', description: '' });
    const theirFleetsCursor = (await other.api.get(`/workspaces/${other.workspaceId}/fleets?limit=1`)).body.next;

    const otherList = await api.get(`/workspaces/${ws}/api-keys?cursor=${fleetsCursor}`);
    const theirsHere = await api.get(`/workspaces/${ws}/fleets?cursor=${theirFleetsCursor}`);
    const theirsThere = await api.get(`/workspaces/${other.workspaceId}/fleets?cursor=${theirFleetsCursor}`);
    const theirWorkspaces = await api.get(`/workspaces?cursor=${theirWorkspacesCursor}`);

    expect(typeof fleetsCursor).toBe('string');
    expect(typeof theirFleetsCursor).toBe('string');
    expect(typeof theirWorkspacesCursor).toBe('string');
    expect([otherList.status, otherList.body.error.details[0].field]).toEqual([400, 'query.cursor']);
    expect([theirsHere.status, theirsHere.body.error.details[0].field]).toEqual([400, 'query.cursor']);
    // Their workspace is not ours, whatever the cursor: 404, nothing of theirs read.
    expect(theirsThere.status).toBe(404);
    expect(JSON.stringify(theirsThere.body)).not.toContain('theirs');
    expect([theirWorkspaces.status, theirWorkspaces.body.error.details[0].field]).toEqual([400, 'query.cursor']);
  });
});
