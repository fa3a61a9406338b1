import { randomUUID } from 'node:crypto';
import { EXPORT_RUN_MAX_DAYS } from '../../buckets';
import type { Db } from '../../shared/clients';
import { exportRunSeconds } from '../../shared/env';
import { logger } from '../../shared/logger';
import { formatTime, parseTime } from '../../shared/timestamps';
import type { ExportJob } from '../../schemas/export';
import { claimExport, updateHeldExport, type ExportChange, type ExportCursor, type ExportRecord } from '../../stores/export-store';
import { abortUpload, completeUpload, headObject, NoSuchUploadError, putObject, startUpload, uploadPart } from '../../stores/object-store';
import type { RangePoint, TimeseriesRange, TimeseriesStore } from '../../stores/timeseries';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import { expiryOf, fileOf, isoOf } from './export-file';
import { EXPORT_FILES, exportHeader, lineFormatter } from './export-format';
import { exportNames } from './export-names';
import { partBytesOf, PendingPart } from './export-parts';
import type { EnqueueExport } from './export-queue';
import { withinRetention } from '../data/retention';
import { awaitWithin, exportUpdateOf, type ConsoleLive, type ExportUpdate } from '../console-live/live';

/** Runs in a row that may fail before the export is marked failed (the queue's redrive comes later). */
export const EXPORT_MAX_FAILED_RUNS = 4;

/**
 * Time a run keeps, before its Lambda's timeout, for the part in flight, the last part and the
 * completion of the upload, and the message that goes on with the export.
 */
const RUN_MARGIN_MS = 60_000;

/** A run holds its export this long past its Lambda's timeout, for clocks that differ a little. */
const LEASE_SLACK_MS = 30_000;

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

/** The selection of an export's filters: which points its file holds. */
const rangeOf = (record: ExportRecord): TimeseriesRange => ({
  workspaceId: record.workspace_id,
  start: record.filters.start,
  end: record.filters.end,
  devices: record.filters.device,
  tags: record.filters.tag,
  fleets: record.filters.fleet,
});

/** What the export Lambda works with. */
export interface ExportDeps {
  db: Db;
  store: TimeseriesStore;
  objects: ExportObjects;
  enqueue: EnqueueExport;
  now?: () => number;
  /** The least size of each part (default partBytesOf; S3 takes no part but the last under 5 MiB). */
  partBytes?: (partNumber: number) => number;
  /** The consoles' live channel: an `export` message per progress write and at the end (none without it). */
  live?: ConsoleLive;
}

/** How long a run waits, at its end, for its `export` messages to go out (never failing or holding up the export more). */
const LIVE_WAIT_MS = 1_000;

/** Tells the open consoles of an export's progress or end (fire-and-forget). */
type TellExport = (status: ExportUpdate['status'], pointsWritten: number) => void;

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
 * upload, the export is marked failed. Each part recorded, and the export's end (ready or failed),
 * is one `export` message to the open consoles (`deps.live`), started as it is written and awaited
 * at most LIVE_WAIT_MS when the run ends: a publish never fails or holds up the export.
 * @returns what the run did, for the logs and the tests.
 */
export const runExport = async (deps: ExportDeps, job: ExportJob, deadline: number): Promise<'ready' | 'continued' | 'failed' | 'skipped'> => {
  const now = deps.now ?? Date.now;
  // Each progress write and the end is one message, started as it is written, awaited (briefly) last.
  const telling: Array<Promise<void>> = [];
  const tell: TellExport = (status, pointsWritten) => {
    if (deps.live) telling.push(deps.live([exportUpdateOf(job, status, pointsWritten, isoOf(now()))]));
  };
  try {
    return await runHeld(deps, job, deadline, tell);
  } finally {
    await awaitWithin(telling.length ? Promise.all(telling).then(() => undefined) : undefined, LIVE_WAIT_MS);
  }
};

/** runExport's run, once it is told how to tell the consoles. */
const runHeld = async (deps: ExportDeps, job: ExportJob, deadline: number, tell: TellExport): Promise<'ready' | 'continued' | 'failed' | 'skipped'> => {
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
    tell('failed', record.rows);
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
    const outcome = await writeFile(deps, record, { hold, tell }, stopAt, now);
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
  { hold, tell }: { hold: (change: ExportChange) => Promise<void>; tell: TellExport },
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
    tell('ready', rows);
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
  const names = record.names ? exportNames(deps.db, record.workspace_id) : undefined;
  const lineOf = lineFormatter(record.format, names?.of);
  const pending = new PendingPart(record.cursor ? '' : exportHeader(record.format, record.names));
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
      tell('running', written.rows);
    })();
    // Its failure is seen when it is awaited, before the next part or at the end.
    inFlight.catch(() => undefined);
  };

  let stopped = false;
  const points = deps.store.readRange(range)[Symbol.asyncIterator]();
  try {
    reading: for (let run = await points.next(); !run.done; run = await points.next()) {
      // the names of this run's devices and fleets, read in batches (cached across runs)
      if (names) await names.prepare(run.value);
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
