import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import type { DataPoint } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import type { LocalRuntime } from '../../../local/runtime';
import { startRuntime } from '../../helpers/runtime';
import { newAccount } from '../../helpers/callers';

/** A GET as a plain HTTP client sends it: the raw bytes and headers, nothing decoded. */
const rawGet = (url: string, headers: Record<string, string>) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: Buffer }>((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });

const at = (ms: number) => new Date(Date.UTC(2025, 5, 1) + ms).toISOString();
const keyOf = (r: { timestamp_device: string; device_id: string; tag: string }) => `${r.timestamp_device}|${r.device_id}|${r.tag}`;

let runtime: LocalRuntime;
let workspaceId: string;
const devices = [newId('dev'), newId('dev'), newId('dev')].sort();
const fleet = newId('flt');
/** Every seeded point, oldest first with ties by device then tag: the ascending order. */
let seeded: DataPoint[];

/** The storage query with these parameters, as the caller's client sees it (JSON decoded). */
const query = async (params: string, apiKey = runtime.api_key, workspace = workspaceId) => {
  const { status, headers, bytes } = await rawGet(`${runtime.storage_url}/timeseries/${workspace}/data${params ? `?${params}` : ''}`, { 'x-api-key': apiKey });
  return { status, headers, body: JSON.parse(bytes.toString('utf8')) };
};
const keys = async (params: string) => {
  const { status, body } = await query(params);
  expect(status).toBe(200);
  return (body.result as DataPoint[]).map(keyOf);
};

// The runtime's tables by the names it gives them (the cloud assembly's are its own), not by the
// names lambdas/shared/env.ts read when this file was loaded.
const registryDb = (): Db => ({ doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! });
const timeseriesStore = () =>
  dynamoDbTimeseriesStore({ doc: documentClient(new DynamoDBClient({})), table: process.env.TIMESERIES_TABLE! }, { writeConcurrency: 16 });

beforeAll(async () => {
  runtime = await startRuntime({});
  workspaceId = runtime.workspace_id;
  // 3 devices × 2 tags × 40 timestamps; timestamps repeat across devices and tags (ties).
  seeded = [];
  for (let t = 0; t < 40; t++) {
    for (const device_id of devices) {
      for (const tag of ['humidity', 'temperature']) {
        seeded.push({
          workspace_id: workspaceId,
          fleet_id: fleet,
          device_id,
          tag,
          timestamp_device: at(t * 1000),
          timestamp_in: at(t * 1000 + 7),
          payload: { t, tag },
        });
      }
    }
  }
  const shuffled = [...seeded].sort(() => Math.random() - 0.5);
  await timeseriesStore().write(shuffled);
});
afterAll(async () => {
  await runtime?.stop();
});

