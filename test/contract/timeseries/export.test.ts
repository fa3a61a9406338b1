/**
 * Data exports (spec/operations.md §4) on DynamoDB Local and the local S3 (fauxqs behind its
 * verifying front): runs that stop at a deliberately short deadline and go on in the next
 * message, faults at every step between a part and its record, a second message while a run
 * holds the export, and the files read back and compared with the storage query.
 */
import { AbortMultipartUploadCommand, ListPartsCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { randomUUID } from 'node:crypto';
import { createExport, getExport, listExports } from '../../../lambdas/domain/exports/export-requests';
import { EXPORT_MAX_FAILED_RUNS, EXPORT_OBJECTS, runExport, type ExportDeps, type ExportObjects } from '../../../lambdas/domain/exports/export-runs';
import { queryTimeseries } from '../../../lambdas/domain/data/timeseries';
import { updateWorkspace } from '../../../lambdas/domain/tenancy/workspaces';
import { EXPORT_LIFETIME_DAYS } from '../../../lambdas/buckets';
import type { ExportUpdate, LiveMessage } from '../../../lambdas/domain/console-live/live';
import { CreateExportBodySchema, type CreateExportBody, type Export, type ExportJob } from '../../../lambdas/schemas/export';
import type { TimeseriesRecord } from '../../../lambdas/schemas/timeseries';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError } from '../../../lambdas/shared/errors';
import type { Caller } from '../../../lambdas/shared/http';
import { newId } from '../../../lambdas/shared/ids';
import { getExport as readRecord, type ExportCursor } from '../../../lambdas/stores/export-store';
import type { PointToStore, TimeseriesStore } from '../../../lambdas/stores/timeseries';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { TIMESERIES_TTL_ATTRIBUTE } from '../../../lambdas/stores/timeseries/keys';
import { LOCAL_AWS_ENV } from '../../../local/dynamodb-local';
import { startLocalS3, type LocalS3 } from '../../../local/s3-engine';
import { newAccount } from '../../helpers/callers';
import { parseCsv } from '../../helpers/csv';
import { freshTable } from '../../helpers/db';

const MIB = 1024 * 1024;
/** S3's least part: the tests' parts, so that a file of a few MB takes several. */
const PART = 5 * MIB;
const DAY = 86_400_000;
/**
 * The payloads' padding: three bytes of UTF-8 a character, so that a part's bytes take a third of
 * the characters the store digests as it writes them (most of a seed's time) and the test reads back.
 */
const PAD = '€';
const padOf = (bytes: number) => PAD.repeat(Math.ceil(bytes / Buffer.byteLength(PAD)));
const START = Date.UTC(2026, 2, 1);

