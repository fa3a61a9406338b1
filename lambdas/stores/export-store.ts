import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { ExportFilters, ExportFormat, ExportStatus } from '../schemas/export';
import { isConditionFailed } from './errors';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { collection, exportKey } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

/**
 * Where an export's file ends so far: after the last point of its written parts, in the order of
 * the range read (time, device, tag). `same` counts the points of exactly that time, device and
 * tag already written (two cloud-stamped points of one device may share a stamp).
 */
export interface ExportCursor {
  ms: number;
  us: number;
  device_id: string;
  tag: string;
  same: number;
}

/** An export as the registry keeps it: what the API shows, and where its runs stand. */
export interface ExportRecord {
  workspace_id: string;
  id: string;
  account_id: string;
  status: ExportStatus;
  format: ExportFormat;
  filters: ExportFilters;
  /** Asked with `names`: the file carries device and fleet names (absent otherwise, so the record is as before). */
  names?: true;
  /** The file's S3 key in the exports bucket. */
  key: string;
  /** Points and bytes of the parts written (the whole file once ready). */
  rows: number;
  bytes: number;
  /** Parts written to the multipart upload, 1 to `parts`. */
  parts: number;
  created_at: string;
  updated_at: string;
  completed_at?: string;
  expires_at?: string;
  error?: { code: string; message: string };
  /** The multipart upload, once the file is larger than one part. */
  upload_id?: string;
  /** Every part is in S3: what is left is to complete the upload. */
  uploaded?: boolean;
  cursor?: ExportCursor;
  /** The run that holds the export, and until when (ms since the epoch). */
  lease_id?: string;
  lease_until?: number;
  /** Runs that took the export since it last made progress. */
  stalled: number;
  /** Why the last run failed, for the message of a failed export. */
  last_error?: string;
  /** When DynamoDB may delete the item (TTL, seconds since the epoch). */
  ttl: number;
}

/** A change to an export: attributes to set, and attributes to remove. */
export interface ExportChange {
  set?: Partial<ExportRecord>;
  remove?: ReadonlyArray<keyof ExportRecord>;
}

/** Writes a new export, counted in the workspace's exports of the day, all or nothing. @throws QuotaExceededError from the quota. */
export const putExport = async (db: Db, record: ExportRecord, quota: QuotaCheck) => {
  if (await transactWithQuota(db, [putNew(db, exportKey(record.workspace_id, record.id), record)], quota)) {
    throw new Error(`Export ${record.id} exists already.`);
  }
};

/** Deletes an export's item (an export whose run could not be queued). */
export const deleteExport = async (db: Db, workspaceId: string, exportId: string) => {
  await db.doc.send(new DeleteCommand({ TableName: db.table, Key: exportKey(workspaceId, exportId) }));
};

export const getExport = async (db: Db, workspaceId: string, exportId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: exportKey(workspaceId, exportId), ConsistentRead: true }));
  return Item ? strip<ExportRecord>(Item) : undefined;
};

/** A workspace's exports one by one, newest first (IDs sort as they were made). */
export const readExportsOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.exportsOfWorkspace(workspaceId);
  return keyedItems(db, { pk, prefix, ...read, extra: { ScanIndexForward: false } }, strip<ExportRecord>);
};

const updateOf = ({ set = {}, remove = [] }: ExportChange) => {
  const entries = Object.entries(set).filter(([, value]) => value !== undefined);
  const names = Object.fromEntries([...entries.map(([name]) => name), ...remove].map((name) => [`#${name}`, name]));
  const values = Object.fromEntries(entries.map(([name, value]) => [`:${name}`, value]));
  const expression = [
    entries.length ? `SET ${entries.map(([name]) => `#${name} = :${name}`).join(', ')}` : '',
    remove.length ? `REMOVE ${remove.map((name) => `#${name}`).join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { names, values, expression };
};

/**
 * Takes a running export for one run until `until` (ms since the epoch), if no other run holds it
 * (a lease past its time is free: its run has ended, one way or another), and counts the run.
 * @returns the export as taken, or undefined when it is not running or another run holds it.
 */
export const claimExport = async (db: Db, workspaceId: string, exportId: string, leaseId: string, until: number, now: number) => {
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: exportKey(workspaceId, exportId),
        UpdateExpression: 'SET #lease_id = :lease, #lease_until = :until ADD #stalled :one',
        ConditionExpression: '#status = :running AND (attribute_not_exists(#lease_until) OR #lease_until < :now)',
        ExpressionAttributeNames: { '#lease_id': 'lease_id', '#lease_until': 'lease_until', '#stalled': 'stalled', '#status': 'status' },
        ExpressionAttributeValues: { ':lease': leaseId, ':until': until, ':one': 1, ':running': 'running', ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<ExportRecord>(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

/**
 * Changes an export as the run that holds it.
 * @returns false when the run no longer holds it (nothing is changed then).
 */
export const updateHeldExport = async (db: Db, workspaceId: string, exportId: string, leaseId: string, change: ExportChange): Promise<boolean> => {
  const { names, values, expression } = updateOf(change);
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: exportKey(workspaceId, exportId),
        UpdateExpression: expression,
        ConditionExpression: '#lease_id = :held',
        ExpressionAttributeNames: { ...names, '#lease_id': 'lease_id' },
        ExpressionAttributeValues: { ...values, ':held': leaseId },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};
