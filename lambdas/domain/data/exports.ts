import { randomUUID } from 'node:crypto';
import { EXPORT_LIFETIME_DAYS, EXPORT_RUN_MAX_DAYS } from '../../buckets';
import type { Db } from '../../shared/clients';
import { exportQueueUrl, exportRunSeconds, exportsBucket } from '../../shared/env';
import { AppError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import { logger } from '../../shared/logger';
import { formatTime, parseTime } from '../../shared/timestamps';
import type { CreateExportBody, Export, ExportJob } from '../../schemas/export';
import type { PageQuery } from '../../schemas/list';
import {
  claimExport,
  deleteExport,
  getExport as readExport,
  putExport,
  readExportsOfWorkspace,
  updateHeldExport,
  type ExportChange,
  type ExportCursor,
  type ExportRecord,
} from '../../stores/export-store';
import type { Keyed } from '../../stores/items';
import { collection } from '../../stores/keys';
import {
  abortUpload,
  completeUpload,
  headObject,
  NoSuchUploadError,
  presignDownload,
  putObject,
  startUpload,
  uploadPart,
  type ObjectRef,
} from '../../stores/object-store';
import { sendDelayedMessage } from '../../stores/queue-store';
import type { RangePoint, TimeseriesRange, TimeseriesStore } from '../../stores/timeseries';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import { EXPORT_FILES, exportHeader, lineFormatter } from './export-format';
import { requireFleets } from '../registry/fleets';
import { pageSizeOf, paginate, startOf } from '../registry/lists';
import { withinRetention } from './retention';
import { requireWorkspace } from '../tenancy/workspaces';

const DAY_MS = 86_400_000;

/** How long a download URL works: an hour, or until the export expires if that is sooner. */
export const EXPORT_URL_TTL_SECONDS = 3600;

/**
 * The smallest part of an export's multipart upload. Every part but the last must be at least
 * 5 MiB, and an upload holds at most 10,000 parts, so parts grow by this much every 1,000: an
 * upload can reach 55,000 × 8 MiB (430 GiB), with 80 MiB parts at the end (and two in memory at once).
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/qfacts.html
 */
export const PART_BYTES = 8 * 1024 * 1024;

/** The least size of part `partNumber` (1–10,000): PART_BYTES, one more for every 1,000 parts before it. */
export const partBytesOf = (partNumber: number) => PART_BYTES * Math.ceil(partNumber / 1000);

/** Runs in a row that may fail before the export is marked failed (the queue's redrive comes later). */
export const EXPORT_MAX_FAILED_RUNS = 4;

/**
 * Time a run keeps, before its Lambda's timeout, for the part in flight, the last part and the
 * completion of the upload, and the message that goes on with the export.
 */
const RUN_MARGIN_MS = 60_000;

/** A run holds its export this long past its Lambda's timeout, for clocks that differ a little. */
const LEASE_SLACK_MS = 30_000;

/** Lines are joined into chunks of about this many characters before they become bytes. */
const CHUNK_CHARS = 64 * 1024;

/** What an export does with S3 (stores/object-store.ts; a test may put faults in between). */
export interface ExportObjects {
  putObject: typeof putObject;
  startUpload: typeof startUpload;
  uploadPart: typeof uploadPart;
  completeUpload: typeof completeUpload;
  abortUpload: typeof abortUpload;
  headObject: typeof headObject;
}

/** S3 as the export Lambda uses it. */
export const EXPORT_OBJECTS: ExportObjects = { putObject, startUpload, uploadPart, completeUpload, abortUpload, headObject };

/** Puts an export (back) on the export queue. */
export type EnqueueExport = (job: ExportJob) => Promise<void>;

/**
 * Puts an export on the export queue.
 * @throws when no export queue is configured or SQS refuses it.
 */
export const enqueueExport: EnqueueExport = async (job) => {
  const queueUrl = exportQueueUrl();
  if (!queueUrl) throw new AppError(500, 'internal_error', 'EXPORT_QUEUE_URL is not set.');
  await sendDelayedMessage(queueUrl, job, 0);
};

const fileOf = (record: Pick<ExportRecord, 'key'>): ObjectRef => ({ bucket: exportsBucket(), key: record.key });

/** The selection of an export's filters: which points its file holds. */
const rangeOf = (record: ExportRecord): TimeseriesRange => ({
  workspaceId: record.workspace_id,
  start: record.filters.start,
  end: record.filters.end,
  devices: record.filters.device,
  tags: record.filters.tag,
  fleets: record.filters.fleet,
});

const isoOf = (ms: number) => new Date(ms).toISOString();

/** When an export that has ended is gone: its lifetime after it ended. */
const expiryOf = (endedMs: number) => endedMs + EXPORT_LIFETIME_DAYS * DAY_MS;

/**
 * An export as it is now, or undefined when it is gone (its lifetime has passed). An export still
 * running after EXPORT_RUN_MAX_DAYS can never end (S3 has aborted its upload): it is failed.
 */
const settled = (record: ExportRecord, now: number): ExportRecord | undefined => {
  if (record.expires_at !== undefined && Date.parse(record.expires_at) <= now) return undefined;
  const overdue = Date.parse(record.created_at) + EXPORT_RUN_MAX_DAYS * DAY_MS;
  if (record.status !== 'running' || overdue > now) return record;
  if (expiryOf(overdue) <= now) return undefined;
  return {
    ...record,
    status: 'failed',
    completed_at: isoOf(overdue),
    expires_at: isoOf(expiryOf(overdue)),
    error: { code: 'export_overdue', message: `The export did not finish within ${EXPORT_RUN_MAX_DAYS} days: start a new one, over a shorter range.` },
  };
};

/** An export as the API shows it: a fresh download URL when it is ready. */
const toExport = async (record: ExportRecord, now: number): Promise<Export> => {
  const ttl = record.status === 'ready' ? Math.min(EXPORT_URL_TTL_SECONDS, Math.floor((Date.parse(record.expires_at!) - now) / 1000)) : 0;
  const download = ttl > 0 ? await presignDownload(fileOf(record), ttl, new Date(now)) : undefined;
  return {
    id: record.id,
    workspace_id: record.workspace_id,
    status: record.status,
    format: record.format,
    filters: record.filters,
    rows: record.rows,
    bytes: record.bytes,
    created_at: record.created_at,
    updated_at: record.updated_at,
    completed_at: record.completed_at ?? null,
    expires_at: record.expires_at ?? null,
    url: download?.url ?? null,
    url_expires_at: download?.expires_at ?? null,
    error: record.error ?? null,
  };
};

/**
 * Starts an export of the points a storage query with these filters selects (spec/operations.md
 * §4): writes the export, running, and queues its first run. Nothing is written when the request
 * is refused; an export whose run cannot be queued is deleted again.
 * @throws NotFoundError when the workspace is not the caller's, or naming a fleet that is not in it.
 */
export const createExport = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  body: CreateExportBody,
  enqueue: EnqueueExport = enqueueExport,
  now = Date.now(),
): Promise<Export> => {
  await requireWorkspace(db, caller, workspaceId);
  if (body.fleet?.length) await requireFleets(db, workspaceId, body.fleet, 'body.fleet');
  const at = isoOf(now);
  const id = newId('exp', at);
  const { format, ...filters } = body;
  const record: ExportRecord = {
    workspace_id: workspaceId,
    id,
    account_id: caller.accountId,
    status: 'running',
    format,
    filters,
    key: `exports/${workspaceId}/${id}.${EXPORT_FILES[format].extension}`,
    rows: 0,
    bytes: 0,
    parts: 0,
    created_at: at,
    updated_at: at,
    stalled: 0,
    // DynamoDB deletes the item once the longest run and the lifetime after it have passed.
    ttl: Math.ceil(expiryOf(now + EXPORT_RUN_MAX_DAYS * DAY_MS) / 1000),
  };
  await putExport(db, record);
  try {
    await enqueue({ account_id: caller.accountId, workspace_id: workspaceId, export_id: id });
  } catch (error) {
    await deleteExport(db, workspaceId, id).catch(() => undefined);
    throw error;
  }
  return toExport(record, now);
};

