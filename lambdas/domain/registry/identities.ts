import { compactVerify, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { randomBytes } from 'node:crypto';
import { DEVICE_TOKEN_FIELD } from '../../routes';
import type { Db } from '../../shared/clients';
import { DEVICE_ENDPOINT_URL, DEVICE_MQTT_CACERT, DEVICE_MQTT_URL, DEVICE_TOKEN_MAX_TTL_SECONDS } from '../../shared/env';
import { AppError, NotFoundError, UnauthorizedError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { countMetric } from '../../shared/metrics';
import { DeviceIdSchema } from '../../schemas/common';
import type { Device } from '../../schemas/device';
import type { EventMessage } from '../../schemas/forward';
import { IdentityIdSchema, type CreateIdentityBody, type DeviceCredentials, type Identity } from '../../schemas/identity';
import { findDeviceLocator, getDeviceOfWorkspace, type DeviceRecord } from '../../stores/device-store';
import {
  createIdentity as storeIdentity,
  findIdentityKey,
  getIdentityOfDevice,
  readIdentitiesOfDevice,
  revokeIdentity as storeRevocation,
  type IdentityRecord,
} from '../../stores/identity-store';
import { quota, release } from '../limits/limits';
import { eventMessage } from '../webhooks/events';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import { mapKeyed, pageSizeOf, paginate, startOf } from './lists';
import { requireUsableKey } from '../tenancy/api-keys';
import { requireWorkspace } from '../tenancy/workspaces';
import type { WorkspaceRecord } from '../../stores/workspace-store';
import { takeAuthenticationSample } from './authentication-samples';
import { closeDeviceSession, type SessionCloser } from '../doors/mqtt-sessions';

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

/**
 * The credentials' `endpoint` (and `cacert`): the MQTT broker when one is configured
 * (`mqtts://host:port` → `mode: secure` with the broker's CA; `mqtt://` → `insecure`), the HTTPS
 * device API otherwise; `url` is always the HTTPS device API, which MQTT clients ignore.
 */
export const credentialsEndpoint = (httpsUrl: string, mqttUrl: string, cacert: string): Pick<DeviceCredentials, 'endpoint' | 'cacert'> => {
  const https = deviceEndpoint(httpsUrl);
  if (!mqttUrl) return { endpoint: https };
  if (!URL.canParse(mqttUrl)) throw new AppError(500, 'internal_error', `DEVICE_MQTT_URL is not a URL: "${mqttUrl}".`);
  const broker = new URL(mqttUrl);
  const secure = broker.protocol === 'mqtts:';
  if (secure && !cacert) throw new AppError(500, 'internal_error', 'DEVICE_MQTT_CACERT is required for an mqtts:// broker.');
  return {
    endpoint: { host: broker.hostname, port: Number(broker.port) || (secure ? 8883 : 1883), mode: secure ? 'secure' : 'insecure', url: https.url },
    ...(secure ? { cacert } : {}),
  };
};

const requireDeviceOfWorkspace = async (db: Db, caller: Caller, workspaceId: string, deviceId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
  if (!device) throw new NotFoundError(`Device ${deviceId} not found.`);
  return { workspace, device };
};

/**
 * Creates a symmetric key for a device. The answer holds, this once, the device's credentials
 * document (zdevice.json); afterwards the key is only ever read by the device authorizer. The
 * calling API key is read again first (`requireUsableKey`). Counted in the workspace's
 * `identities` (not revoked) in the transaction that stores it.
 * @throws NotFoundError when the workspace or device is not the caller's.
 * @throws UnauthorizedError when the calling key was revoked or expired since the authorizer cached it.
 * @throws QuotaExceededError when the workspace holds its limit of identities that are not revoked.
 */
export const createIdentity = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  deviceId: string,
  input: CreateIdentityBody,
  endpointUrl = DEVICE_ENDPOINT_URL,
  broker = { url: DEVICE_MQTT_URL, cacert: DEVICE_MQTT_CACERT },
) => {
  // Checked first: a key whose credentials cannot be handed out must not be stored.
  const endpoint = credentialsEndpoint(endpointUrl, broker.url, broker.cacert);
  const [{ workspace, device }] = await Promise.all([requireDeviceOfWorkspace(db, caller, workspaceId, deviceId), requireUsableKey(db, caller)]);
  const secret = randomBytes(DEVICE_KEY_BYTES).toString('base64');
  const created_at = nowIso();
  const record: IdentityRecord = {
    id: newId('idn', created_at),
    type: input.type,
    device_id: device.id,
    workspace_id: workspaceId,
    account_id: caller.accountId,
    created_at,
    revoked_at: null,
  };
  await storeIdentity(db, { ...record, secret }, quota(db, workspace, 'identities'));
  const credentials: DeviceCredentials = {
    devinfo: { device_id: device.id, mode: 'device_token', key_id: record.id, key_type: record.type },
    prvkey: secret,
    ...endpoint,
  };
  return { identity: toIdentity(record), credentials };
};

/**
 * Every identity of a device, revoked ones included, oldest first (ID order), streamed, never
 * their secrets; a page of them when `page` asks.
 * @throws NotFoundError when the workspace or device is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listIdentities = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, page: PageQuery = {}): Promise<StreamedList<Identity>> => {
  await requireDeviceOfWorkspace(db, caller, workspaceId, deviceId);
  const list = `identities/${workspaceId}/${deviceId}`;
  const after = startOf(list, page, collection.identitiesOfDevice(workspaceId, deviceId).prefix);
  return paginate(list, mapKeyed(readIdentitiesOfDevice(db, workspaceId, deviceId, { after, pageSize: pageSizeOf(page) }), toIdentity), page);
};

/**
 * Revokes an identity: tokens it signed are refused at once by the MQTT authorizer, and by the
 * HTTPS device authorizer once its cache lets go of them; the device's open MQTT session is closed
 * before the answer (`closeDeviceSession`), and what it sent after the revocation is dropped. Its
 * place in the workspace's quota of identities is free at once. Revoking twice keeps the first
 * revocation time, frees no second place, and closes the session again (a close that failed is
 * retried by revoking again).
 * @throws NotFoundError when the workspace, device or identity is not the caller's.
 */
export const revokeIdentity = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, identityId: string, sessions: SessionCloser = {}) => {
  const { workspace } = await requireDeviceOfWorkspace(db, caller, workspaceId, deviceId);
  const at = new Date();
  const revoked = await revokeOnce(db, workspace, workspaceId, deviceId, identityId, at.toISOString());
  await closeDeviceSession(db, deviceId, at, sessions);
  return toIdentity(revoked);
};

