import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Firmware } from '../schemas/firmware';
import { isConditionFailed } from './errors';
import { keyedItems, putNew, strip, type ListRead } from './items';
import { collection, firmwareKey, firmwareUseRefs, REGISTRY_FIRMWARE_USE_INDEX } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

/**
 * A registered firmware version as stored (its upload URL is never stored), with the registration
 * its image belongs to: each registration of a version (a first one, or one after a delete) gets
 * its own `registration_id`, and its image its own S3 key (domain/fleet-ops/firmware.ts), so that
 * an upload URL of an earlier registration writes where nothing reads. Versions registered before
 * registrations had IDs have none (their image is at the version's own key).
 */
export type FirmwareRecord = Omit<Firmware, 'upload'> & { registration_id?: string };

/**
 * A FOTA that has not ended (schemas/job.ts OPEN_STATUSES) uses the version it names. In text order
 * those states are exactly the ones from `in_progress` to `queued` (`pending` between them;
 * `canceled`, `done` and `failed` sort before, `timed_out` after), so one key range of the index
 * finds them.
 */
export const UNENDED_FOTA_RANGE = { from: 'in_progress', to: 'queued' } as const;

// What a registration writes (status and created_at apart).
const FIELDS = ['workspace_id', 'firmware_id', 'version', 'size', 'sha256', 'description', 'updated_at'] as const;

const keyOf = ({ workspace_id, firmware_id, version }: Pick<FirmwareRecord, 'workspace_id' | 'firmware_id' | 'version'>) =>
  firmwareKey(workspace_id, firmware_id, version);

/**
 * Registers a new version awaiting its upload, provided the workspace's quota of firmware versions
 * takes it, all or nothing.
 * @returns the stored version, or undefined when the version exists (nothing is written then).
 * @throws QuotaExceededError from the quota.
 */
export const createFirmwareVersion = async (db: Db, record: FirmwareRecord, quota: QuotaCheck): Promise<FirmwareRecord | undefined> => {
  const failed = await transactWithQuota(db, [putNew(db, keyOf(record), record)], quota);
  return failed ? undefined : record;
};

/**
 * Registers a version again while it still awaits its upload with the same size and SHA-256 (its
 * description and `updated_at` are then the new ones; `created_at` and `registration_id` stay: the
 * new URL writes the same object). One conditional write:
 * two registrations at once cannot both win with different bytes.
 * @returns the stored version, or undefined when the version is gone, is ready, or awaits another
 * size or SHA-256 (nothing is written then).
 */
export const registerFirmwareVersionAgain = async (db: Db, record: FirmwareRecord): Promise<FirmwareRecord | undefined> => {
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: keyOf(record),
        // Every name aliased: `size` and others are reserved words of DynamoDB's expressions.
        UpdateExpression: `SET ${FIELDS.map((f) => `#${f} = :${f}`).join(', ')}, #status = :awaiting, #created_at = if_not_exists(#created_at, :updated_at), #registration_id = if_not_exists(#registration_id, :registration_id)`,
        ConditionExpression: '#status = :awaiting AND #size = :size AND #sha256 = :sha256',
        ExpressionAttributeNames: Object.fromEntries(['status', 'created_at', 'registration_id', ...FIELDS].map((f) => [`#${f}`, f])),
        ExpressionAttributeValues: {
          ...Object.fromEntries(FIELDS.map((f) => [`:${f}`, record[f]])),
          ':awaiting': 'awaiting_upload',
          ':registration_id': record.registration_id,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<FirmwareRecord>(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

export const getFirmwareVersion = async (db: Db, workspaceId: string, firmwareId: string, version: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: firmwareKey(workspaceId, firmwareId, version), ConsistentRead: true }));
  return Item ? strip<FirmwareRecord>(Item) : undefined;
};

/** A workspace's firmware versions one by one, by firmware ID and then version (as text). */
export const readFirmwaresOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.firmwaresOfWorkspace(workspaceId);
  return keyedItems(db, { pk, prefix, ...read }, strip<FirmwareRecord>);
};

/**
 * Marks a version ready, if it still awaits its upload in the same registration.
 * @returns the ready version, or undefined when it is gone, was not awaiting its upload, or was
 * deleted and registered again since it was read.
 */
export const markFirmwareReady = async (db: Db, firmware: FirmwareRecord, at: string): Promise<FirmwareRecord | undefined> => {
  const { registration_id } = firmware;
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: keyOf(firmware),
        UpdateExpression: 'SET #status = :ready, #updated_at = :at',
        // The registration and bytes that were checked: a version deleted and registered again meanwhile is left alone.
        ConditionExpression: `#status = :awaiting AND #size = :size AND #sha256 = :sha256 AND ${registration_id ? '#registration_id = :registration_id' : 'attribute_not_exists(#registration_id)'}`,
        ExpressionAttributeNames: {
          '#status': 'status',
          '#updated_at': 'updated_at',
          '#size': 'size',
          '#sha256': 'sha256',
          '#registration_id': 'registration_id',
        },
        ExpressionAttributeValues: {
          ':ready': 'ready',
          ':awaiting': 'awaiting_upload',
          ':at': at,
          ':size': firmware.size,
          ':sha256': firmware.sha256,
          ...(registration_id ? { ':registration_id': registration_id } : {}),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<FirmwareRecord>(Attributes ?? {});
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

/**
 * Deletes a version's item and gives its place in the workspace's quota of firmware versions back,
 * all or nothing. @returns false when there was no such version (nothing written).
 */
export const deleteFirmwareVersion = async (db: Db, firmware: FirmwareRecord, quota: QuotaCheck) => {
  const remove = { Delete: { TableName: db.table, Key: keyOf(firmware), ConditionExpression: 'attribute_exists(pk)' } };
  return !(await transactWithQuota(db, [remove], quota));
};

/**
 * A device whose FOTA uses the version and has not ended, or undefined when none does: one
 * keys-only query of the firmware-use index per shard of the version's `firmware_ref`, for the
 * key range of the unended states, one key each. The index is eventually consistent: a FOTA
 * written in the last instant may not be seen yet.
 */
export const findUnendedFotaOf = async (db: Db, firmwareRef: string): Promise<string | undefined> => {
  const index = REGISTRY_FIRMWARE_USE_INDEX;
  const found = await Promise.all(
    firmwareUseRefs(firmwareRef).map(async (ref) => {
      const { Items } = await db.doc.send(
        new QueryCommand({
          TableName: db.table,
          IndexName: index.name,
          KeyConditionExpression: '#ref = :ref AND #status BETWEEN :from AND :to',
          ExpressionAttributeNames: { '#ref': index.partitionKey, '#status': index.sortKey },
          ExpressionAttributeValues: { ':ref': ref, ':from': UNENDED_FOTA_RANGE.from, ':to': UNENDED_FOTA_RANGE.to },
          Limit: 1,
        }),
      );
      return Items?.[0]?.pk as string | undefined;
    }),
  );
  const pk = found.find((key) => key !== undefined);
  return pk?.slice('DEV#'.length);
};