let fauxqs: FauxqsServer;
let s3: LocalS3;
let client: S3Client;
let db: Db;
let store: TimeseriesStore;
const bucket = `contract-exports-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  s3 = await startLocalS3({ engine: fauxqs.address, credentials: { [LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID]: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY } });
  await s3.createBucket(bucket);
  // Read by the object store when it makes its client, and at each call.
  Object.assign(process.env, { AWS_ENDPOINT_URL_S3: s3.endpoint, EXPORTS_BUCKET: bucket });
  client = new S3Client({});
  db = await freshTable();
  store = dynamoDbTimeseriesStore(await freshTable(`timeseries-${randomUUID()}`, { ttl: TIMESERIES_TTL_ATTRIBUTE }), { writeConcurrency: 8 });
});
afterAll(async () => {
  client?.destroy();
  await s3?.stop();
  await fauxqs?.stop();
});

/** The export queue: what the runs sent back, in order. */
const queue = () => {
  const sent: ExportJob[] = [];
  return { sent, enqueue: async (job: ExportJob) => void sent.push(job) };
};

const depsOf = (overrides: Partial<ExportDeps> = {}): ExportDeps & { sent: ExportJob[] } => {
  const { sent, enqueue } = queue();
  return { db, store, objects: EXPORT_OBJECTS, enqueue, partBytes: () => PART, sent, ...overrides };
};

/** A live channel that keeps the `export` messages it is given. */
const liveOf = () => {
  const told: LiveMessage[] = [];
  return { told, live: async (messages: LiveMessage[]) => void told.push(...messages) };
};
const updatesOf = (told: LiveMessage[]) => told.map((m) => m.message as ExportUpdate);

/** A deadline a minute away: a run stops once it has written a part (it keeps a minute for the end). */
const shortDeadline = () => Date.now() + 60_000;
/** A deadline far away: a run goes to the end of the range. */
const longDeadline = () => Date.now() + 15 * 60_000;

/** Starts an export and runs it as the export queue would, message after message, until it stops going on. */
const exportAll = async (caller: Caller, workspaceId: string, body: CreateExportBody, deps = depsOf(), deadline = shortDeadline) => {
  const { sent, enqueue } = queue();
  const created = await createExport(db, caller, workspaceId, CreateExportBodySchema.parse(body), enqueue);
  const outcomes: string[] = [];
  const cursors: Array<ExportCursor | undefined> = [];
  const runDeps = { ...deps, enqueue };
  while (sent.length) {
    outcomes.push(await runExport(runDeps, sent.shift()!, deadline()));
    cursors.push((await readRecord(db, workspaceId, created.id))?.cursor);
  }
  return { created, outcomes, cursors, shown: await getExport(db, caller, workspaceId, created.id) };
};

/** The file of a ready export, through its presigned URL, as a client downloads it. */
const download = async (shown: Export) => {
  const response = await fetch(shown.url!);
  if (!response.ok) throw new Error(`download answered ${response.status}: ${await response.text()}`);
  return Buffer.from(await response.arrayBuffer());
};

/** What the storage query answers for the same filters, oldest first: what the file must hold. */
const queried = async (caller: Caller, workspaceId: string, filters: Omit<CreateExportBody, 'format'> = {}) => {
  const records: TimeseriesRecord[] = [];
  const { device, tag, fleet, start, end } = filters;
  for await (const r of await queryTimeseries(db, store, caller, workspaceId, {
    start,
    end,
    device,
    tag,
    fleet,
    from: 0,
    size: 175_000,
    sort: 'timestamp_device',
  }))
    records.push(r);
  return records;
};

const csvRowOf = (r: TimeseriesRecord) => [r.device_id, r.fleet_id, r.tag, r.timestamp_device, r.timestamp_in, JSON.stringify(r.payload)];
const HEADER = ['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload'];

/** Payloads a CSV writer must quote, and some it must not. */
const AWKWARD: unknown[] = [
  { text: 'a, b', quote: 'say "hi"', lines: 'one\r\ntwo\nthree' },
  'a lone "string", with a comma',
  ['x', 1, null, { deep: ['"', ','] }],
  '=1+2',
  { emoji: '🌡️ 21.5 °C', zero: '\u0000' },
  -3.5,
  null,
  true,
];

/**
 * A workspace's points: `count` points a second apart on three devices, payloads padded with
 * `padding` bytes, the awkward ones among them, and a run of cloud-stamped points
 * that share one stamp (another origin each), large enough that a part ends inside it.
 */
const seed = async (
  workspaceId: string,
  {
    count,
    padding,
    shared = 0,
    sharedPadding = 0,
    fleet = newId('flt'),
  }: { count: number; padding: number; shared?: number; sharedPadding?: number; fleet?: string },
) => {
  const devices = [newId('dev'), newId('dev'), newId('dev')];
  const points: PointToStore[] = [];
  for (let i = 0; i < count; i++) {
    const at = new Date(START + i * 1000).toISOString();
    const payload = i % 97 === 5 ? AWKWARD[((i / 97) | 0) % AWKWARD.length] : { n: i, pad: padOf(padding) };
    points.push({
      workspace_id: workspaceId,
      fleet_id: fleet,
      device_id: devices[i % devices.length],
      tag: i % 2 ? 'b' : 'a',
      timestamp_device: at,
      timestamp_in: at,
      payload,
    });
  }
  const stamp = new Date(START + Math.floor(count / 2) * 1000 + 500).toISOString().replace('Z', '042Z');
  for (let i = 0; i < shared; i++) {
    points.push({
      workspace_id: workspaceId,
      fleet_id: fleet,
      device_id: devices[0],
      tag: 'a',
      timestamp_device: stamp,
      timestamp_in: `${stamp.slice(0, 23)}Z`,
      sequence: i,
      origin: `${String(i).padStart(8, '0')}`,
      payload: { shared: i, pad: padOf(sharedPadding) },
    });
  }
  for (let i = 0; i < points.length; i += 2000) await store.write(points.slice(i, i + 2000));
  return { fleet, devices };
};

describe('an export across runs', () => {
  it('stops after a part when its time is up and goes on in the next message, each part once, into one CSV file equal to the storage query (awkward payloads quoted)', async () => {
    const { caller, workspace_id } = await newAccount(db);
    // About 15 MB: three 5 MiB parts, the middle one ending inside 300 points of one stamp.
    await seed(workspace_id, { count: 6000, padding: 1500, shared: 300, sharedPadding: 15_000 });
    const { told, live } = liveOf();

    const { created, outcomes, cursors, shown } = await exportAll(caller, workspace_id, { format: 'csv' }, depsOf({ live }));
    const file = await download(shown);
    const expected = await queried(caller, workspace_id);

    expect(created).toMatchObject({ status: 'running', rows: 0, bytes: 0, url: null, completed_at: null });
    expect(outcomes.length).toBeGreaterThanOrEqual(3);
    expect(outcomes.slice(0, -1).every((o) => o === 'continued')).toBe(true);
    expect(outcomes.at(-1)).toBe('ready');
    // A part ended inside the points of one stamp: the next run went on after those it had written.
    expect(cursors.some((c) => c !== undefined && c.us === 42 && c.same > 1)).toBe(true);
    expect(shown).toMatchObject({ status: 'ready', format: 'csv', rows: expected.length, bytes: file.length, error: null });
    expect(expected.length).toBe(6300);
    expect(file.toString('utf8').endsWith('\r\n')).toBe(true);
    expect(parseCsv(file.toString('utf8'))).toEqual([HEADER, ...expected.map(csvRowOf)]);
    expect(AWKWARD.every((payload) => expected.some((r) => JSON.stringify(r.payload) === JSON.stringify(payload)))).toBe(true);
    // The consoles were told of each part recorded (one message each, the points so far), then of the end.
    const updates = updatesOf(told);
    const running = updates.filter((u) => u.status === 'running');
    expect(told.every((m) => m.workspaceId === workspace_id && m.kind === 'export')).toBe(true);
    expect(updates.every((u) => u.export_id === created.id && !Number.isNaN(Date.parse(u.at)))).toBe(true);
    expect(running.length).toBeGreaterThanOrEqual(outcomes.length - 1);
    expect(running.length).toBeLessThanOrEqual((await readRecord(db, workspace_id, created.id))!.parts);
    expect(running.every((u, i) => u.points_written > (running[i - 1]?.points_written ?? 0))).toBe(true);
    expect(updates.slice(running.length)).toEqual([{ export_id: created.id, status: 'ready', points_written: 6300, at: expect.any(String) }]);
  }, 180_000);

  it('writes NDJSON, one record a line as the storage query answers it, within the filters and the workspace’s retention', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const now = Date.now();
    const { fleet, devices } = await seed(workspace_id, { count: 3000, padding: 10, fleet: default_fleet_id });
    const recent = Array.from({ length: 50 }, (_, i) => ({
      workspace_id,
      fleet_id: fleet,
      device_id: devices[1],
      tag: 'b',
      timestamp_device: new Date(now - i * 60_000).toISOString(),
      timestamp_in: new Date(now).toISOString(),
      payload: { recent: i },
    }));
    await store.write(recent);
    await updateWorkspace(db, async () => undefined, caller, workspace_id, { data_retention_days: 30 }, now);
    const filters = { device: [devices[1]], tag: ['b'], fleet: [fleet] };

    const { shown } = await exportAll(caller, workspace_id, { format: 'ndjson', ...filters }, depsOf(), longDeadline);
    const lines = (await download(shown)).toString('utf8').split('\n');

    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line))).toEqual(await queried(caller, workspace_id, filters));
    expect(lines).toHaveLength(50);
    expect(shown).toMatchObject({ status: 'ready', rows: 50, filters });
  });

  it('writes an empty range as a CSV header alone and an empty NDJSON file', async () => {
    const { caller, workspace_id } = await newAccount(db);

    const csv = await exportAll(caller, workspace_id, { format: 'csv', start: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z' });
    const ndjson = await exportAll(caller, workspace_id, { format: 'ndjson' });

    expect((await download(csv.shown)).toString('utf8')).toBe(`${HEADER.join(',')}\r\n`);
    expect((await download(ndjson.shown)).length).toBe(0);
    expect([csv.shown.rows, ndjson.shown.rows, ndjson.shown.bytes]).toEqual([0, 0, 0]);
    expect(csv.shown.filters).toEqual({ start: '2020-01-01T00:00:00.000Z', end: '2020-01-02T00:00:00.000Z' });
  });
});

/** S3 as the export sees it, with a fault put in once at one step. */
const faulty = (step: keyof ExportObjects, when: (call: number, args: unknown[]) => 'before' | 'after' | undefined): ExportObjects => {
  let calls = 0;
  const wrapped = async (...args: unknown[]) => {
    const fault = when(++calls, args);
    const crash = () => Object.assign(new Error(`S3 fault at ${step} #${calls}`), { name: 'InternalError' });
    if (fault === 'before') throw crash();
    const result = await (EXPORT_OBJECTS[step] as (...a: unknown[]) => Promise<unknown>)(...args);
    if (fault === 'after') throw crash();
    return result;
  };
  return { ...EXPORT_OBJECTS, [step]: wrapped };
};

