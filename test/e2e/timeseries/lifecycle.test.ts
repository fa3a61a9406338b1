/**
 * Data lifecycle end to end (spec/operations.md §4), on one runtime: a workspace's data retention
 * (PATCH, reads left short of it at once, the expiry the ingest writes, the re-stamp job run from
 * the retention queue) and the aggregation over HTTP (calendar days across DST changes, wall-clock
 * hours, non-numbers skipped, replays counted once, pages, groups, every bad parameter named, the
 * rollups of sealed hours kept and read again after a late point).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import type { DataPoint } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { TIMESERIES_TTL_ATTRIBUTE } from '../../../lambdas/stores/timeseries/keys';
import { waitFor } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { itOnTheSources, startRuntime } from '../../helpers/runtime';

const DAY = 86_400_000;
const HOUR = 3_600_000;

let runtime: LocalRuntime;
let api: ApiClient;

// The runtime's tables by the names it gives them (the cloud assembly's are its own). This file
// loads nothing that reads lambdas/shared/env.ts before the runtime has set the environment: the
// handlers it runs share this file's modules.
const docOf = () => DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const registryDb = (): Db => ({ doc: docOf(), table: process.env.REGISTRY_TABLE! });
const series = (): Db => ({ doc: docOf(), table: process.env.TIMESERIES_TABLE! });
const store = () => dynamoDbTimeseriesStore(series(), { writeConcurrency: 8 });

/** Every item of the time-series table whose partition key starts with `prefix`. */
const seriesItems = async (prefix: string) => {
  const items: Array<Record<string, unknown>> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await series().doc.send(new ScanCommand({ TableName: series().table, ExclusiveStartKey, ConsistentRead: true }));
    items.push(...(page.Items ?? []).filter((item) => String(item.pk).startsWith(prefix)));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
};

/** Every item of a workspace's points: the time its sort key starts with, and its expiry. */
const itemsOf = async (workspaceId: string) =>
  (await seriesItems(`TS#${workspaceId}#`))
    .map((item) => ({ at: String(item.sk).slice(0, 24), expires: item[TIMESERIES_TTL_ATTRIBUTE] as number | undefined }))
    .sort((a, b) => a.at.localeCompare(b.at));

/** The hours a workspace's rollups were kept for (of any field). */
const rollupHours = async (workspaceId: string) => (await seriesItems(`R#${workspaceId}#`)).map((item) => String(item.sk)).sort();

/** A new workspace of the runtime's account, with its default fleet. */
const newWorkspace = async (name: string) => {
  const workspace = (await api.post('/workspaces', { name })).body.workspace as { id: string };
  const fleets = (await api.get(`/workspaces/${workspace.id}/fleets`)).body.fleets as Array<{ id: string }>;
  return { id: workspace.id, fleet: fleets[0].id };
};

const point = (workspace_id: string, fleet_id: string, device_id: string, ms: number, payload: unknown, tag = 't'): DataPoint => ({
  workspace_id,
  fleet_id,
  device_id,
  tag,
  timestamp_device: new Date(ms).toISOString(),
  timestamp_in: new Date(ms).toISOString(),
  payload,
});