/** Stores the revocation once (with its quota release), or reads the one stored before. */
const revokeOnce = async (db: Db, workspace: WorkspaceRecord, workspaceId: string, deviceId: string, identityId: string, at: string) => {
  const identity = await getIdentityOfDevice(db, workspaceId, deviceId, identityId);
  if (!identity) throw new NotFoundError(`Identity ${identityId} not found.`);
  if (identity.revoked_at) return identity;
  if (await storeRevocation(db, identity, at, release(db, workspace, 'identities'))) return { ...identity, revoked_at: at };
  // Revoked meanwhile by another request (its time is the one kept), or gone.
  const now = await getIdentityOfDevice(db, workspaceId, deviceId, identityId);
  if (!now) throw new NotFoundError(`Identity ${identityId} not found.`);
  return now;
};

/** A device as the device authorizer established it from its token; handed to the device API. */
export interface DeviceCaller {
  accountId: string;
  workspaceId: string;
  deviceId: string;
  identityId: string;
}

/** Sends events to the forward queue (domain/events.ts publishForward in the Lambdas). */
export type Forward = (messages: EventMessage[]) => Promise<void>;

/**
 * Forwards events that record what the service saw (a token checked, a status asked for): losing
 * one to a failing queue is logged and does not fail the device's request.
 */
export const observe = (forward: Forward, events: EventMessage[]) =>
  forward(events).catch((error: unknown) => logger.warn('event not forwarded', { error: error as Error, events: events.map((e) => e.type) }));

// Device clocks drift: a token is accepted this long after its exp, and its lifetime may exceed
// the limit by as much (a device whose clock runs ahead signs exp = its now + 1 h). Both doors
// take the same tokens: an expired one is refused past this, over HTTPS and over MQTT alike.
const CLOCK_TOLERANCE_SECONDS = 60;