describe('faults and retries never write a row twice or leave one out', () => {
  let caller: Caller;
  let workspaceId: string;
  let expected: string[][];
  beforeAll(async () => {
    ({ caller, workspace_id: workspaceId } = await newAccount(db));
    // About 11.4 MB: just past two parts (each test checks it), so that the second part is one
    // written while the run goes on, not the last.
    await seed(workspaceId, { count: 7000, padding: 1500 });
    expected = [HEADER, ...(await queried(caller, workspaceId)).map(csvRowOf)];
  });

  /** Runs an export to its end on `objects`, a part a run, retrying a failed run with the same message as SQS would. */
  const runWithRetries = async (objects: ExportObjects) => {
    const deps = depsOf({ objects });
    const created = await createExport(db, caller, workspaceId, { format: 'csv' }, deps.enqueue);
    const outcomes: string[] = [];
    while (deps.sent.length && outcomes.length < 20) {
      const job = deps.sent[0];
      try {
        outcomes.push(await runExport(deps, job, shortDeadline()));
        deps.sent.shift();
      } catch (error) {
        outcomes.push(`threw ${(error as Error).message}`);
      }
    }
    const shown = await getExport(db, caller, workspaceId, created.id);
    return { outcomes, shown, rows: parseCsv((await download(shown)).toString('utf8')) };
  };

  it.each([
    ['a part that failed to upload', 'uploadPart', (n: number) => (n === 2 ? 'before' : undefined)],
    [
      'a part uploaded but never recorded (a crash between the two): sent again, it replaces itself',
      'uploadPart',
      (n: number) => (n === 2 ? 'after' : undefined),
    ],
    ['an upload begun but never recorded', 'startUpload', (n: number) => (n === 1 ? 'after' : undefined)],
    ['a completion that S3 did but the run never recorded', 'completeUpload', (n: number) => (n === 1 ? 'after' : undefined)],
    ['a completion that failed', 'completeUpload', (n: number) => (n === 1 ? 'before' : undefined)],
  ] as const)(
    '%s',
    async (_name, step, when) => {
      const { outcomes, shown, rows } = await runWithRetries(faulty(step, when as never));

      expect(outcomes.some((o) => o.startsWith('threw S3 fault'))).toBe(true);
      expect(outcomes.at(-1)).toBe('ready');
      expect(shown.bytes).toBeGreaterThan(2 * PART);
      expect(rows).toEqual(expected);
      expect(shown).toMatchObject({ status: 'ready', rows: expected.length - 1 });
    },
    120_000,
  );

  it('does nothing for a second message while a run holds the export; the holder finishes it', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const paused: TimeseriesStore = {
      ...store,
      readRange: async function* (range) {
        await held;
        yield* store.readRange(range);
      },
    };
    const deps = depsOf();
    const created = await createExport(db, caller, workspaceId, { format: 'csv' }, deps.enqueue);
    const job = deps.sent.shift()!;

    const holder = runExport({ ...deps, store: paused }, job, longDeadline());
    await waitFor(async () => (await readRecord(db, workspaceId, created.id))?.lease_id !== undefined);
    const duplicate = await runExport(deps, job, longDeadline());
    release();

    expect(duplicate).toBe('skipped');
    expect(await holder).toBe('ready');
    expect(parseCsv((await download(await getExport(db, caller, workspaceId, created.id))).toString('utf8'))).toEqual(expected);
  }, 120_000);

  it('lets the next run take an export whose run died (its hold runs out at its deadline)', async () => {
    const deps = depsOf();
    const created = await createExport(db, caller, workspaceId, { format: 'csv' }, deps.enqueue);
    const job = deps.sent.shift()!;
    // A run whose Lambda stopped at its deadline, a second from now, in the middle of its reading: it never resumes.
    const dying: TimeseriesStore = { ...store, readRange: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise<never>(() => undefined) }) }) };
    void runExport({ ...deps, store: dying }, job, Date.now() + 1000);
    await waitFor(async () => (await readRecord(db, workspaceId, created.id))?.lease_id !== undefined);

    const early = await runExport(deps, job, longDeadline());
    const later = await runExport({ ...deps, now: () => Date.now() + 60_000 }, job, longDeadline());

    expect(early).toBe('skipped');
    expect(later).toBe('ready');
    expect(parseCsv((await download(await getExport(db, caller, workspaceId, created.id))).toString('utf8'))).toEqual(expected);
  }, 120_000);

  it(`is marked failed, saying why, after ${EXPORT_MAX_FAILED_RUNS} failed runs in a row, and its upload is aborted`, async () => {
    const { told, live } = liveOf();
    const deps = depsOf({ objects: faulty('uploadPart', () => 'before'), live });
    const created = await createExport(db, caller, workspaceId, { format: 'csv' }, deps.enqueue);
    const job = deps.sent.shift()!;
    const outcomes: string[] = [];

    for (let run = 0; run < EXPORT_MAX_FAILED_RUNS; run++) outcomes.push(await runExport(deps, job, longDeadline()).catch((e: Error) => `threw ${e.name}`));
    const { upload_id: uploadId, key } = (await readRecord(db, workspaceId, created.id))!;
    outcomes.push(await runExport(deps, job, longDeadline()));
    const shown = await getExport(db, caller, workspaceId, created.id);

    expect(outcomes).toEqual([...Array(EXPORT_MAX_FAILED_RUNS).fill('threw InternalError'), 'failed']);
    expect(shown).toMatchObject({
      status: 'failed',
      url: null,
      error: { code: 'export_failed', message: expect.stringContaining(`${EXPORT_MAX_FAILED_RUNS} runs in a row failed (the last: InternalError)`) },
    });
    expect(uploadId).toBeDefined();
    await expect(client.send(new ListPartsCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))).rejects.toMatchObject({ name: 'NoSuchUpload' });
    expect(await runExport(deps, job, longDeadline())).toBe('skipped');
    expect(Date.parse(shown.expires_at!) - Date.parse(shown.completed_at!)).toBe(EXPORT_LIFETIME_DAYS * DAY);
    // The failed runs recorded no progress: the consoles heard of the end alone.
    expect(updatesOf(told)).toEqual([{ export_id: created.id, status: 'failed', points_written: 0, at: expect.any(String) }]);
  }, 120_000);

  it('is not held up or failed by a live channel that never answers', async () => {
    const { caller, workspace_id } = await newAccount(db);
    await seed(workspace_id, { count: 50, padding: 10 });
    const hanging = () => new Promise<void>(() => undefined);

    const { outcomes, shown } = await exportAll(caller, workspace_id, { format: 'ndjson' }, depsOf({ live: hanging }));

    expect(outcomes).toEqual(['ready']);
    expect(shown).toMatchObject({ status: 'ready', rows: 50 });
  }, 60_000);

  it('is marked failed when S3 no longer has its upload (aborted after the longest run, or a restarted local S3)', async () => {
    const deps = depsOf();
    const created = await createExport(db, caller, workspaceId, { format: 'csv' }, deps.enqueue);
    expect(await runExport(deps, deps.sent.shift()!, shortDeadline())).toBe('continued');
    const record = (await readRecord(db, workspaceId, created.id))!;
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: record.key, UploadId: record.upload_id }));

    const outcome = await runExport(deps, deps.sent.shift()!, shortDeadline());

    expect(outcome).toBe('failed');
    expect((await getExport(db, caller, workspaceId, created.id)).error).toMatchObject({ code: 'upload_aborted' });
    await expect(client.send(new ListPartsCommand({ Bucket: bucket, Key: record.key, UploadId: record.upload_id }))).rejects.toMatchObject({
      name: 'NoSuchUpload',
    });
  }, 120_000);
});

