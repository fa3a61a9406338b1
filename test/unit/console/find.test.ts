import { createApiClient } from '../../../console/src/lib/api';
import { ApiError } from '../../../console/src/lib/errors';
import {
  checkTagRows,
  defaultFleetId,
  markAt,
  positionOf,
  queryProblem,
  tagClause,
  tagErrorsOf,
  tagPatch,
  tagRows,
  tagsText,
} from '../../../console/src/lib/find';
import { parseRoute, routeHash, type Route } from '../../../console/src/lib/router';

const recorder = () => {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(JSON.stringify({ job: {}, fota: {}, device: {}, devices: [], group: {}, dry_run: true, targets: 3 }), { status: 200 });
  }) as unknown as typeof globalThis.fetch;
  return { calls, api: createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch }) };
};

describe('tags as edited', () => {
  const original = { site: 'milan', model: 'v2', floor: '3' };

  it('reads a device’s tags as rows by key, and as one line', () => {
    expect(tagRows(original).map((r) => r.key)).toEqual(['floor', 'model', 'site']);
    expect(tagRows(undefined)).toEqual([]);
    expect(tagsText(original)).toBe('floor=3, model=v2, site=milan');
  });

  it('sends only the differences: a changed value, a new tag, null for a removed or renamed key', () => {
    const rows = tagRows(original)
      .filter((r) => r.key !== 'floor') // removed
      .map((r) => (r.key === 'model' ? { ...r, value: 'v3' } : r.key === 'site' ? { ...r, key: 'city' } : r)); // changed, renamed
    rows.push({ key: 'rack', value: 'A1', was: '' });
    expect(tagPatch(original, rows)).toEqual({ floor: null, site: null, model: 'v3', city: 'milan', rack: 'A1' });
    expect(tagPatch(original, tagRows(original))).toEqual({});
    expect(tagPatch(undefined, [{ key: ' k ', value: 'v', was: '' }])).toEqual({ k: 'v' });
  });

  it('says what is wrong with a row as the API would: a key with a space, a key twice, a long value, 51 tags', () => {
    const rows = [
      { key: 'bad key', value: 'x', was: '' },
      { key: 'ok', value: 'x', was: '' },
      { key: 'ok', value: 'y', was: '' },
      { key: 'long', value: 'v'.repeat(257), was: '' },
      { key: '', value: 'x', was: '' },
    ];
    const checked = checkTagRows(rows);
    expect(Object.keys(checked.rows)).toEqual(['0', '2', '3', '4']);
    expect(checked.rows[0]).toMatch(/no spaces/);
    expect(checked.rows[2]).toMatch(/twice/);
    expect(checked.whole).toBeUndefined();
    const many = Array.from({ length: 51 }, (_, i) => ({ key: `k${i}`, value: '', was: '' }));
    expect(checkTagRows(many).whole).toMatch(/at most 50 tags \(51 here\)/);
    expect(checkTagRows(many.slice(0, 50))).toEqual({ rows: {} });
  });

  it('puts a 400’s detail next to the row of the key it names, and the others on the whole form', () => {
    const rows = tagRows({ site: 'milan', 'a.b': 'c' });
    const error = new ApiError(400, 'validation_error', 'The request is not valid.', [
      { field: 'body.tags.a.b', message: 'Too long.' },
      { field: 'tags.site', message: 'Bad.' },
      { field: 'body.tags', message: 'At most 50 tags.' },
    ]);
    expect(tagErrorsOf(error, rows)).toEqual({ rows: { 0: 'Too long.', 1: 'Bad.' }, whole: ['tags: At most 50 tags.'] });
    expect(tagErrorsOf(new ApiError(400, 'validation_error', 'Nope.'), rows)).toEqual({ rows: {}, whole: ['Nope.'] });
    expect(tagErrorsOf(new ApiError(404, 'not_found', 'Gone.'), rows)).toEqual({ rows: {}, whole: [] });
  });
});

describe('queries', () => {
  it('quotes a tag’s value into a clause', () => {
    expect(tagClause('site', 'milan')).toBe('tags.site = "milan"');
    expect(tagClause('note', 'say "hi"')).toBe('tags.note = "say \\"hi\\""');
  });

  it('reads the character position a 400’s message names, counted from 1, as a 0-based index', () => {
    expect(positionOf('Unexpected end of query at position 13: expected a value')).toBe(12);
    expect(positionOf('at character 1: expected a field')).toBe(0);
    expect(positionOf('column: 7, expected "AND"')).toBe(6);
    expect(positionOf('expected a value')).toBeUndefined();
  });

  it('finds the query’s problem in a 400 that names the query, and nothing in other errors', () => {
    const bad = (field: string, message = 'at position 5: expected an operator') => new ApiError(400, 'validation_error', 'Invalid.', [{ field, message }]);
    expect(queryProblem(bad('query.q'))).toEqual({ message: 'at position 5: expected an operator', index: 4 });
    expect(queryProblem(bad('body.query'))).toEqual({ message: 'at position 5: expected an operator', index: 4 });
    expect(queryProblem(bad('query.q', 'unknown field foo'))).toEqual({ message: 'unknown field foo' });
    expect(queryProblem(bad('body.name'))).toBeUndefined();
    expect(queryProblem(new ApiError(404, 'not_found', 'x'))).toBeUndefined();
    expect(queryProblem(new Error('x'))).toBeUndefined();
  });

  it('marks the character at a position, a space past the end', () => {
    expect(markAt('name = ', 4)).toEqual(['name', ' ', '= ']);
    expect(markAt('name =', 6)).toEqual(['name =', ' ', '']);
    expect(markAt('ab', 99)).toEqual(['ab', ' ', '']);
  });
});

