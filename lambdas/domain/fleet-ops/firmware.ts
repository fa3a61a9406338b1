import type { Db } from '../../shared/clients';
import { firmwareBucket, firmwareUploadUrlTtlSeconds } from '../../shared/env';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import type { StreamedList } from '../../shared/json-stream';
import type { Firmware, RegisterFirmwareBody } from '../../schemas/firmware';
import type { PageQuery } from '../../schemas/list';
import {
  deleteFirmwareVersion,
  findUnendedFotaOf,
  getFirmwareVersion,
  markFirmwareReady,
  readFirmwaresOfWorkspace,
  createFirmwareVersion,
  registerFirmwareVersionAgain,
  type FirmwareRecord,
} from '../../stores/firmware-store';
import type { Keyed } from '../../stores/items';
import { collection, firmwareRefOf } from '../../stores/keys';
import { deleteObject, headObject, presignDownload, presignUpload, type ObjectRef, type StoredObject } from '../../stores/object-store';
import { quota, release } from '../limits/limits';
import { pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';

/** How long the download URL a device gets in `@fota` args works: an hour (operations.md §3: at least one). */
export const DOWNLOAD_URL_TTL_SECONDS = 3600;

/** A firmware version by its names, as FOTA values and paths give it. */
export interface FirmwareName {
  firmware_id: string;
  firmware_version: string;
}

/**
 * Where a registration's image is in S3: `<workspace>/<firmware>/<version>/<registration>` (DESIGN
 * §11). A version deleted and registered again is another registration, whose image has another
 * key: an upload URL of the earlier one, still valid, writes an object that nothing reads. A version
 * registered before registrations had IDs keeps its image at `<workspace>/<firmware>/<version>`
 * (no path token holds a `/`, so the two kinds of keys never meet).
 */
export const imageOf = ({
  workspace_id,
  firmware_id,
  version,
  registration_id,
}: Pick<FirmwareRecord, 'workspace_id' | 'firmware_id' | 'version' | 'registration_id'>): ObjectRef => ({
  bucket: firmwareBucket(),
  key: `${workspace_id}/${firmware_id}/${version}${registration_id ? `/${registration_id}` : ''}`,
});

/** Whether what S3 holds is exactly the registered image: its size, and the SHA-256 S3 checked when it was stored. */
const holdsRegistered = (firmware: FirmwareRecord, stored: StoredObject | undefined) => stored?.size === firmware.size && stored.sha256 === firmware.sha256;

/** A stored version as the API shows it. */
const toFirmware = ({ workspace_id, firmware_id, version, size, sha256, description, status, created_at, updated_at }: FirmwareRecord): Firmware => ({
  workspace_id,
  firmware_id,
  version,
  size,
  sha256,
  description,
  status,
  created_at,
  updated_at,
});

/**
 * A version as it is now: one that awaits its upload is checked against S3 (HeadObject in
 * checksum mode) and becomes ready once the object there has exactly the registered size and
 * SHA-256. An object of other bytes (written some other way than the presigned PUT, which S3
 * checks itself) leaves it awaiting its upload; a PUT of the right bytes mends it.
 */
const settle = async (db: Db, firmware: FirmwareRecord): Promise<FirmwareRecord> => {
  if (firmware.status !== 'awaiting_upload') return firmware;
  if (!holdsRegistered(firmware, await headObject(imageOf(firmware)))) return firmware;
  return (
    (await markFirmwareReady(db, firmware, nowIso())) ??
    (await getFirmwareVersion(db, firmware.workspace_id, firmware.firmware_id, firmware.version)) ??
    firmware
  );
};

const requireVersion = async (db: Db, workspaceId: string, firmwareId: string, version: string) => {
  const firmware = await getFirmwareVersion(db, workspaceId, firmwareId, version);
  if (!firmware) throw new NotFoundError(`Firmware ${firmwareId} version ${version} not found.`);
  return firmware;
};

/**
 * Registers a firmware version by the size and SHA-256 of its image, and answers a presigned S3
 * PUT that accepts exactly those bytes, at the key of this registration (see `imageOf`).
 * Registering a version again while it awaits its upload, with the same size and SHA-256, answers
 * a new URL for the same key (the description is the new request's, empty when it gives none).
 * @throws NotFoundError when the workspace is not the caller's; ConflictError when the version is
 * ready (a ready version never changes) or is registered with another size or SHA-256; QuotaExceededError
 * when a new version would take the workspace past `firmware_versions`. Nothing is written then.
 */
export const registerFirmware = async (db: Db, caller: Caller, workspaceId: string, firmwareId: string, version: string, body: RegisterFirmwareBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const refused = (ready: boolean) =>
    new ConflictError(
      ready
        ? `Firmware ${firmwareId} version ${version} is ready: a ready version never changes; delete it to register other bytes.`
        : `Firmware ${firmwareId} version ${version} is registered with another size or SHA-256; delete it to register other bytes.`,
    );
  const known = await getFirmwareVersion(db, workspaceId, firmwareId, version);
  if (known) {
    const now = await settle(db, known);
    if (now.status === 'ready') throw refused(true);
    if (now.size !== body.size || now.sha256 !== body.sha256) throw refused(false);
  }
  const at = nowIso();
  const record: FirmwareRecord = {
    workspace_id: workspaceId,
    firmware_id: firmwareId,
    version,
    ...body,
    status: 'awaiting_upload',
    created_at: at,
    updated_at: at,
    // Kept when the version already awaits its upload (registering it again keeps the stored one).
    registration_id: newId('fwr', at),
  };
  // A new version takes a place in the quota; registering an awaiting one again (or one that another registration just made) does not.
  const stored =
    (known ? undefined : await createFirmwareVersion(db, record, quota(db, workspace, 'firmware_versions'))) ??
    (await registerFirmwareVersionAgain(db, record));
  // Another registration or an upload check won the race since the read.
  if (!stored) throw refused((await getFirmwareVersion(db, workspaceId, firmwareId, version))?.status === 'ready');
  return { ...toFirmware(stored), upload: await presignUpload(imageOf(stored), stored.sha256, firmwareUploadUrlTtlSeconds()) };
};

/**
 * A firmware version, checked against S3 while it awaits its upload (see `settle`).
 * @throws NotFoundError when the workspace is not the caller's or has no such version.
 */
export const getFirmware = async (db: Db, caller: Caller, workspaceId: string, firmwareId: string, version: string) => {
  await requireWorkspace(db, caller, workspaceId);
  return toFirmware(await settle(db, await requireVersion(db, workspaceId, firmwareId, version)));
};

async function* settled(db: Db, source: AsyncIterable<Keyed<FirmwareRecord>>): AsyncGenerator<Keyed<Firmware>> {
  for await (const { sk, value } of source) yield { sk, value: toFirmware(await settle(db, value)) };
}

/**
 * A workspace's firmware versions by firmware ID, then version (as text), each checked as `getFirmware` checks it; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listFirmwares = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<Firmware>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `firmwares/${workspaceId}`;
  const after = startOf(list, page, collection.firmwaresOfWorkspace(workspaceId).prefix);
  return paginate(list, settled(db, readFirmwaresOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) })), page);
};

/**
 * Deletes a firmware version and its image, unless a FOTA that has not ended (queued, pending, in
 * progress) uses it. The image goes first: a delete that fails between the two leaves the version
 * listed, and deleting it again finishes. The check reads the firmware-use index, which follows
 * writes within a second: a FOTA scheduled in the same instant as the delete may not be seen
 * (its device then gets no download URL).
 * @throws NotFoundError when the workspace is not the caller's or has no such version;
 * ConflictError when a FOTA that has not ended uses it.
 */
export const deleteFirmware = async (db: Db, caller: Caller, workspaceId: string, firmwareId: string, version: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const firmware = await requireVersion(db, workspaceId, firmwareId, version);
  const device = await findUnendedFotaOf(db, firmwareRefOf(workspaceId, firmwareId, version));
  if (device)
    throw new ConflictError(
      `Firmware ${firmwareId} version ${version} is in use by the FOTA of device ${device}, which has not ended: cancel it, or wait for it to end.`,
    );
  await deleteObject(imageOf(firmware));
  // Its place in the workspace's quota of firmware versions is free in the same transaction.
  if (!(await deleteFirmwareVersion(db, firmware, release(db, workspace, 'firmware_versions'))))
    throw new NotFoundError(`Firmware ${firmwareId} version ${version} not found.`);
  return toFirmware(firmware);
};

/**
 * The check a FOTA scheduling makes before it writes anything: a version that was never
 * registered is scheduled as in v3, without an artifact; a registered one only once it is ready.
 * @returns what the scheduled FOTA items carry: the version's `firmware_ref` when it is registered
 * (the firmware-use index then finds them), nothing otherwise.
 * @throws ConflictError when the version is registered and not ready.
 */
export const requireReadyFirmware = async (
  db: Db,
  workspaceId: string,
  { firmware_id, firmware_version }: FirmwareName,
): Promise<{ firmware_ref?: string }> => {
  const known = await getFirmwareVersion(db, workspaceId, firmware_id, firmware_version);
  if (!known) return {};
  if ((await settle(db, known)).status !== 'ready') {
    throw new ConflictError(
      `Firmware ${firmware_id} version ${firmware_version} is registered but not ready: upload its image first (GET the version to see its status).`,
    );
  }
  return { firmware_ref: firmwareRefOf(workspaceId, firmware_id, firmware_version) };
};

/** What a device gets to download a FOTA's image, besides the firmware's names. */
export interface FirmwareDownload {
  /** A presigned S3 GET, minted now, valid for DOWNLOAD_URL_TTL_SECONDS. */
  url: string;
  sha256: string;
  size: number;
  expires_at: string;
}

/**
 * A ready version whose object in S3 is not the registered image (another size or SHA-256, or no
 * object): no download URL is minted for it, and the FOTA is not delivered (domain/doors).
 */
export class FirmwareImageMismatchError extends Error {
  constructor(
    readonly firmware: FirmwareRecord,
    readonly stored: StoredObject | undefined,
  ) {
    super(`Firmware ${firmware.firmware_id} version ${firmware.version}: S3 does not hold the registered image; no download is minted.`);
    this.name = 'FirmwareImageMismatchError';
  }
}

/**
 * The download of a FOTA's firmware, for its delivery to a device: a fresh presigned GET of the
 * image with its SHA-256 and size, when the version is registered and ready; undefined for a
 * version never registered (a v3 FOTA, without an artifact). The object is checked first
 * (HeadObject in checksum mode, one request): a URL is minted only when S3 holds exactly the size
 * and SHA-256 the version records, the SHA-256 being the one S3 checked the upload against.
 * @throws FirmwareImageMismatchError when it does not (logged as a warning with what S3 holds).
 */
export const firmwareDownloadOf = async (
  db: Db,
  workspaceId: string,
  { firmware_id, firmware_version }: FirmwareName,
): Promise<FirmwareDownload | undefined> => {
  const firmware = await getFirmwareVersion(db, workspaceId, firmware_id, firmware_version);
  if (firmware?.status !== 'ready') return undefined;
  const image = imageOf(firmware);
  // The doors may read the objects but not list the bucket: S3 answers them a missing object 403.
  const stored = await headObject(image, { forbiddenIsMissing: true });
  if (!holdsRegistered(firmware, stored)) {
    logger.warn('firmware image does not match its version: no download minted', {
      workspace_id: workspaceId,
      key: image.key,
      registered: { size: firmware.size, sha256: firmware.sha256 },
      stored,
    });
    throw new FirmwareImageMismatchError(firmware, stored);
  }
  const { url, expires_at } = await presignDownload(image, DOWNLOAD_URL_TTL_SECONDS);
  return { url, sha256: firmware.sha256, size: firmware.size, expires_at };
};

/**
 * `firmwareDownloadOf` for one delivery of many FOTA (a fleet-wide scheduling's batch): each
 * version is read and its URL minted once, and shared by the devices of the batch.
 */
export const firmwareDownloads = (db: Db) => {
  const known = new Map<string, Promise<FirmwareDownload | undefined>>();
  return (workspaceId: string, firmware: FirmwareName) => {
    const ref = firmwareRefOf(workspaceId, firmware.firmware_id, firmware.firmware_version);
    if (!known.has(ref)) known.set(ref, firmwareDownloadOf(db, workspaceId, firmware));
    return known.get(ref)!;
  };
};

/**
 * A FOTA's value as the device gets it (`@fota` args, `fota.value` of the device API's status):
 * the scheduled firmware with the `fw_version` device agents read, and its download when there is
 * one. Without a download it is exactly the v3 value.
 */
export const deliveredFotaValue = (value: FirmwareName, download: FirmwareDownload | undefined) =>
  download ? { ...value, fw_version: value.firmware_version, ...download } : value;
