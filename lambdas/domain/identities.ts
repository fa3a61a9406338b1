import { randomBytes } from 'node:crypto';
import type { Db } from '../shared/clients';
import { DEVICE_ENDPOINT_URL } from '../shared/env';
import { AppError, NotFoundError } from '../shared/errors';
import type { Caller } from '../shared/http';
import { newId, nowIso } from '../shared/ids';
import type { Device } from '../schemas/device';
import type { CreateIdentityBody, DeviceCredentials, Identity } from '../schemas/identity';
import { getDeviceOfWorkspace } from '../stores/device-store';
import {
  createIdentity as storeIdentity,
  listIdentitiesOfDevice,
  revokeIdentity as storeRevocation,
  type IdentityRecord,
} from '../stores/identity-store';
import { requireWorkspace } from './workspaces';

/** Bytes of a device's HS256 key: as long as the hash, as RFC 7518 §3.2 asks. */
const DEVICE_KEY_BYTES = 32;

const toIdentity = ({ id, type, device_id, created_at, revoked_at }: IdentityRecord): Identity => ({
  id,
  type,
  device_id,
  created_at,
  revoked_at: revoked_at ?? null,
});

const oldestFirst = (a: IdentityRecord, b: IdentityRecord) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id);

/** The `identities` field of a device: its unrevoked identities, or null when it has none (the interface's rule). */
export const identitiesField = (identities: IdentityRecord[]): Device['identities'] => {
  const active = identities.filter((i) => !i.revoked_at).sort(oldestFirst);
  return active.length ? active.map(({ id, type, created_at }) => ({ id, type, created_at })) : null;
};

/** Where devices reach the device API, as zdevice.json's `endpoint` says it. */
export const deviceEndpoint = (url: string): DeviceCredentials['endpoint'] => {
  if (!URL.canParse(url)) throw new AppError(500, 'internal_error', `DEVICE_ENDPOINT_URL is not a URL: "${url}".`);
  const parsed = new URL(url);
  const secure = parsed.protocol === 'https:';
  return {
    host: parsed.hostname,
    port: Number(parsed.port) || (secure ? 443 : 80),
    mode: secure ? 'secure' : 'insecure',
    url: parsed.href.replace(/\/$/, ''),
  };
};

const requireDeviceOfWorkspace = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return device;
};

/**
 * Creates a symmetric key for a device. The answer holds, this once, the device's credentials
 * document (zdevice.json); afterwards the key is only ever read by the device authorizer.
 * @throws NotFoundError when the workspace or device is not the caller's.
 */
export const createIdentity = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  deviceId: string,
  input: CreateIdentityBody,
  endpointUrl = DEVICE_ENDPOINT_URL,
) => {
  // Checked first: a key whose credentials cannot be handed out must not be stored.
  const endpoint = deviceEndpoint(endpointUrl);
  const device = await requireDeviceOfWorkspace(db, caller, workspaceId, deviceId);
  const secret = randomBytes(DEVICE_KEY_BYTES).toString('base64');
  const record: IdentityRecord = {
    id: newId('idn'),
    type: input.type,
    device_id: device.id,
    workspace_id: workspaceId,
    account_id: caller.accountId,
    created_at: nowIso(),
    revoked_at: null,
  };
  await storeIdentity(db, { ...record, secret });
  const credentials: DeviceCredentials = {
    devinfo: { device_id: device.id, mode: 'device_token', key_id: record.id, key_type: record.type },
    prvkey: secret,
    endpoint,
  };
  return { identity: toIdentity(record), credentials };
};

/**
 * Every identity of a device, revoked ones included, oldest first; never their secrets.
 * @throws NotFoundError when the workspace or device is not the caller's.
 */
export const listIdentities = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  await requireDeviceOfWorkspace(db, caller, workspaceId, deviceId);
  const identities = await listIdentitiesOfDevice(db, workspaceId, deviceId);
  return identities.sort(oldestFirst).map(toIdentity);
};

/**
 * Revokes an identity and deletes its key: tokens it signed stop working once the device
 * authorizer's cache lets go of them. Revoking twice keeps the first revocation time.
 * @throws NotFoundError when the workspace, device or identity is not the caller's.
 */
export const revokeIdentity = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, identityId: string) => {
  await requireDeviceOfWorkspace(db, caller, workspaceId, deviceId);
  return toIdentity(await storeRevocation(db, workspaceId, deviceId, identityId, nowIso()));
};