beforeAll(async () => {
  // The ingest remembers a workspace's retention a second: a change's re-stamp runs 16 s after it.
  runtime = await startRuntime({ devicePlaceCacheSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
}, 180_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('data retention per workspace', () => {
  itOnTheSources('is absent from a workspace until set (its v3 fields exactly), shown by get and list, and null again keeps points forever', async () => {
    const { id } = await newWorkspace('retention-shown');

    const before = await api.get(`/workspaces/${id}`);
    const set = await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 90 });
    const listed = await api.get('/workspaces');
    const reset = await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: null, description: 'kept forever' });

    expect(Object.keys(before.body.workspace).sort()).toEqual(['account_id', 'created_at', 'description', 'id', 'name']);
    expect(set).toMatchObject({ status: 200, body: { workspace: { ...before.body.workspace, data_retention_days: 90 } } });
    expect(listed.body.workspaces.find((w: { id: string }) => w.id === id).data_retention_days).toBe(90);
    expect(reset.body.workspace).toEqual({ ...before.body.workspace, description: 'kept forever' });
  });

  itOnTheSources.each([
    [{ data_retention_days: 0 }, 'body.data_retention_days'],
    [{ data_retention_days: 3651 }, 'body.data_retention_days'],
    [{ data_retention_days: 1.5 }, 'body.data_retention_days'],
    [{ data_retention_days: '30' }, 'body.data_retention_days'],
    [{}, 'body'],
  ])('answers 400 naming the field for %j, and changes nothing', async (body, field) => {
    const { id } = await newWorkspace('retention-bad');
    const before = (await api.get(`/workspaces/${id}`)).body;

    const { status, body: answer } = await api.call('PATCH', `/workspaces/${id}`, body);

    expect(status).toBe(400);
    expect(answer.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect((await api.get(`/workspaces/${id}`)).body).toEqual(before);
  });

  itOnTheSources('leaves out of every read, at once, the points older than the retention, and brings them back when it is lengthened', async () => {
    const { id, fleet } = await newWorkspace('retention-reads');
    const device = newId('dev');
    const now = Date.now();
    await store().write([40, 20, 1].map((days) => point(id, fleet, device, now - days * DAY, { temp: days })));
    const temps = async () =>
      ((await api.get(`/timeseries/${id}/data?sort=timestamp_device&size=100`)).body.result as Array<{ payload: { temp: number } }>).map((r) => r.payload.temp);
    const counted = async () =>
      ((await api.get(`/timeseries/${id}/aggregate?field=temp&every=31d&fn=count`)).body.buckets as Array<{ count: number }>).reduce((n, b) => n + b.count, 0);

    const before = [await temps(), await counted()];
    await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 30 });
    const within30 = [await temps(), await counted()];
    await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 7 });
    const within7 = [await temps(), await counted()];
    await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 365 });
    const within365 = [await temps(), await counted()];

    expect(before).toEqual([[40, 20, 1], 3]);
    expect(within30).toEqual([[20, 1], 2]);
    expect(within7).toEqual([[1], 1]);
    expect(within365).toEqual([[40, 20, 1], 3]);
  });

  it('stores a device’s points with the expiry of its workspace’s retention', async () => {
    const { id } = await newWorkspace('retention-ingest');
    await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 30 });
    const device = (await api.post(`/workspaces/${id}/devices`, { name: 'sensor' })).body.device;
    const created = await api.post(`/workspaces/${id}/devices/${device.id}/identities`);
    if (created.status !== 200) throw new Error(JSON.stringify(created));
    const { credentials } = created.body;
    const sent = new Date(Date.now() - 2 * DAY).toISOString();

    const answer = await deviceClient(runtime.base_url, await deviceToken(credentials)).post('/data', {
      tag: 't',
      timestamp_device: sent,
      payload: { temp: 1 },
    });

    expect(answer.status).toBe(202);
    const items = await waitFor(
      async () => {
        const found = await itemsOf(id);
        if (!found.length) throw new Error('not stored yet');
        return found;
      },
      'the point stored',
      30_000,
    );
    expect(items).toEqual([{ at: sent, expires: Math.ceil((Date.parse(sent) + 30 * DAY) / 1000) }]);
  });

  it('re-stamps the expiry of the points already stored once a change has settled, from the retention queue', async () => {
    const { id, fleet } = await newWorkspace('retention-restamp');
    const device = newId('dev');
    const now = Date.now();
    // Stored while the workspace kept points forever: no expiry.
    await store().write([10, 2, 0].map((days) => point(id, fleet, device, now - days * DAY, { temp: days })));
    const before = await itemsOf(id);

    await api.call('PATCH', `/workspaces/${id}`, { data_retention_days: 5 });

    // The job waits for the ingest's cache (1 s here) and its settle time (15 s), then runs.
    const after = await waitFor(
      async () => {
        const items = await itemsOf(id);
        if (items.some((i) => i.expires === undefined)) throw new Error('not re-stamped yet');
        return items;
      },
      'the re-stamp job',
      60_000,
    );
    expect(before.map((i) => i.expires)).toEqual([undefined, undefined, undefined]);
    // 5 days after each point (its pack's key time and span) for the two the 5 days keep.
    const kept = before.slice(1).map((i) => ({ at: i.at, expires: Math.ceil((Date.parse(i.at) + 10_000 + 5 * DAY) / 1000) }));
    expect(after.slice(-2)).toEqual(kept);
    // The 10-day-old one expires now (never earlier than the change), and DynamoDB Local's TTL
    // deletes it within seconds, as DynamoDB does within days: it may be gone already.
    if (after.length === 3) {
      expect(after[0].at).toBe(before[0].at);
      expect(after[0].expires).toBeGreaterThanOrEqual(Math.floor(now / 1000));
      expect(after[0].expires).toBeLessThan(Math.ceil((now + 120_000) / 1000));
    }
    await waitFor(
      async () => {
        const items = await itemsOf(id);
        if (items.length !== 2) throw new Error('not deleted yet');
        expect(items).toEqual(kept);
      },
      'DynamoDB Local’s TTL to delete the expired point',
      60_000,
    );
  }, 150_000);
});

