import { EXPORT_RUN_MAX_DAYS } from '../../buckets';
import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import type { CreateExportBody, Export } from '../../schemas/export';
import type { PageQuery } from '../../schemas/list';
import { deleteExport, getExport as readExport, putExport, readExportsOfWorkspace, type ExportRecord } from '../../stores/export-store';
import type { Keyed } from '../../stores/items';
import { collection } from '../../stores/keys';
import { presignDownload } from '../../stores/object-store';
import { DAY_MS, expiryOf, fileOf, isoOf } from './export-file';
import { EXPORT_FILES } from './export-format';
import { enqueueExport, type EnqueueExport } from './export-queue';
import { quota } from '../limits/limits';
import { requireFleets } from '../registry/fleets';
import { pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';

/** How long a download URL works: an hour, or until the export expires if that is sooner. */
export const EXPORT_URL_TTL_SECONDS = 3600;

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
    ...(record.names ? { names: true as const } : {}),
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
 * is refused; an export whose run cannot be queued is deleted again. Each export counts in the
 * workspace's `exports_per_day` (the UTC day of its creation), whatever becomes of it.
 * @throws NotFoundError when the workspace is not the caller's, or naming a fleet that is not in it.
 * @throws QuotaExceededError when the workspace has started its limit of exports today (Retry-After: until midnight UTC).
 */
export const createExport = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  body: CreateExportBody,
  enqueue: EnqueueExport = enqueueExport,
  now = Date.now(),
): Promise<Export> => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  if (body.fleet?.length) await requireFleets(db, workspaceId, body.fleet, 'body.fleet');
  const at = isoOf(now);
  const id = newId('exp', at);
  const { format, names, ...filters } = body;
  const record: ExportRecord = {
    workspace_id: workspaceId,
    id,
    account_id: caller.accountId,
    status: 'running',
    format,
    filters,
    ...(names ? { names: true as const } : {}),
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
  await putExport(
    db,
    record,
    quota(db, workspace, 'exports_per_day', () => now),
  );
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
