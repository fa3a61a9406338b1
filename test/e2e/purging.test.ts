/**
 * Purging data points end to end (spec/fleet-state.md §5): `DELETE …/devices/{id}?purge=data`
 * answers at once, and the purge job on the retention queue removes the device's points from the
 * storage query, the aggregation (its kept rollups included) and exports within a bounded wait;
 * a device deleted without it keeps its points readable until the retention; a workspace's
 * DELETE removes its points from the store; a bad `purge` is a 400 that deletes nothing.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../lambdas/shared/clients';
import type { DataPoint } from '../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../lambdas/stores/timeseries/dynamodb';
import { until, waitFor } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { itOnTheSources, startRuntime } from '../helpers/runtime';

const HOUR = 3_600_000;

let runtime: LocalRuntime;
let api: ApiClient;

// The runtime's time-series table by the name it gives it; nothing here reads lambdas/shared/env.ts
// before the runtime has set the environment.
const series = (): Db => ({
  doc: DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } }),
  table: process.env.TIMESERIES_TABLE!,
});

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

beforeAll(async () => {
  // The ingest remembers devices' places a second: a purge starts 16 s after its DELETE.
  runtime = await startRuntime({ devicePlaceCacheSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
}, 180_000);
afterAll(async () => {
  await runtime?.stop();
});

/** A new workspace with devices of these names, and 30 points of each a minute apart in a sealed hour, stored as the ingest stores them. */
const workspaceWithPoints = async (names: string[]) => {
  const ws = (await api.post('/workspaces', { name: 'purging' })).body.workspace.id as string;
  const devices: string[] = [];
  for (const name of names) devices.push((await api.post(`/workspaces/${ws}/devices`, { name })).body.device.id);
  const fleet = ((await api.get(`/workspaces/${ws}/fleets`)).body.fleets as Array<{ id: string }>)[0].id;
  const hour = Math.floor((Date.now() - 4 * HOUR) / HOUR) * HOUR;
  const points: DataPoint[] = devices.flatMap((device_id) =>
    Array.from({ length: 30 }, (_, i) => ({
      workspace_id: ws,
      fleet_id: fleet,
      device_id,
      tag: 't',
      timestamp_device: new Date(hour + i * 60_000).toISOString(),
      timestamp_in: new Date(hour + i * 60_000).toISOString(),
      payload: i,
    })),
  );
  await dynamoDbTimeseriesStore(series(), { writeConcurrency: 4 }).write(points);
  return { ws, devices, hour };
};

/** How many points of each device the storage query answers. */
const queried = async (ws: string) => {
  const { status, body } = await api.get(`/timeseries/${ws}/data?size=10000`);
  expect(status).toBe(200);
  const by: Record<string, number> = {};
  for (const r of body.result as Array<{ device_id: string }>) by[r.device_id] = (by[r.device_id] ?? 0) + 1;
  return by;
};

/** The aggregation's count of each device in the hour (answered from its kept rollup when it has one). */
const aggregated = async (ws: string, hour: number) => {
  const range = `start=${new Date(hour).toISOString()}&end=${new Date(hour + HOUR).toISOString()}`;
  const { status, body } = await api.get(`/timeseries/${ws}/aggregate?every=1h&group_by=device&fn=count&${range}`);
  expect(status).toBe(200);
  const by: Record<string, number> = {};
  for (const b of body.buckets as Array<{ device_id: string; count: number }>) by[b.device_id] = b.count;
  return by;
};

/** The devices of the records of an NDJSON export of the workspace, counted. */
const exported = async (ws: string) => {
  const id = (await api.post(`/timeseries/${ws}/exports`, { format: 'ndjson' })).body.export.id as string;
  const url = await waitFor(
    async () => {
      const { body } = await api.get(`/timeseries/${ws}/exports/${id}`);
      if (body.export.status !== 'ready') throw new Error(`export ${body.export.status}`);
      return body.export.url as string;
    },
    'the export to end',
    120_000,
  );
  const text = await (await fetch(url)).text();
  const by: Record<string, number> = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const device = (JSON.parse(line) as { device_id: string }).device_id;
    by[device] = (by[device] ?? 0) + 1;
  }
  return by;
};

describe('DELETE …/devices/{id}?purge=data', () => {
  it('answers at once, then its points leave the storage query, the aggregation’s kept rollups and exports; a device deleted without it stays readable', async () => {
    const { ws, devices, hour } = await workspaceWithPoints(['purged', 'deleted', 'kept']);
    const [purged, deleted, kept] = devices;
    const all = { [purged]: 30, [deleted]: 30, [kept]: 30 };
    expect(await aggregated(ws, hour)).toEqual(all);
    // The sealed hour's rollup is kept: the next answer comes from it.
    await until(async () => (await seriesItems(`R#${ws}#`)).length > 0, 'the hour’s rollup kept');

    const answer = await api.delete(`/workspaces/${ws}/devices/${purged}?purge=data`);
    const plain = await api.delete(`/workspaces/${ws}/devices/${deleted}`);

    expect(answer.status).toBe(200);
    expect(answer.body.device).toMatchObject({ id: purged, name: 'purged' });
    expect(plain.status).toBe(200);
    // The purge runs once the ingest's cache of places has passed (16 s here): bounded by a generous wait.
    await until(async () => (await queried(ws))[purged] === undefined, 'the purged device’s points gone', 120_000);

    expect(await queried(ws)).toEqual({ [deleted]: 30, [kept]: 30 });
    expect(await aggregated(ws, hour)).toEqual({ [deleted]: 30, [kept]: 30 });
    expect(await exported(ws)).toEqual({ [deleted]: 30, [kept]: 30 });
  }, 300_000);

  itOnTheSources.each([['purge=all'], ['purge='], ['purge=data&purge=data'], ['purge=DATA']])(
    'answers 400 naming query.purge for ?%s, and deletes nothing',
    async (query) => {
      const { ws, devices } = await workspaceWithPoints(['stays']);

      const { status, body } = await api.delete(`/workspaces/${ws}/devices/${devices[0]}?${query}`);

      expect(status).toBe(400);
      expect(body.error.details.map((d: { field: string }) => d.field)).toEqual(['query.purge']);
      expect((await api.get(`/workspaces/${ws}/devices/${devices[0]}`)).status).toBe(200);
      expect(await queried(ws)).toEqual({ [devices[0]]: 30 });
    },
  );
});

describe('DELETE /workspaces/{ws}', () => {
  it('takes its stored points with it within a sweep', async () => {
    const { ws, devices } = await workspaceWithPoints(['a', 'b']);
    for (const device of devices) expect((await api.delete(`/workspaces/${ws}/devices/${device}`)).status).toBe(200);
    expect((await seriesItems(`TS#${ws}#`)).length).toBeGreaterThan(0);

    expect((await api.delete(`/workspaces/${ws}`)).status).toBe(200);

    expect((await api.get(`/timeseries/${ws}/data`)).status).toBe(404);
    // The points, then its stamps of sealed hours (`S#…`, the purge's last partition): both gone.
    await until(async () => (await seriesItems(`TS#${ws}#`)).length === 0, 'the workspace’s points gone', 120_000);
    await until(async () => (await seriesItems(`S#${ws}`)).length === 0, 'the workspace’s series marks gone', 120_000);
  }, 180_000);
});
