/**
 * Data exports end to end (spec/operations.md §4), on one runtime whose export runs write one part
 * each: an export beyond 175,000 rows that spans several runs, its CSV and an NDJSON
 * export read back from the presigned URL and compared with the storage query, the list, 404s and
 * 400s that write nothing. In the e2e-cloud project the same runs on the template's bundles,
 * queue, bucket and IAM.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createAccount } from '../../../lambdas/domain/tenancy/accounts';
import type { Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import { PART_BYTES } from '../../../lambdas/domain/exports/export-parts';
import { TIMESERIES_SIZE_MAX } from '../../../lambdas/schemas/timeseries';
import type { DataPoint } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { waitFor } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { parseCsv } from '../../helpers/csv';
import { cloudAssemblyDir, startRuntime } from '../../helpers/runtime';

/** The storage query's largest page. */
const PAGE = TIMESERIES_SIZE_MAX;
/**
 * On the sources, one point past a query page (a property of the domain: the run reads the range
 * page by page). On the template, what it changes is the export queue, the runs' bundle and IAM and
 * the bucket's multipart upload: 100,000 points (about 12.6 MiB of CSV) are a part of PART_BYTES
 * (8 MiB) and a last one, written by two runs, at 43 % fewer points to write, export and read back.
 */
const POINTS = cloudAssemblyDir() ? 100_000 : PAGE + 1;
const START = Date.UTC(2026, 0, 1);

let runtime: LocalRuntime;
let api: ApiClient;
let workspaceId: string;
let devices: string[];

// The runtime's tables by the names it gives them (the cloud assembly's are its own).
const docOf = () => DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const registry = (): Db => ({ doc: docOf(), table: process.env.REGISTRY_TABLE! });
const store = () => dynamoDbTimeseriesStore({ doc: docOf(), table: process.env.TIMESERIES_TABLE! }, { writeConcurrency: 8 });

interface Shown {
  id: string;
  status: string;
  rows: number;
  bytes: number;
  url: string | null;
  [field: string]: unknown;
}

/** Polls an export until it has ended, noting each `rows` it showed while running. */
const untilEnded = async (id: string, workspace = workspaceId) => {
  const progress: number[] = [];
  const shown = await waitFor(
    async () => {
      const { status, body } = await api.get(`/timeseries/${workspace}/exports/${id}`);
      if (status !== 200) throw new Error(`GET export answered ${status}: ${JSON.stringify(body)}`);
      if (body.export.status === 'running') {
        if (progress.at(-1) !== body.export.rows) progress.push(body.export.rows);
        throw new Error(`still running (${body.export.rows} rows)`);
      }
      return body.export as Shown;
    },
    'the export to end',
    150_000,
  );
  return { shown, progress };
};

/** Every record the storage query answers for these filters, oldest first, a page of 175,000 at a time. */
const queried = async (filters = '') => {
  const records: Array<Record<string, unknown>> = [];
  for (let from = 0; ; from++) {
    const { status, body } = await api.get(`/timeseries/${workspaceId}/data?sort=timestamp_device&size=${PAGE}&from=${from}${filters}`);
    if (status !== 200) throw new Error(`the storage query answered ${status}`);
    for (const record of body.result) records.push(record);
    if (body.result.length < PAGE) return records;
  }
};

const download = async (url: string) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`the download answered ${response.status}: ${await response.text()}`);
  return response.text();
};