interface TokenCheck {
  /** The device the token names, when it exists: its check is reported as an event. */
  device?: DeviceRecord;
  caller?: DeviceCaller;
  /** Why the token is refused (the event's `error`). */
  error?: string;
  /**
   * The token is signed with the device's key yet refused (expired, too long-lived, a revoked
   * identity): the device may be told why. Anything else gets one answer, so that a forger learns
   * nothing about devices, identities or keys.
   */
  signed?: boolean;
}

const JOSE_REFUSALS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'token expired',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'bad signature',
  ERR_JOSE_ALG_NOT_ALLOWED: 'algorithm not allowed (HS256 only)',
};

// jose checks claims only once the signature verifies: these refusals are of signed tokens.
const SIGNED_REFUSALS = new Set(['ERR_JWT_EXPIRED', 'ERR_JWT_CLAIM_VALIDATION_FAILED']);

const refusalOf = (error: unknown): Pick<TokenCheck, 'error' | 'signed'> => {
  const { code, claim } = error as { code?: string; claim?: string };
  const signed = SIGNED_REFUSALS.has(code ?? '');
  if (code && JOSE_REFUSALS[code]) return { error: JOSE_REFUSALS[code], signed };
  if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED') return { error: `claim ${claim} invalid`, signed };
  return { error: 'malformed token' };
};

/** Whether the token's HS256 signature verifies with the key, whatever its claims say. */
const signedWith = async (token: string, secret: string) =>
  compactVerify(token, Buffer.from(secret, 'base64'), { algorithms: ['HS256'] }).then(
    () => true,
    () => false,
  );

/** The device an ID names, when it exists. */
const findDevice = async (db: Db, deviceId: string) => {
  if (!DeviceIdSchema.safeParse(deviceId).success) return undefined;
  const locator = await findDeviceLocator(db, deviceId);
  return locator && getDeviceOfWorkspace(db, locator.workspace_id, deviceId);
};

const checkToken = async (db: Db, token: string, now: Date, maxTtlSeconds: number, subject?: string): Promise<TokenCheck> => {
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return { device: subject ? await findDevice(db, subject) : undefined, error: 'malformed token' };
  }
  const { sub, key } = claims;
  // A token of device A presented as device B (MQTT username) is recorded on B: someone tried to be B.
  if (subject !== undefined && sub !== subject) return { device: await findDevice(db, subject), error: 'token of another device' };
  if (!DeviceIdSchema.safeParse(sub).success) return { error: 'malformed token' };
  const locator = await findDeviceLocator(db, sub!);
  if (!locator) return { error: 'unknown device' };
  const [device, identity] = await Promise.all([
    getDeviceOfWorkspace(db, locator.workspace_id, sub!),
    IdentityIdSchema.safeParse(key).success ? findIdentityKey(db, locator.workspace_id, sub!, key as string) : undefined,
  ]);
  if (!device) return { error: 'unknown device' };
  if (!identity) return { device, error: 'unknown identity' };
  // Identities revoked before keys were kept on revocation have none: such tokens cannot be verified.
  if (!identity.secret) return { device, error: 'identity revoked' };
  if (identity.revoked_at) return { device, error: 'identity revoked', signed: await signedWith(token, identity.secret) };
  try {
    const { payload } = await jwtVerify(token, Buffer.from(identity.secret, 'base64'), {
      algorithms: ['HS256'],
      requiredClaims: ['exp'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: now,
    });
    if (payload.exp! > now.getTime() / 1000 + maxTtlSeconds + CLOCK_TOLERANCE_SECONDS) {
      return { device, error: `token lifetime exceeds ${maxTtlSeconds} s`, signed: true };
    }
  } catch (error) {
    return { device, ...refusalOf(error) };
  }
  return {
    device,
    caller: { accountId: locator.account_id, workspaceId: locator.workspace_id, deviceId: device.id, identityId: identity.id },
  };
};

/** The door a token came through: the `proto` of its `authentication` event. */
export type DeviceDoor = 'https' | 'mqtt';