describe('the default fleet', () => {
  const fleet = (id: string, created_at: string, extra = {}) => ({ id, name: id, description: '', workspace_id: 'w', account_id: 'a', created_at, ...extra });

  it('is the one the API says, or else the first created (it can never be deleted)', () => {
    expect(defaultFleetId([fleet('flt-b', '2026-01-02T00:00:00Z'), fleet('flt-a', '2026-01-01T00:00:00Z')])).toBe('flt-a');
    expect(defaultFleetId([fleet('flt-b', '2026-01-02T00:00:00Z', { default: true }), fleet('flt-a', '2026-01-01T00:00:00Z')])).toBe('flt-b');
    expect(defaultFleetId([])).toBeUndefined();
  });
});

describe('addresses that keep a search', () => {
  it('keeps the devices’ query and the jobs page’s group in the hash, and reads them back', () => {
    const routes: Route[] = [
      { page: 'devices', workspaceId: 'wks-1', q: 'tags.site = "milan" AND name >= "a/b?c&d+e"' },
      { page: 'devices', workspaceId: 'wks-1' },
      { page: 'groups', workspaceId: 'wks-1' },
      { page: 'group', workspaceId: 'wks-1', groupId: 'grp-1' },
      { page: 'jobs', workspaceId: 'wks-1', group: 'grp-1' },
      { page: 'jobs', workspaceId: 'wks-1' },
    ];
    for (const route of routes) expect(parseRoute(routeHash(route))).toEqual(route);
    expect(routeHash(routes[0])).toBe('#/w/wks-1/devices?q=tags.site%20%3D%20%22milan%22%20AND%20name%20%3E%3D%20%22a%2Fb%3Fc%26d%2Be%22');
  });
});

describe('API client: find and target', () => {
  it('sends the search, the tags PATCH, the deletes with their purge, and the groups', async () => {
    const { calls, api } = recorder();
    await api.listDevices('wks-1', undefined, 'tags.site = "milan"');
    await api.listDevices('wks-1');
    await api.patchDevice('wks-1', 'dev-1', { tags: { site: 'rome', old: null } });
    await api.deleteDevice('wks-1', 'dev-1', { purge: true });
    await api.deleteDevice('wks-1', 'dev-2');
    await api.deleteFleet('wks-1', 'flt-1');
    await api.deleteWorkspace('wks-1');
    await api.createGroup('wks-1', { name: 'Milan', query: 'tags.site = "milan"' });
    await api.listGroupDevices('wks-1', 'grp-1');
    expect(calls.map((c) => `${c.init.method} ${c.url}`)).toEqual([
      'GET http://x/v3/workspaces/wks-1/devices?q=tags.site+%3D+%22milan%22',
      'GET http://x/v3/workspaces/wks-1/devices',
      'PATCH http://x/v3/workspaces/wks-1/devices/dev-1',
      'DELETE http://x/v3/workspaces/wks-1/devices/dev-1?purge=data',
      'DELETE http://x/v3/workspaces/wks-1/devices/dev-2',
      'DELETE http://x/v3/workspaces/wks-1/fleets/flt-1',
      'DELETE http://x/v3/workspaces/wks-1',
      'POST http://x/v3/workspaces/wks-1/groups',
      'GET http://x/v3/workspaces/wks-1/groups/grp-1/devices',
    ]);
    expect(JSON.parse(calls[2].init.body as string)).toEqual({ tags: { site: 'rome', old: null } });
  });

  it('targets a group or a query (with fleets) in the dry run and the scheduling, continuous in the body', async () => {
    const { calls, api } = recorder();
    await api.dryRunFleetJob('wks-1', 'reboot', {}, { group: 'grp-1' }, { continuous: true });
    await api.scheduleFleetJob('wks-1', 'reboot', {}, { fleets: ['flt-a'], q: 'connected = true' });
    await api.dryRunFleetFota('wks-1', 'fw', '1.0', { q: 'tags.x = "y"' });
    await api.scheduleFleetFota('wks-1', 'fw', '1.0', { fleets: [], group: 'grp-1' }, { continuous: true });
    expect(calls.map((c) => c.url)).toEqual([
      'http://x/v3/workspaces/wks-1/jobs/reboot?group=grp-1&dry_run=true',
      'http://x/v3/workspaces/wks-1/jobs/reboot?fleet=flt-a&q=connected+%3D+true',
      'http://x/v3/workspaces/wks-1/fota/fw/versions/1.0?q=tags.x+%3D+%22y%22&dry_run=true',
      'http://x/v3/workspaces/wks-1/fota/fw/versions/1.0?group=grp-1',
    ]);
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ value: {}, rollout: { continuous: true } });
    expect(calls[2].init.body).toBeUndefined();
    expect(JSON.parse(calls[3].init.body as string)).toEqual({ rollout: { continuous: true } });
  });
});