beforeAll(async () => {
  // Each export run stops after its first part and goes on in a new message: an export of N parts
  // takes N runs, whatever the machine's speed (a run of a second finished 100,000 points in one).
  runtime = await startRuntime({ exportRunSeconds: 0.001 });
  api = apiClient(runtime.storage_url, runtime.api_key);
  workspaceId = (await api.post('/workspaces', { name: 'exports' })).body.workspace.id;
  const fleet = ((await api.get(`/workspaces/${workspaceId}/fleets`)).body.fleets as Array<{ id: string }>)[0].id;
  devices = [newId('dev'), newId('dev'), newId('dev')];
  // Straight into the store, as the benchmarks do: 175,001 points through the device API would take minutes.
  const points: DataPoint[] = [];
  for (let i = 0; i < POINTS; i++) {
    const at = new Date(START + i * 1000).toISOString();
    const payload = i % 1000 === 7 ? { note: 'a, "quoted"\nline', i } : { temp: (i % 400) / 10, i };
    points.push({
      workspace_id: workspaceId,
      fleet_id: fleet,
      device_id: devices[i % 3],
      tag: i % 2 ? 'climate' : 'power',
      timestamp_device: at,
      timestamp_in: at,
      payload,
    });
  }
  const writer = store();
  for (let i = 0; i < points.length; i += 10_000) await writer.write(points.slice(i, i + 10_000));
  // A start (on the template, its functions' workers) and 100,000–175,001 writes while the other
  // projects start too: a CI run at load ~7 took more than 300 s.
}, 600_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('an export of any size', () => {
  it(`exports ${POINTS.toLocaleString('en')} points${POINTS > PAGE ? " (past a query page's 175,000)" : ''} as one CSV file across several runs, equal to the storage query`, async () => {
    const started = await api.post(`/timeseries/${workspaceId}/exports`, { format: 'csv' });
    const { shown, progress } = await untilEnded(started.body.export.id);
    const text = await download(shown.url!);
    const expected = await queried();

    expect(started.status).toBe(202);
    expect(started.body.export).toMatchObject({ status: 'running', format: 'csv', rows: 0, url: null, filters: {} });
    expect(shown).toMatchObject({ status: 'ready', rows: POINTS, bytes: Buffer.byteLength(text), error: null });
    // A multipart upload: more than one part's bytes.
    expect(shown.bytes).toBeGreaterThan(PART_BYTES);
    // Progress as polled only grows, up to the whole (shown while the upload is completed). Which
    // parts a poll sees depends on the machine's speed: the contract test asserts each part's
    // progress, from the live messages.
    expect(progress.every((rows, i) => rows <= POINTS && rows >= (progress[i - 1] ?? 0))).toBe(true);
    expect(expected).toHaveLength(POINTS);
    expect(parseCsv(text)).toEqual([
      ['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload'],
      ...expected.map((r) => [r.device_id, r.fleet_id, r.tag, r.timestamp_device, r.timestamp_in, JSON.stringify(r.payload)]),
    ]);
  }, 300_000);

  it('exports NDJSON within filters, one storage-query record a line, and lists exports newest first, a page at a time', async () => {
    // An hour of one device's tag: 600 points.
    const filters = { device: [devices[1]], tag: ['climate'], start: new Date(START + 3600_000).toISOString(), end: new Date(START + 7200_000).toISOString() };
    const started = await api.post(`/timeseries/${workspaceId}/exports`, { format: 'ndjson', ...filters });
    const { shown } = await untilEnded(started.body.export.id);
    const lines = (await download(shown.url!)).split('\n');
    const expected = await queried(`&device=${devices[1]}&tag=climate&start=${filters.start}&end=${filters.end}`);
    const first = await api.get(`/timeseries/${workspaceId}/exports?limit=1`);
    const second = await api.get(`/timeseries/${workspaceId}/exports?limit=1&cursor=${first.body.next}`);
    const all = await api.get(`/timeseries/${workspaceId}/exports`);

    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line))).toEqual(expected);
    expect(shown).toMatchObject({ status: 'ready', rows: expected.length, filters });
    expect(first.body.exports.map((e: Shown) => e.id)).toEqual([shown.id]);
    expect(second.body.exports).toHaveLength(1);
    expect(all.body.exports.map((e: Shown) => e.status)).toEqual(['ready', 'ready']);
    expect(all.body.exports[0]).toMatchObject({
      id: shown.id,
      url: expect.stringContaining('X-Amz-Signature='),
      url_expires_at: expect.any(String),
      expires_at: expect.any(String),
    });
    expect(all.body.next).toBeUndefined();
  }, 300_000);

  it('serves the file to its presigned URL alone: a changed signature is refused', async () => {
    const { body } = await api.get(`/timeseries/${workspaceId}/exports?limit=1`);
    const url = new URL(body.exports[0].url);
    url.searchParams.set('X-Amz-Signature', '0'.repeat(64));

    expect((await fetch(url)).status).toBe(403);
  });
});