/**
 * An export: its progress while running, a fresh download URL once ready, why it failed.
 * @throws NotFoundError when the workspace is not the caller's or has no such export (or it is gone).
 */
export const getExport = async (db: Db, caller: Caller, workspaceId: string, exportId: string, now = Date.now()): Promise<Export> => {
  await requireWorkspace(db, caller, workspaceId);
  const record = await readExport(db, workspaceId, exportId);
  const current = record && settled(record, now);
  if (!current) throw new NotFoundError(`Export ${exportId} not found.`);
  return toExport(current, now);
};

async function* shown(source: AsyncIterable<Keyed<ExportRecord>>, now: number): AsyncGenerator<Keyed<Export>> {
  for await (const { sk, value } of source) {
    const current = settled(value, now);
    if (current) yield { sk, value: await toExport(current, now) };
  }
}

/**
 * A workspace's exports, newest first, those gone left out; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's; ValidationError when the cursor is not one of this list.
 */
export const listExports = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}, now = Date.now()): Promise<StreamedList<Export>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `exports/${workspaceId}`;
  const after = startOf(list, page, collection.exportsOfWorkspace(workspaceId).prefix);
  return paginate(list, shown(readExportsOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), now), page);
};

/** What the export Lambda works with. */
export interface ExportDeps {
  db: Db;
  store: TimeseriesStore;
  objects: ExportObjects;
  enqueue: EnqueueExport;
  now?: () => number;
  /** The least size of each part (default partBytesOf; S3 takes no part but the last under 5 MiB). */
  partBytes?: (partNumber: number) => number;
}