describe('GET {storage_url}/timeseries/{workspace_id}/data', () => {
  it('answers the newest 100 records by default, each with exactly the interface’s fields', async () => {
    const { status, headers, body } = await query('');

    expect(status).toBe(200);
    expect(headers['content-type']).toBe('application/json');
    expect(Object.keys(body)).toEqual(['result']);
    expect(body.result).toHaveLength(100);
    expect(body.result.map(keyOf)).toEqual(seeded.map(keyOf).reverse().slice(0, 100));
    expect(body.result[0]).toEqual({
      timestamp_device: at(39_000),
      timestamp_in: at(39_007),
      fleet_id: fleet,
      device_id: devices[2],
      tag: 'temperature',
      payload: { t: 39, tag: 'temperature' },
    });
    expect(Object.keys(body.result[0])).toEqual(['timestamp_device', 'timestamp_in', 'fleet_id', 'device_id', 'tag', 'payload']);
  });

  it('applies start (included) and end (excluded), with offsets and finer fractions', async () => {
    const inRange = seeded.filter((p) => p.timestamp_device >= at(10_000) && p.timestamp_device < at(12_000)).map(keyOf);

    expect(await keys(`start=${at(10_000)}&end=${at(12_000)}&sort=timestamp_device`)).toEqual(inRange);
    // The same instants written with an offset.
    expect(
      await keys(`start=${encodeURIComponent('2025-06-01T02:00:10+02:00')}&end=${encodeURIComponent('2025-06-01T02:00:12.000+02:00')}&sort=timestamp_device`),
    ).toEqual(inRange);
    // 10.0000001 s rounds up to 10.000001: the points at exactly 10 s are left out.
    expect(await keys(`start=2025-06-01T00:00:10.0000001Z&end=${at(12_000)}&sort=timestamp_device`)).toEqual(inRange.filter((k) => !k.startsWith(at(10_000))));
    expect(await keys(`start=${at(12_000)}&end=${at(12_000)}`)).toEqual([]);
  });

  it('sorts ascending with sort=timestamp_device and descending, the exact reverse, by default', async () => {
    const asc = await keys('sort=timestamp_device&size=1000');
    const desc = await keys('sort=-timestamp_device&size=1000');

    expect(asc).toEqual(seeded.map(keyOf));
    expect(desc).toEqual([...asc].reverse());
    expect(await keys('size=1000')).toEqual(desc);
  });

  it('filters by repeated device and tag parameters', async () => {
    const result = await keys(`device=${devices[0]}&device=${devices[2]}&tag=humidity&size=1000&sort=timestamp_device`);

    expect(result).toEqual(seeded.filter((p) => p.device_id !== devices[1] && p.tag === 'humidity').map(keyOf));
    expect(await keys(`device=${devices[1]}&size=1000`)).toHaveLength(80);
    expect(await keys(`tag=temperature&tag=humidity&size=1000`)).toHaveLength(240);
    expect(await keys(`device=${newId('dev')}`)).toEqual([]);
  });

  it('pages so that consecutive pages never overlap or skip, for every page size and order', async () => {
    const sizes = [1, 7, 25];
    // Each page is a request: the ranges hold just more than the largest page (5 timestamps × 6
    // ties, pages of 7 ending inside them; one device's 40 points of a tag).
    const filters = [`start=${at(5_000)}&end=${at(10_000)}`, `device=${devices[1]}&tag=temperature`];
    for (const filter of filters) {
      for (const sort of ['timestamp_device', '-timestamp_device']) {
        const all = await keys(`${filter}&sort=${sort}&size=1000`);
        expect(all.length).toBeGreaterThan(Math.max(...sizes));
        for (const size of sizes) {
          const pages: string[] = [];
          for (let from = 0; from * size <= all.length; from++) pages.push(...(await keys(`${filter}&sort=${sort}&size=${size}&from=${from}`)));

          expect(pages).toEqual(all);
        }
      }
    }
    // About 180 requests one after another: a bound that a loaded machine still meets.
  }, 240_000);

  it('holds the second record with from=1 and size=1, and nothing past the end or with size=0', async () => {
    expect(await keys('from=1&size=1')).toEqual([keyOf(seeded[seeded.length - 2])]);
    expect(await keys('from=240&size=1')).toEqual([]);
    expect(await query('size=0')).toMatchObject({ status: 200, body: { result: [] } });
  });

  it('returns every record as one valid JSON document with size=175000', async () => {
    const { status, body } = await query('size=175000&sort=timestamp_device');

    expect(status).toBe(200);
    expect(body.result.map(keyOf)).toEqual(seeded.map(keyOf));
  });

  it('gzips the stream when the client accepts gzip, and only then', async () => {
    const url = `${runtime.storage_url}/timeseries/${workspaceId}/data?size=1000`;
    const plain = await rawGet(url, { 'x-api-key': runtime.api_key });
    const gzipped = await rawGet(url, { 'x-api-key': runtime.api_key, 'accept-encoding': 'br;q=1, gzip;q=0.5' });
    const refused = await rawGet(url, { 'x-api-key': runtime.api_key, 'accept-encoding': 'gzip;q=0, identity' });

    expect(gzipped.headers['content-encoding']).toBe('gzip');
    // (the deployed stack adds Origin for the console's CORS: Vary lists both there)
    expect(String(gzipped.headers.vary).split(/,\s*/)).toContain('Accept-Encoding');
    expect(gzipped.bytes.length).toBeLessThan(plain.bytes.length / 4);
    expect(gunzipSync(gzipped.bytes).toString('utf8')).toBe(plain.bytes.toString('utf8'));
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.bytes.toString('utf8')).toBe(plain.bytes.toString('utf8'));
  });

  it('answers 404 for another account’s workspace, in either direction, and leaks nothing', async () => {
    const other = await newAccount(registryDb(), 'other');
    await timeseriesStore().write([{ ...seeded[0], workspace_id: other.workspace_id, payload: 'theirs' }]);

    const mineAsked = await query('', other.api_key, workspaceId);
    const theirsAsked = await query('', runtime.api_key, other.workspace_id);
    const unknown = await query('', runtime.api_key, newId('wks'));

    for (const answer of [mineAsked, theirsAsked, unknown]) {
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
    expect(await query('', other.api_key, other.workspace_id)).toMatchObject({ status: 200, body: { result: [{ payload: 'theirs' }] } });
  });

  it.each([
    ['start', 'start=yesterday'],
    ['end', 'end=2025-13-01T00:00:00Z'],
    ['from', 'from=-1'],
    ['from', 'from=1.5'],
    ['size', 'size=175001'],
    ['size', 'size=ten'],
    ['sort', 'sort=timestamp_in'],
    ['device', 'device=my%20sensor'],
    ['tag', 'tag=no%20spaces'],
    ['size', 'size=1&size=2'],
    ['color', 'color=red'],
  ])('answers 400 naming %s for %s', async (parameter, params) => {
    const { status, body } = await query(params);

    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    // A repeatable parameter is named with the position of the bad value (query.device.0).
    expect(body.error.details.map((d: { field: string }) => d.field.replace(/\.\d+$/, ''))).toContain(`query.${parameter}`);
  });

  it('answers 401 without an API key', async () => {
    const { status, bytes } = await rawGet(`${runtime.storage_url}/timeseries/${workspaceId}/data`, {});

    expect(status).toBe(401);
    expect(JSON.parse(bytes.toString('utf8')).error.code).toBe('unauthorized');
  });
});