/** The `authentication` event of a checked token, with the interface's payload fields (all strings). */
const authenticationEvent = (device: DeviceRecord, proto: DeviceDoor, { error }: TokenCheck) =>
  eventMessage({ workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id }, 'authentication', 'd2c', {
    clientid: device.id,
    proto,
    error: error ?? '',
    verified: String(!error),
    result: error ? 'denied' : 'granted',
  });

export interface TokenRules {
  now?: Date;
  /** Longest accepted lifetime (exp − now), in seconds. */
  maxTtlSeconds?: number;
  /** The device the token must name (the MQTT client ID and username); a token of another device is refused. */
  subject?: string;
}

/**
 * Records a token's check: a refusal is counted (the `DeviceAuthenticationFailures` metric, every
 * attempt); the `authentication` event of a token that names an existing device is forwarded when
 * the token is the device's own (signed with its identity's key: accepted, or refused as expired,
 * too long-lived or of a revoked identity), and for any other token (forged, unsigned, of another
 * device or identity) only as a sample, the first of its device's minute: anyone may name a device,
 * and its owner's webhooks must not take one POST per attempt.
 */
const recordCheck = async (db: Db, forward: Forward, proto: DeviceDoor, check: TokenCheck, now: Date) => {
  if (!check.caller) countMetric('DeviceAuthenticationFailures');
  if (!check.device) return;
  const verified = check.caller !== undefined || check.signed === true;
  if (!verified && !(await takeAuthenticationSample(db, check.device.id, now))) return;
  await observe(forward, [authenticationEvent(check.device, proto, check)]);
};

/**
 * Checks a device JWT for either door (the HTTPS device authorizer, the MQTT custom authorizer):
 * an HS256 JWT whose `sub` is the device ID and `key` one of its unrevoked identities, signed with
 * that identity's key, unexpired (within the clock tolerance, {@link CLOCK_TOLERANCE_SECONDS}), and
 * with `exp` at most `maxTtlSeconds` ahead. A check of a token that names an existing device is reported as an
 * `authentication` event with the door as `proto`: every check of a token signed with the device's
 * key, at most one a minute per device of the others (`recordCheck`); losing one to a failing queue
 * does not change the answer (the event is an observation, the answer is the authorization).
 */
export const checkDeviceToken = async (
  db: Db,
  forward: Forward,
  token: string,
  proto: DeviceDoor,
  { now = new Date(), maxTtlSeconds = DEVICE_TOKEN_MAX_TTL_SECONDS, subject }: TokenRules = {},
): Promise<TokenCheck> => {
  const check = await checkToken(db, token, now, maxTtlSeconds, subject);
  await recordCheck(db, forward, proto, check, now);
  return check;
};

/**
 * The device a device JWT stands for, by `checkDeviceToken`'s rules.
 * @throws UnauthorizedError saying why the token is refused.
 */
export const verifyDeviceToken = async (db: Db, forward: Forward, token: string, proto: DeviceDoor, rules: TokenRules = {}): Promise<DeviceCaller> => {
  const { caller, error } = await checkDeviceToken(db, forward, token, proto, rules);
  if (!caller) throw new UnauthorizedError(`The device token is refused: ${error}.`);
  return caller;
};

/**
 * The device a bearer token (`Authorization: Bearer <jwt>`) stands for, by `checkDeviceToken`'s
 * rules.
 * @throws UnauthorizedError saying why the token is refused; with `details` naming the reason only
 * when the token is signed with the device's key (expired, too long-lived, revoked identity).
 */
export const authenticateDevice = async (
  db: Db,
  forward: Forward,
  authorization: string | undefined,
  rules: Omit<TokenRules, 'subject'> = {},
): Promise<DeviceCaller> => {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (!token) {
    countMetric('DeviceAuthenticationFailures');
    throw new UnauthorizedError('An Authorization: Bearer <device token> header is required.');
  }
  const { caller, error, signed } = await checkDeviceToken(db, forward, token, 'https', rules);
  if (caller) return caller;
  if (signed) {
    throw new UnauthorizedError('The device token is refused.', {
      details: [{ field: DEVICE_TOKEN_FIELD, message: `The token is signed by the device's key but refused: ${error}.` }],
    });
  }
  // The reason stays in the event and the log; the answer is the same for every other refusal.
  throw new UnauthorizedError(`The device token is refused: ${error}.`);
};