/** Polls until a condition holds (10 s at most). */
const waitFor = async (condition: () => Promise<boolean>) => {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('the export resource', () => {
  it('is 404 in another account, with an unknown fleet (nothing written), and once its lifetime has passed; the list leaves it out then', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const other = await newAccount(db, 'other');
    const { shown } = await exportAll(caller, workspace_id, { format: 'csv' });
    const { sent, enqueue } = queue();
    const after = Date.parse(shown.expires_at!);

    await expect(getExport(db, other.caller, workspace_id, shown.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(getExport(db, other.caller, other.workspace_id, shown.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(createExport(db, other.caller, workspace_id, { format: 'csv' }, enqueue)).rejects.toBeInstanceOf(NotFoundError);
    await expect(createExport(db, caller, workspace_id, { format: 'csv', fleet: ['flt-123456789'] }, enqueue)).rejects.toMatchObject({
      status: 404,
      details: [{ field: 'body.fleet' }],
    });
    expect(sent).toEqual([]);
    const listed = async (now: number) => {
      const ids: string[] = [];
      for await (const e of (await listExports(db, caller, workspace_id, {}, now)).items) ids.push(e.id);
      return ids;
    };
    expect(await listed(Date.now())).toEqual([shown.id]);
    expect(await listed(after)).toEqual([]);
    await expect(getExport(db, caller, workspace_id, shown.id, after)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('answers a download URL that works an hour, or until the export expires if that is sooner', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { shown } = await exportAll(caller, workspace_id, { format: 'ndjson' });
    const expires = Date.parse(shown.expires_at!);

    const now = await getExport(db, caller, workspace_id, shown.id);
    const late = await getExport(db, caller, workspace_id, shown.id, expires - 600_000);

    expect(Date.parse(now.url_expires_at!) - Date.now()).toBeGreaterThan(3_590_000);
    expect(Date.parse(now.url_expires_at!) - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect(late.url_expires_at).toBe(shown.expires_at);
    expect(new URL(now.url!).pathname).toBe(`/${bucket}/exports/${workspace_id}/${shown.id}.ndjson`);
  });

  it('deletes an export whose run could not be queued, and says so', async () => {
    const { caller, workspace_id } = await newAccount(db);

    await expect(
      createExport(db, caller, workspace_id, { format: 'csv' }, async () => {
        throw new Error('SQS is down');
      }),
    ).rejects.toThrow('SQS is down');

    const ids: string[] = [];
    for await (const e of (await listExports(db, caller, workspace_id)).items) ids.push(e.id);
    expect(ids).toEqual([]);
  });

  it('lists newest first, a page at a time', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { enqueue } = queue();
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await createExport(db, caller, workspace_id, { format: 'csv' }, enqueue, Date.now() + i)).id);

    const first = await listExports(db, caller, workspace_id, { limit: 2 });
    const firstIds: string[] = [];
    for await (const e of first.items) firstIds.push(e.id);
    const second = await listExports(db, caller, workspace_id, { limit: 2, cursor: first.next!() ?? undefined });
    const secondIds: string[] = [];
    for await (const e of second.items) secondIds.push(e.id);

    expect([...firstIds, ...secondIds]).toEqual([...made].reverse());
    expect(second.next!()).toBeNull();
  });
});