/** A run that lost its hold on the export (it ran past its lease): what it did not write, the next run does. */
class LeaseLostError extends Error {
  constructor() {
    super('The run no longer holds the export.');
    this.name = 'LeaseLostError';
  }
}

/** An export that cannot go on, with what its error says. */
class ExportFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ExportFailure';
  }
}

/** The lines of a part being filled, as bytes in chunks; the text of the last few lines not yet. */
class PendingPart {
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  rows = 0;

  constructor(private text = '') {}

  add(line: string) {
    this.text += line;
    this.rows++;
    if (this.text.length >= CHUNK_CHARS) this.flush();
  }

  /** At least the bytes held (a character is at least one byte of UTF-8). */
  get size() {
    return this.chunkBytes + this.text.length;
  }

  /** The bytes and rows held, which it then forgets. */
  take() {
    this.flush();
    const part = { body: Buffer.concat(this.chunks, this.chunkBytes), rows: this.rows };
    this.chunks = [];
    this.chunkBytes = 0;
    this.rows = 0;
    return part;
  }

  private flush() {
    if (!this.text) return;
    const chunk = Buffer.from(this.text);
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
    this.text = '';
  }
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Whether a point, read again from the cursor's time on, is one the written parts already hold:
 * those before the cursor in the range's order, and the first `same` of the cursor's own time,
 * device and tag. Points come in order, so once one is not, none after it is.
 */
const writtenBefore = (cursor: ExportCursor) => {
  let same = cursor.same;
  return (p: RangePoint) => {
    const order = p.ms - cursor.ms || p.us - cursor.us || compareText(p.device_id, cursor.device_id) || compareText(p.tag, cursor.tag);
    if (order < 0) return true;
    if (order > 0 || same === 0) return false;
    same--;
    return true;
  };
};

/** A range read from the cursor's time on (that time included: the cursor says which of its points are written). */
const resumedAt = (range: TimeseriesRange, cursor: ExportCursor | undefined): TimeseriesRange => {
  if (!cursor) return range;
  const start = range.start === undefined ? undefined : parseTime(range.start);
  if (start && (start.ms > cursor.ms || (start.ms === cursor.ms && start.us >= cursor.us))) return range;
  return { ...range, start: formatTime(cursor) };
};

/**
 * One run of an export (a message of the export queue), on S3 and the store in `deps`, until
 * `deadline` (its Lambda's timeout, ms since the epoch).
 *
 * A run first takes the export: one run at a time holds it, until its deadline (and a little
 * more). A message for an export another run holds, or that has ended, does nothing: the holder's
 * own message is still in flight, and comes back if the holder dies. The run reads the range
 * (the store's range read, deduplicated, within the workspace's retention now) from where the
 * written parts end, and writes parts of at least PART_BYTES to a multipart upload, one in flight
 * while the next fills; after each part it records the part, the rows and bytes so far and where
 * the file ends (the export's progress). Past its time (`EXPORT_RUN_SECONDS`, or a minute before
 * the deadline) and once it has written a part, it stops, lets go of the export and queues it
 * again: the next run reads on from the last recorded part, so what was read after it is read
 * again, never written twice (a part sent again replaces itself). At the end of the range the
 * last part goes up and the upload is completed from the parts S3 lists (a file of one part is
 * one PutObject); the export is then ready. A run that fails lets go of the export and throws (the
 * message is retried); after EXPORT_MAX_FAILED_RUNS such runs in a row, or when S3 has aborted the
 * upload, the export is marked failed.
 * @returns what the run did, for the logs and the tests.
 */
export const runExport = async (deps: ExportDeps, job: ExportJob, deadline: number): Promise<'ready' | 'continued' | 'failed' | 'skipped'> => {
  const now = deps.now ?? Date.now;
  const started = now();
  const leaseId = randomUUID();
  const record = await claimExport(deps.db, job.workspace_id, job.export_id, leaseId, deadline + LEASE_SLACK_MS, started);
  if (!record) return 'skipped';
  const hold = async (change: ExportChange) => {
    if (!(await updateHeldExport(deps.db, record.workspace_id, record.id, leaseId, { ...change, set: { ...change.set, updated_at: isoOf(now()) } })))
      throw new LeaseLostError();
  };
  const fail = async (code: string, message: string) => {
    const at = now();
    await hold({
      set: { status: 'failed', error: { code, message }, completed_at: isoOf(at), expires_at: isoOf(expiryOf(at)), ttl: Math.ceil(expiryOf(at) / 1000) },
      remove: ['lease_id', 'lease_until', 'cursor', 'uploaded'],
    });
    // Its parts are freed now rather than when the bucket's lifecycle rule aborts the upload.
    if (record.upload_id) await deps.objects.abortUpload(fileOf(record), record.upload_id).catch(() => undefined);
    logger.warn('export failed', { workspace_id: record.workspace_id, export_id: record.id, code, message });
    return 'failed' as const;
  };
  if (record.stalled > EXPORT_MAX_FAILED_RUNS) {
    return fail(
      'export_failed',
      `The export stopped: ${record.stalled - 1} runs in a row failed (the last: ${record.last_error ?? 'stopped'}). Start a new export.`,
    );
  }
  const runSeconds = exportRunSeconds();
  const stopAt = Math.min(deadline - RUN_MARGIN_MS, runSeconds > 0 ? started + runSeconds * 1000 : Infinity);
  try {
    const outcome = await writeFile(deps, record, hold, stopAt, now);
    if (outcome === 'continued') await deps.enqueue(job);
    return outcome;
  } catch (error) {
    if (error instanceof ExportFailure) return fail(error.code, error.message);
    if (error instanceof NoSuchUploadError) {
      return fail(
        'upload_aborted',
        `S3 no longer has the export's upload (an export must finish within ${EXPORT_RUN_MAX_DAYS} days; a restart of the local runtime ends it too). Start a new export.`,
      );
    }
    if (!(error instanceof LeaseLostError)) {
      // Let go, so that the retry need not wait for the lease to run out.
      await hold({ set: { last_error: (error as Error).name ?? 'Error' }, remove: ['lease_id', 'lease_until'] }).catch(() => undefined);
    }
    throw error;
  }
};

/**
 * The body of a run (see runExport): reads and writes from where the export stands until the range
 * ends or the run's time is up.
 */
const writeFile = async (
  deps: ExportDeps,
  record: ExportRecord,
  hold: (change: ExportChange) => Promise<void>,
  stopAt: number,
  now: () => number,
): Promise<'ready' | 'continued'> => {
  const file = fileOf(record);
  const { contentType, extension } = EXPORT_FILES[record.format];
  const headers = { contentType, fileName: `${record.id}.${extension}` };
  const partBytes = deps.partBytes ?? partBytesOf;
  let { parts, rows, bytes, upload_id: uploadId } = record;

  const finish = async () => {
    const at = now();
    await hold({
      set: { status: 'ready', parts, rows, bytes, completed_at: isoOf(at), expires_at: isoOf(expiryOf(at)), ttl: Math.ceil(expiryOf(at) / 1000), stalled: 0 },
      remove: ['lease_id', 'lease_until', 'cursor', 'upload_id', 'uploaded', 'last_error'],
    });
    return 'ready' as const;
  };

  if (record.uploaded) {
    // Every part was written and the upload was being completed: a run that completed it and failed before recording so left the whole file.
    if ((await deps.objects.headObject(file))?.size !== bytes) await deps.objects.completeUpload(file, uploadId!, parts);
    return finish();
  }

  const workspace = await getWorkspaceOfAccount(deps.db, record.account_id, record.workspace_id);
  if (!workspace) throw new ExportFailure('workspace_gone', `Workspace ${record.workspace_id} no longer exists.`);
  const range = resumedAt(withinRetention(rangeOf(record), workspace.data_retention_days, now()), record.cursor);
  const lineOf = lineFormatter(record.format);
  const pending = new PendingPart(record.cursor ? '' : exportHeader(record.format));
  let skip = record.cursor ? writtenBefore(record.cursor) : undefined;
  const position: ExportCursor = record.cursor ? { ...record.cursor } : { ms: 0, us: 0, device_id: '', tag: '', same: 0 };
  let inFlight: Promise<void> | undefined;

  /** Sends the pending lines as the next part, once the part before it is written and recorded. */
  const cut = async () => {
    if (!uploadId) {
      uploadId = await deps.objects.startUpload(file, headers);
      await hold({ set: { upload_id: uploadId } });
    }
    if (inFlight) await inFlight;
    const part = pending.take();
    parts += 1;
    rows += part.rows;
    bytes += part.body.length;
    const written = { parts, rows, bytes, cursor: { ...position }, stalled: 0 };
    const upload = uploadId;
    inFlight = (async () => {
      await deps.objects.uploadPart(file, upload, written.parts, part.body);
      await hold({ set: written });
    })();
    // Its failure is seen when it is awaited, before the next part or at the end.
    inFlight.catch(() => undefined);
  };

  let stopped = false;
  const points = deps.store.readRange(range)[Symbol.asyncIterator]();
  try {
    reading: for (let run = await points.next(); !run.done; run = await points.next()) {
      for (const p of run.value) {
        if (skip) {
          if (skip(p)) continue;
          skip = undefined;
        }
        pending.add(lineOf(p));
        if (position.ms === p.ms && position.us === p.us && position.device_id === p.device_id && position.tag === p.tag) position.same++;
        else Object.assign(position, { ms: p.ms, us: p.us, device_id: p.device_id, tag: p.tag, same: 1 });
        if (pending.size < partBytes(parts + 1)) continue;
        await cut();
        if (now() >= stopAt) {
          stopped = true;
          break reading;
        }
      }
    }
  } finally {
    await points.return?.();
  }
  if (inFlight) await inFlight;
  if (stopped) {
    // The lines read past the last part are read again by the next run.
    await hold({ remove: ['lease_id', 'lease_until'] });
    return 'continued';
  }

  const last = pending.take();
  // Still the holder before the file is written whole (a run past its lease writes nothing more).
  await hold({});
  if (parts === 0) {
    // The whole file is one part: one PutObject (an upload begun by an earlier run is dropped).
    if (uploadId) await deps.objects.abortUpload(file, uploadId);
    await deps.objects.putObject(file, last.body, headers);
    rows += last.rows;
    bytes += last.body.length;
    return finish();
  }
  if (last.body.length) {
    parts += 1;
    await deps.objects.uploadPart(file, uploadId!, parts, last.body);
    rows += last.rows;
    bytes += last.body.length;
  }
  await hold({ set: { parts, rows, bytes, uploaded: true, stalled: 0 }, remove: ['cursor'] });
  await deps.objects.completeUpload(file, uploadId!, parts);
  return finish();
};