describe('GET /timeseries/{workspace_id}/aggregate', () => {
  let workspace: { id: string; fleet: string };
  const devices = [newId('dev'), newId('dev')].sort();
  /** Europe/Rome's fall-back weekend and New York's, a point every half hour for each device. */
  const from = Date.parse('2026-10-23T00:00:00Z');
  const to = Date.parse('2026-11-03T00:00:00Z');
  const aggregate = (params: string, workspaceId = workspace.id, client = api) => client.get(`/timeseries/${workspaceId}/aggregate?${params}`);

  beforeAll(async () => {
    workspace = await newWorkspace('aggregation');
    const points: DataPoint[] = [];
    for (let ms = from; ms < to; ms += HOUR / 2) {
      // device 0: a number every time; device 1: a number, then a string, in turn
      points.push(point(workspace.id, workspace.fleet, devices[0], ms, { env: { temp: (ms - from) / HOUR } }));
      points.push(point(workspace.id, workspace.fleet, devices[1], ms, { env: { temp: ((ms - from) / (HOUR / 2)) % 2 ? 'n/a' : 1 } }));
    }
    await store().write(points);
    // A replay of device 0's first point, stored later with another value: never counted.
    await store().write([{ ...points[0], payload: { env: { temp: 1e6 } }, timestamp_in: new Date(to).toISOString() }]);
  }, 60_000);

  itOnTheSources('makes calendar days of Europe/Rome: its fall-back day is 25 hours, 50 half-hourly points', async () => {
    const { status, body } = await aggregate(
      `field=env.temp&every=1d&tz=Europe/Rome&fn=count&device=${devices[0]}&start=2026-10-23T22:00:00Z&end=2026-10-26T23:00:00Z`,
    );

    expect(status).toBe(200);
    expect(body).toEqual({
      buckets: [
        { start: '2026-10-23T22:00:00.000Z', count: 48 },
        { start: '2026-10-24T22:00:00.000Z', count: 50 },
        { start: '2026-10-25T23:00:00.000Z', count: 48 },
      ],
      skipped: 0,
      next: null,
    });
  });

  itOnTheSources('makes America/New_York’s 2026-11-01 a 25-hour day too, a week later', async () => {
    const { body } = await aggregate(
      `field=env.temp&every=1d&tz=America/New_York&fn=count&device=${devices[0]}&start=2026-11-01T04:00:00Z&end=2026-11-02T05:00:00Z`,
    );

    expect(body.buckets).toEqual([{ start: '2026-11-01T04:00:00.000Z', count: 50 }]);
  });

  itOnTheSources('gives Rome’s fall-back day 25 hourly buckets, its repeated hour twice, each of the points of its own hour', async () => {
    const { body } = await aggregate(
      `field=env.temp&every=1h&tz=Europe/Rome&fn=min,count&device=${devices[0]}&start=2026-10-24T22:00:00Z&end=2026-10-25T23:00:00Z`,
    );

    expect(body.buckets).toHaveLength(25);
    expect(body.buckets.slice(1, 4)).toEqual([
      { start: '2026-10-24T23:00:00.000Z', min: 47, count: 2 },
      { start: '2026-10-25T00:00:00.000Z', min: 48, count: 2 },
      { start: '2026-10-25T01:00:00.000Z', min: 49, count: 2 },
    ]);
  });

  itOnTheSources('counts the points whose field is not a number in skipped, per device, and a replay once', async () => {
    const day = 'every=1d&start=2026-10-23T00:00:00Z&end=2026-10-24T00:00:00Z';
    const { body } = await aggregate(`field=env.temp&${day}&group_by=device`);

    expect(body).toEqual({
      buckets: [
        { start: '2026-10-23T00:00:00.000Z', device_id: devices[0], avg: 11.75, min: 0, max: 23.5, sum: 564, count: 48 },
        { start: '2026-10-23T00:00:00.000Z', device_id: devices[1], avg: 1, min: 1, max: 1, sum: 24, count: 24 },
      ],
      skipped: 24,
      next: null,
    });
  });

  itOnTheSources('pages by `limit` with `next`, each bucket once, the skipped points on the page of their buckets', async () => {
    const params = 'field=env.temp&every=1h&start=2026-10-23T00:00:00Z&end=2026-10-23T05:00:00Z&group_by=device&fn=count';
    const whole = (await aggregate(params)).body;
    const pages: Array<{ buckets: unknown[]; skipped: number; next: string | null }> = [];
    let cursor = '';
    do {
      const { status, body } = await aggregate(`${params}&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(status).toBe(200);
      pages.push(body);
      cursor = body.next ?? '';
    } while (cursor);

    expect(whole.buckets).toHaveLength(10);
    expect(pages.map((p) => p.buckets.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flatMap((p) => p.buckets)).toEqual(whole.buckets);
    expect(pages.reduce((n, p) => n + p.skipped, 0)).toBe(whole.skipped);
  });

  it('keeps the totals of sealed hours and answers from them the same again; a point a device sends into one of those hours is in the next answer', async () => {
    const params = 'field=env.temp&every=1h&group_by=device&fn=count,max&start=2026-10-27T00:00:00Z&end=2026-10-28T00:00:00Z';
    const first = (await aggregate(params)).body;
    expect(first.buckets).toHaveLength(48);
    expect((await rollupHours(workspace.id)).filter((hour) => hour.startsWith('2026-10-27'))).toHaveLength(24);
    expect((await aggregate(params)).body).toEqual(first);

    // A device of the workspace sends a reading of that day now, through the ingest: the hour is read again.
    const device = (await api.post(`/workspaces/${workspace.id}/devices`, { name: 'late' })).body.device as { id: string };
    const { credentials } = (await api.post(`/workspaces/${workspace.id}/devices/${device.id}/identities`)).body;
    const sent = await deviceClient(runtime.base_url, await deviceToken(credentials)).post('/data', {
      tag: 't',
      timestamp_device: '2026-10-27T10:15:00.000Z',
      payload: { env: { temp: 99 } },
    });
    expect(sent.status).toBe(202);
    const again = await waitFor(
      async () => {
        const { body } = await aggregate(params);
        if (body.buckets.length === first.buckets.length) throw new Error('the late point is not in the answer yet');
        return body;
      },
      'the late point in the aggregation',
      30_000,
    );
    expect(again.buckets.filter((b: { device_id: string }) => b.device_id === device.id)).toEqual([
      { start: '2026-10-27T10:00:00.000Z', device_id: device.id, count: 1, max: 99 },
    ]);
    expect(again.buckets.filter((b: { device_id: string }) => b.device_id !== device.id)).toEqual(first.buckets);
  });

  itOnTheSources('answers an empty range, or one of no numbers, with no buckets', async () => {
    expect((await aggregate('every=1d&start=2020-01-01T00:00:00Z&end=2020-02-01T00:00:00Z')).body).toEqual({ buckets: [], skipped: 0, next: null });
    expect((await aggregate(`field=nope&device=${devices[1]}&start=2026-10-23T00:00:00Z&end=2026-10-23T01:00:00Z`)).body).toEqual({
      buckets: [],
      skipped: 2,
      next: null,
    });
  });

  itOnTheSources.each([
    ['every', 'every=7m'],
    ['every', 'every=24h'],
    ['tz', 'tz=Mars/Olympus_Mons'],
    ['field', 'field=env..temp'],
    ['fn', 'fn=avg,median'],
    ['group_by', 'group_by=fleet'],
    ['limit', 'limit=10001'],
    ['cursor', 'cursor=not-a-cursor'],
    ['start', 'start=2026-02-02T00:00:00Z&end=2026-02-01T00:00:00Z'],
    ['every', 'every=1h&every=2h'],
  ])('answers 400 naming %s for %s', async (name, params) => {
    const { status, body } = await aggregate(params);

    expect(status).toBe(400);
    expect(body.error.details.map((d: { field: string }) => d.field)).toContain(`query.${name}`);
  });

  itOnTheSources('answers 404 for another account’s workspace, and for a fleet that is not the workspace’s', async () => {
    const { newAccount } = await import('../../helpers/callers');
    const other = await newAccount(registryDb(), 'other');

    const theirs = await aggregate('every=1d', other.workspace_id);
    const mine = await aggregate('every=1d', workspace.id, apiClient(runtime.base_url, other.api_key));
    const fleet = await aggregate(`fleet=${other.default_fleet_id}`);

    expect([theirs.status, mine.status, fleet.status]).toEqual([404, 404, 404]);
    expect(fleet.body.error.message).toContain(other.default_fleet_id);
  });

  itOnTheSources('filters by the fleet points were stored with', async () => {
    const { body } = await aggregate(
      `field=env.temp&fn=count&every=31d&fleet=${workspace.fleet}&device=${devices[0]}&start=2026-10-23T00:00:00Z&end=2026-10-24T00:00:00Z`,
    );

    expect(body.buckets).toEqual([{ start: expect.any(String), count: 48 }]);
  });
});