describe('names on request ("names": true)', () => {
  let named: string;
  let boiler: string;
  let chiller: string;
  const gone = newId('dev');
  const cell = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
  const get = async (path: string) => {
    const { status, body } = await api.get(`/timeseries/${named}${path}`);
    if (status !== 200) throw new Error(`${path} answered ${status}`);
    return body;
  };
  const exported = async (body: Record<string, unknown>) => {
    const started = await api.post(`/timeseries/${named}/exports`, body);
    const { shown } = await untilEnded(started.body.export.id, named);
    return { started: started.body.export as Shown, shown, text: await download(shown.url!) };
  };

  beforeAll(async () => {
    named = (await api.post('/workspaces', { name: 'names' })).body.workspace.id;
    const fleet = (await api.post(`/workspaces/${named}/fleets`, { name: 'Plant, "north"' })).body.fleet.id as string;
    boiler = (await api.post(`/workspaces/${named}/devices`, { name: 'Boiler 1', fleet_id: fleet })).body.device.id;
    chiller = (await api.post(`/workspaces/${named}/devices`, { name: 'Chiller', fleet_id: fleet })).body.device.id;
    // Three devices, one of them never registered (as a device deleted since).
    const ids = [boiler, chiller, gone];
    await store().write(
      Array.from({ length: 60 }, (_, i) => {
        const at = new Date(START + i * 1000).toISOString();
        return {
          workspace_id: named,
          fleet_id: fleet,
          device_id: ids[i % 3],
          tag: 'climate',
          timestamp_device: at,
          timestamp_in: at,
          payload: { temp: i / 10, i },
        };
      }),
    );
  }, 120_000);

  it('without the option writes the file byte for byte as before (header, columns, CRLF) and shows no names field', async () => {
    const records = (await get('/data?sort=timestamp_device&size=1000')).result as Array<Record<string, string>>;
    const csv = await exported({ format: 'csv' });
    const ndjson = await exported({ format: 'ndjson', names: false });
    const header = 'device_id,fleet_id,tag,timestamp_device,timestamp_in,payload\r\n';
    const lines = records.map(
      (r) => `${[r.device_id, r.fleet_id, r.tag, r.timestamp_device, r.timestamp_in, JSON.stringify(r.payload)].map(cell).join(',')}\r\n`,
    );

    expect(records).toHaveLength(60);
    expect(csv.text).toBe(header + lines.join(''));
    expect(ndjson.text).toBe(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    for (const e of [csv.started, csv.shown, ndjson.started, ndjson.shown]) expect(Object.keys(e)).not.toContain('names');
  }, 300_000);

  it('with it adds device_name and fleet_name (CSV columns after payload, NDJSON fields), empty or null for a device that is gone', async () => {
    const records = (await get('/data?sort=timestamp_device&size=1000')).result as Array<Record<string, string>>;
    const nameOf = (id: string) => (id === boiler ? 'Boiler 1' : id === chiller ? 'Chiller' : '');
    const csv = await exported({ format: 'csv', names: true });
    const ndjson = await exported({ format: 'ndjson', names: true });

    expect(csv.started.names).toBe(true);
    expect(csv.shown).toMatchObject({ status: 'ready', rows: 60, names: true });
    expect(parseCsv(csv.text)).toEqual([
      ['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload', 'device_name', 'fleet_name'],
      ...records.map((r) => [
        r.device_id,
        r.fleet_id,
        r.tag,
        r.timestamp_device,
        r.timestamp_in,
        JSON.stringify(r.payload),
        nameOf(r.device_id),
        'Plant, "north"',
      ]),
    ]);
    expect(
      ndjson.text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(records.map((r) => ({ ...r, device_name: nameOf(r.device_id) || null, fleet_name: 'Plant, "north"' })));
    expect(records.filter((r) => r.device_id === gone)).toHaveLength(20);
  }, 300_000);
});

describe('refusals write nothing', () => {
  const listed = async () => ((await api.get(`/timeseries/${workspaceId}/exports`)).body.exports as Shown[]).map((e) => e.id);

  it.each([
    [{}, 'body.format'],
    [{ format: 'xml' }, 'body.format'],
    [{ format: 'csv', start: '2026-02-02T00:00:00Z', end: '2026-02-01T00:00:00Z' }, 'body.start'],
    [{ format: 'csv', start: 'yesterday' }, 'body.start'],
    [{ format: 'csv', device: ['bad!id'] }, 'body.device.0'],
    [{ format: 'csv', size: 10 }, 'body.size'],
    [{ format: 'csv', names: 'yes' }, 'body.names'],
  ])('answers 400 naming the field for %j', async (body, field) => {
    const before = await listed();

    const { status, body: answer } = await api.post(`/timeseries/${workspaceId}/exports`, body);

    expect(status).toBe(400);
    expect(answer.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await listed()).toEqual(before);
  });

  it('answers 404 for another account’s workspace and exports, an unknown export or fleet, and 400 for what cannot be an export ID', async () => {
    const other = await createAccount(registry(), { name: 'other' });
    const theirs = apiClient(runtime.storage_url, other.api_key);
    const theirExport = (await theirs.post(`/timeseries/${other.workspace_id}/exports`, { format: 'csv' })).body.export.id;
    const mine = (await api.get(`/timeseries/${workspaceId}/exports?limit=1`)).body.exports[0].id;
    const before = await listed();

    const answers = [
      await api.post(`/timeseries/${other.workspace_id}/exports`, { format: 'csv' }),
      await api.get(`/timeseries/${other.workspace_id}/exports`),
      await api.get(`/timeseries/${other.workspace_id}/exports/${theirExport}`),
      await api.get(`/timeseries/${workspaceId}/exports/${theirExport}`),
      await theirs.get(`/timeseries/${workspaceId}/exports/${mine}`),
      await api.get(`/timeseries/${workspaceId}/exports/exp-123456789`),
      await api.post(`/timeseries/${workspaceId}/exports`, { format: 'csv', fleet: ['flt-123456789'] }),
    ];
    const malformed = await api.get(`/timeseries/${workspaceId}/exports/bad!id`);

    expect(answers.map((a) => [a.status, a.body.error.code])).toEqual(Array(answers.length).fill([404, 'not_found']));
    expect(answers.at(-1)!.body.error.details).toEqual([{ field: 'body.fleet', message: 'Fleet flt-123456789 not found.' }]);
    expect([malformed.status, malformed.body.error.details[0].field]).toEqual([400, 'path.exportId']);
    expect(await listed()).toEqual(before);
  });
});
