/**
 * Issue 34 (spec fleet-state.md §1) on `npm start`'s runtime: tags through create, v3's PUT and
 * the new PATCH, a search with `?q=` paged like the list, another account's devices never in it,
 * and bad input refused with a 400 that says where, nothing written.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LocalRuntime } from '../../../local/runtime';
import type { Db } from '../../../lambdas/shared/clients';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { startRuntime } from '../../helpers/runtime';

let runtime: LocalRuntime;
let api: ApiClient;
let db: Db;
let other: { api: ApiClient; workspaceId: string };

beforeAll(async () => {
  runtime = await startRuntime();
  api = apiClient(runtime.base_url, runtime.api_key);
  // Lambda modules are imported once the runtime has set the environment they read once (lambdas/shared/env.ts).
  const { documentClient } = await import('../../../lambdas/shared/clients');
  db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
  const { createAccount } = await import('../../../lambdas/domain/tenancy/accounts');
  const account = await createAccount(db, { name: 'other' });
  other = { api: apiClient(runtime.base_url, account.api_key), workspaceId: account.workspace_id };
}, 120_000);
afterAll(async () => {
  db?.doc.destroy();
  await runtime?.stop();
});

const devices = () => `/workspaces/${runtime.workspace_id}/devices`;
const search = (q: string, extra = '') => `${devices()}?q=${encodeURIComponent(q)}${extra}`;
const patch = (id: string, body: unknown, client = api) => client.call('PATCH', `${devices()}/${id}`, body);

describe('device tags and search on the local runtime', () => {
  it('keeps tags given on create, replaced by PUT, merged by PATCH, and answers {} for a device without', async () => {
    const bare = await api.post(devices(), { name: 'bare' });
    const created = await api.post(devices(), { name: 'boiler', tags: { site: 'milan', model: 'v1' } });
    const id = created.body.device.id as string;

    const put = await api.put(`${devices()}/${id}`, { name: 'boiler', fleet_id: created.body.device.fleet_id, tags: { site: 'rome' } });
    const untouched = await api.put(`${devices()}/${id}`, { name: 'boiler-2', fleet_id: created.body.device.fleet_id });
    const patched = await patch(id, { tags: { model: 'v2', site: null }, name: 'boiler-3' });

    expect(bare.body.device.tags).toEqual({});
    expect(created.body.device.tags).toEqual({ site: 'milan', model: 'v1' });
    expect(put.body.device.tags).toEqual({ site: 'rome' });
    expect(untouched.body.device).toMatchObject({ name: 'boiler-2', tags: { site: 'rome' } });
    expect(patched.status).toBe(200);
    expect(patched.body.device).toMatchObject({ id, name: 'boiler-3', tags: { model: 'v2' } });
    expect((await api.get(`${devices()}/${id}`)).body.device.tags).toEqual({ model: 'v2' });
  });

  it('moves a device with PATCH, as PUT does', async () => {
    const fleet = (await api.post(`/workspaces/${runtime.workspace_id}/fleets`, { name: 'moved-to', description: '' })).body.fleet;
    const id = (await api.post(devices(), { name: 'mover' })).body.device.id;

    const moved = await patch(id, { fleet_id: fleet.id });

    expect(moved.body.device).toMatchObject({ id, name: 'mover', fleet_id: fleet.id, fleet_name: 'moved-to' });
    expect((await api.get(`${devices()}?fleet=${fleet.id}`)).body.devices.map((d: { id: string }) => d.id)).toEqual([id]);
  });

  it('finds the matching devices page by page, each once, and never another account’s', async () => {
    const site = `s${Date.now().toString(36)}`;
    const mine: string[] = [];
    for (let i = 0; i < 7; i++) mine.push((await api.post(devices(), { name: `m${i}`, tags: { site, floor: String(i) } })).body.device.id);
    for (let i = 0; i < 3; i++) await other.api.post(`/workspaces/${other.workspaceId}/devices`, { name: `o${i}`, tags: { site, floor: String(i) } });
    await patch(mine[6], { tags: { site: 'elsewhere' } });

    const found: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { devices: Array<{ id: string }>; next: string | null } } = await api.get(
        search(`tags.site = "${site}"`, `&limit=2${cursor ? `&cursor=${cursor}` : ''}`),
      );
      expect(page.status).toBe(200);
      found.push(...page.body.devices.map((d) => d.id));
      cursor = page.body.next;
      pages++;
    } while (cursor && pages < 10);
    const onePass = await api.get(search(`tags.floor >= 4 AND tags.site != "elsewhere" AND name > "m"`));
    const theirs = await other.api.get(`/workspaces/${other.workspaceId}/devices?q=${encodeURIComponent(`tags.site = "${site}"`)}`);

    expect(found).toEqual(mine.slice(0, 6));
    expect(pages).toBe(3);
    expect(onePass.body.devices.map((d: { id: string }) => d.id)).toEqual([mine[4], mine[5]]);
    expect(theirs.body.devices).toHaveLength(3);
    expect(theirs.body.devices.every((d: { id: string }) => !mine.includes(d.id))).toBe(true);
  });

  it('refuses another account’s workspace, device and cursors', async () => {
    const id = (await api.post(devices(), { name: 'private', tags: { secret: 'yes' } })).body.device.id;
    const first = await api.get(search('EXISTS tags.secret', '&limit=1'));

    const theirSearch = await other.api.get(search('EXISTS tags.secret'));
    const theirPatch = await patch(id, { tags: { secret: null } }, other.api);
    const theirCursor = await other.api.get(
      `/workspaces/${other.workspaceId}/devices?q=${encodeURIComponent('EXISTS tags.secret')}&cursor=${first.body.next ?? 'x'}`,
    );

    expect(theirSearch.status).toBe(404);
    expect(theirPatch.status).toBe(404);
    expect(theirCursor.status).toBe(400);
    expect((await api.get(`${devices()}/${id}`)).body.device.tags).toEqual({ secret: 'yes' });
  });

  it('answers a malformed query with a 400 naming the character and what was expected', async () => {
    const answer = await api.get(search('tags.site = "milan" AND tags.model'));
    const unknown = await api.get(search('colour = "red"'));

    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: 'validation_error',
      details: [
        { field: 'query.q', message: expect.stringMatching(/^at character 35: expected an operator \(=, !=, <, <=, >, >=, IN, EXISTS\) after `tags.model`/) },
      ],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].message).toContain('unknown field `colour`');
  });

  it('refuses a tag key with a space, a value too long and a 51st tag, writing nothing', async () => {
    const created = await api.post(devices(), { name: 'strict', tags: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])) });
    const id = created.body.device.id as string;

    const spaced = await patch(id, { name: 'renamed', tags: { 'my key': 'x' } });
    const long = await api.post(devices(), { name: 'long', tags: { note: 'x'.repeat(257) } });
    const fiftyFirst = await patch(id, { name: 'renamed', tags: { k50: 'v' } });
    const tooMany = await api.post(devices(), { name: 'many', tags: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) });

    expect(spaced.status).toBe(400);
    expect(spaced.body.error.details).toEqual([{ field: 'body.tags.my key', message: expect.stringContaining('Tag keys are 1–64 characters') }]);
    expect(long.status).toBe(400);
    expect(long.body.error.details[0].field).toBe('body.tags.note');
    expect(fiftyFirst.status).toBe(400);
    expect(fiftyFirst.body.error.details).toEqual([{ field: 'body.tags', message: expect.stringContaining('At most 50 tags') }]);
    expect(tooMany.status).toBe(400);
    expect((await api.get(`${devices()}/${id}`)).body.device).toEqual(created.body.device);
    expect((await api.get(search('tags.note = null AND name = "long"'))).body.devices).toEqual([]);
  });
});
