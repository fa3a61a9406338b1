/**
 * Firmware artifacts on the real engines: the registry on DynamoDB Local (with the firmware-use
 * index) and images in the local S3 (fauxqs behind local/s3-engine.ts). The domain is loaded once
 * the variables it reads are set (lambdas/shared/env.ts reads them when it loads).
 */
import { createHash, randomBytes } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { firmwareKey, firmwareUseRef, INDEX_SHARDS, REGISTRY_FIRMWARE_USE_INDEX, shardOfDevice } from '../../../lambdas/stores/keys';
import { JOB_STATUSES, OPEN_STATUSES } from '../../../lambdas/schemas/job';
import type { Db } from '../../../lambdas/shared/clients';
import { startLocalS3, type LocalS3 } from '../../../local/s3-engine';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

const BUCKET = 'contract-firmware-domain';

let s3: LocalS3;
let db: Db;
let firmware: typeof import('../../../lambdas/domain/fleet-ops/firmware');
let fota: typeof import('../../../lambdas/domain/fleet-ops/fota');
let devices: typeof import('../../../lambdas/domain/registry/devices');
let liveDelivery: typeof import('../../../lambdas/domain/doors/live-delivery');
let events: typeof import('../../../lambdas/domain/webhooks/events');
let jobStore: typeof import('../../../lambdas/stores/job-store');
let objects: typeof import('../../../lambdas/stores/object-store');
let firmwareStore: typeof import('../../../lambdas/stores/firmware-store');

beforeAll(async () => {
  s3 = await startLocalS3({ engine: process.env.AWS_ENDPOINT_URL_SQS!, credentials: { local: 'local' } });
  await s3.createBucket(BUCKET);
  Object.assign(process.env, { AWS_ENDPOINT_URL_S3: s3.endpoint, FIRMWARE_BUCKET: BUCKET, FIRMWARE_UPLOAD_URL_TTL_SECONDS: '600' });
  // One at a time: jest's ESM loader links modules imported at once in a race.
  firmware = await import('../../../lambdas/domain/fleet-ops/firmware');
  fota = await import('../../../lambdas/domain/fleet-ops/fota');
  devices = await import('../../../lambdas/domain/registry/devices');
  liveDelivery = await import('../../../lambdas/domain/doors/live-delivery');
  events = await import('../../../lambdas/domain/webhooks/events');
  jobStore = await import('../../../lambdas/stores/job-store');
  objects = await import('../../../lambdas/stores/object-store');
  firmwareStore = await import('../../../lambdas/stores/firmware-store');
  db = await freshTable(undefined, { indexes: [REGISTRY_FIRMWARE_USE_INDEX] });
});
afterAll(async () => {
  await s3?.stop();
});

const imageOf = (size: number) => {
  const bytes = randomBytes(size);
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
};

const put = async (upload: { url: string; headers: Record<string, string> }, bytes: Buffer) =>
  (await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes })).status;

/** Where the version's current registration keeps its image. */
const imageRefOf = async (workspaceId: string, version: string) => firmware.imageOf((await firmwareStore.getFirmwareVersion(db, workspaceId, 'app', version))!);

/** An account with a device, and a version of `app` registered (and uploaded when `ready`). */
const world = async (version: string, ready: boolean) => {
  const account = await newAccount(db);
  const device = await devices.createDevice(db, account.caller, account.workspace_id, { name: 'd', fleet_id: account.default_fleet_id, phys_id: '' });
  const image = imageOf(1000);
  const registered = await firmware.registerFirmware(db, account.caller, account.workspace_id, 'app', version, {
    size: 1000,
    sha256: image.sha256,
    description: '',
  });
  if (ready) {
    expect(await put(registered.upload, image.bytes)).toBe(200);
    // Read as a client (or a FOTA scheduling) reads it, which checks the upload: ready from then on.
    expect((await firmware.getFirmware(db, account.caller, account.workspace_id, 'app', version)).status).toBe('ready');
  }
  return { ...account, deviceId: device.id, image, registered };
};

describe('the firmware artifact store', () => {
  it('keeps a version awaiting its upload until S3 holds exactly its bytes, then ready', async () => {
    const { caller, workspace_id, image, registered } = await world('1.0', false);

    const before = await firmware.getFirmware(db, caller, workspace_id, 'app', '1.0');
    await put(registered.upload, image.bytes);
    const after = await firmware.getFirmware(db, caller, workspace_id, 'app', '1.0');

    expect(before.status).toBe('awaiting_upload');
    expect(after.status).toBe('ready');
    expect(await objects.headObject(await imageRefOf(workspace_id, '1.0'))).toEqual({ size: 1000, sha256: image.sha256 });
  });

  it('keys each registration’s image apart: <workspace>/<firmware>/<version>/<registration>, kept by a registration again while awaiting, new after a delete', async () => {
    const { caller, workspace_id, image, registered } = await world('1.5', false);
    const keyOf = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').slice(2).join('/'));
    const body = { size: 1000, sha256: image.sha256, description: '' };

    const first = await imageRefOf(workspace_id, '1.5');
    const again = await firmware.registerFirmware(db, caller, workspace_id, 'app', '1.5', body);
    await firmware.deleteFirmware(db, caller, workspace_id, 'app', '1.5');
    const afterDelete = await firmware.registerFirmware(db, caller, workspace_id, 'app', '1.5', body);

    expect(first.key).toMatch(new RegExp(`^${workspace_id}/app/1\\.5/fwr-[0-9a-z]{20}$`));
    expect([keyOf(registered.upload.url), keyOf(again.upload.url)]).toEqual([first.key, first.key]);
    expect(keyOf(afterDelete.upload.url)).toMatch(/\/fwr-[0-9a-z]{20}$/);
    expect(keyOf(afterDelete.upload.url)).not.toBe(first.key);
    expect(again).not.toHaveProperty('registration_id');
  });

  it('marks a version ready only in the registration that was checked: one deleted and registered again with the same bytes meanwhile stays awaiting', async () => {
    const { caller, workspace_id, image } = await world('1.6', false);
    const checked = (await firmwareStore.getFirmwareVersion(db, workspace_id, 'app', '1.6'))!;

    await firmware.deleteFirmware(db, caller, workspace_id, 'app', '1.6');
    await firmware.registerFirmware(db, caller, workspace_id, 'app', '1.6', { size: 1000, sha256: image.sha256, description: '' });
    const marked = await firmwareStore.markFirmwareReady(db, checked, new Date().toISOString());

    expect(marked).toBeUndefined();
    expect((await firmwareStore.getFirmwareVersion(db, workspace_id, 'app', '1.6'))?.status).toBe('awaiting_upload');
  });

  it('serves a version registered before registrations had IDs from its own key, and gives it a registration when it is registered again', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const image = imageOf(700);
    const at = new Date().toISOString();
    const legacy = { workspace_id, firmware_id: 'app', version: 'old', size: 700, sha256: image.sha256, description: '', created_at: at, updated_at: at };
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...firmwareKey(workspace_id, 'app', 'old'), ...legacy, status: 'awaiting_upload' } }));
    const upload = await objects.presignUpload({ bucket: BUCKET, key: `${workspace_id}/app/old` }, image.sha256, 60);

    expect(await put(upload, image.bytes)).toBe(200);
    expect((await firmware.getFirmware(db, caller, workspace_id, 'app', 'old')).status).toBe('ready');
    const download = await firmware.firmwareDownloadOf(db, workspace_id, { firmware_id: 'app', firmware_version: 'old' });
    expect(Buffer.from(await (await fetch(download!.url)).arrayBuffer()).equals(image.bytes)).toBe(true);
    await firmware.deleteFirmware(db, caller, workspace_id, 'app', 'old');
    expect(await objects.headObject({ bucket: BUCKET, key: `${workspace_id}/app/old` })).toBeUndefined();
    await firmware.registerFirmware(db, caller, workspace_id, 'app', 'old', { size: 700, sha256: image.sha256, description: '' });
    expect((await imageRefOf(workspace_id, 'old')).key).toMatch(/^.+\/app\/old\/fwr-[0-9a-z]{20}$/);
  });

  it('mints no download of a ready version whose object is gone or other bytes (FirmwareImageMismatchError)', async () => {
    const { workspace_id } = await world('1.7', true);
    const name = { firmware_id: 'app', firmware_version: '1.7' };
    const ref = await imageRefOf(workspace_id, '1.7');

    await objects.putObject(ref, Buffer.alloc(1000), { contentType: 'application/octet-stream', fileName: 'x' });
    const otherBytes = await firmware.firmwareDownloadOf(db, workspace_id, name).catch((error: Error) => error);
    await objects.deleteObject(ref);
    const gone = await firmware.firmwareDownloadOf(db, workspace_id, name).catch((error: Error) => error);

    expect(otherBytes).toBeInstanceOf(firmware.FirmwareImageMismatchError);
    expect((otherBytes as InstanceType<typeof firmware.FirmwareImageMismatchError>).stored).toEqual({ size: 1000 });
    expect(gone).toBeInstanceOf(firmware.FirmwareImageMismatchError);
    expect((gone as InstanceType<typeof firmware.FirmwareImageMismatchError>).stored).toBeUndefined();
  });

  it('lets one of two registrations of the same version with other bytes win, and refuses the other (409)', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const [a, b] = [imageOf(10), imageOf(10)];

    const outcomes = await Promise.allSettled(
      [a, b].map((image) => firmware.registerFirmware(db, caller, workspace_id, 'race', '1', { size: 10, sha256: image.sha256, description: '' })),
    );

    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({ status: 409 });
  });

  it('tells a FOTA scheduling what it may schedule: a version never registered as in v3, a ready one with its firmware_ref, not one awaiting its upload', async () => {
    const awaiting = await world('2.0', false);
    const ready = await world('2.1', true);

    await expect(firmware.requireReadyFirmware(db, awaiting.workspace_id, { firmware_id: 'app', firmware_version: 'never' })).resolves.toEqual({});
    await expect(firmware.requireReadyFirmware(db, awaiting.workspace_id, { firmware_id: 'app', firmware_version: '2.0' })).rejects.toMatchObject({
      status: 409,
    });
    await expect(firmware.requireReadyFirmware(db, ready.workspace_id, { firmware_id: 'app', firmware_version: '2.1' })).resolves.toEqual({
      firmware_ref: `${ready.workspace_id}#app#2.1`,
    });
  });

  it('finds the FOTA that use a version while they have not ended (queued, pending, in progress), and no ended one', async () => {
    const { deviceId, workspace_id } = await world('3.0', true);
    const ref = firmwareUseRef(`${workspace_id}#app#3.0`, deviceId);
    const found: Array<[string, string | undefined]> = [];

    for (const status of ['queued', 'pending', 'in_progress', 'done', 'failed', 'timed_out', 'canceled'] as const) {
      await jobStore.putFota(db, {
        device_id: deviceId,
        scheduled_at: new Date().toISOString(),
        status,
        value: { firmware_id: 'app', firmware_version: '3.0' },
        firmware_ref: ref,
      });
      found.push([status, await firmwareStore.findUnendedFotaOf(db, `${workspace_id}#app#3.0`)]);
    }

    expect(found).toEqual([
      ['queued', deviceId],
      ['pending', deviceId],
      ['in_progress', deviceId],
      ['done', undefined],
      ['failed', undefined],
      ['timed_out', undefined],
      ['canceled', undefined],
    ]);
  });

  it('keeps the unended states one key range of the index: every state sorts inside it exactly when it has not ended', () => {
    const inRange = JOB_STATUSES.filter((s) => s >= firmwareStore.UNENDED_FOTA_RANGE.from && s <= firmwareStore.UNENDED_FOTA_RANGE.to);
    expect(inRange.sort()).toEqual([...OPEN_STATUSES].sort());
  });

  it('spreads a version’s FOTA over the index’s shards by device, and finds an unended one in any shard or under the reference alone (FOTA written before shards)', async () => {
    const { workspace_id } = await world('3.2', true);
    const ref = `${workspace_id}#app#3.2`;
    const deviceIds = Array.from({ length: 200 }, (_, n) => `dev-shard${String(n).padStart(15, '0')}`);
    const shards = new Set(deviceIds.map((id) => firmwareUseRef(ref, id)));
    const at = new Date().toISOString();
    const fotaOf = (device_id: string, status: (typeof JOB_STATUSES)[number], firmware_ref: string) =>
      jobStore.putFota(db, { device_id, scheduled_at: at, status, value: { firmware_id: 'app', firmware_version: '3.2' }, firmware_ref });

    // Every device's FOTA ended but one's, in its own shard; then that one ends too, and an old unsharded one is pending.
    const last = deviceIds.find((id) => shardOfDevice(id) === INDEX_SHARDS - 1)!;
    await Promise.all(deviceIds.map((id) => fotaOf(id, id === last ? 'in_progress' : 'done', firmwareUseRef(ref, id))));
    const inLastShard = await firmwareStore.findUnendedFotaOf(db, ref);
    await fotaOf(last, 'failed', firmwareUseRef(ref, last));
    const noneUnended = await firmwareStore.findUnendedFotaOf(db, ref);
    await fotaOf('dev-legacy0000000000000', 'pending', ref);
    const legacy = await firmwareStore.findUnendedFotaOf(db, ref);

    expect(shards.size).toBe(INDEX_SHARDS);
    expect([inLastShard, noneUnended, legacy]).toEqual([last, undefined, 'dev-legacy0000000000000']);
  });

  it('refuses to delete a version a scheduled FOTA uses (409), and deletes it and its image once the FOTA ended', async () => {
    const { caller, workspace_id, deviceId } = await world('3.1', true);
    const image = await imageRefOf(workspace_id, '3.1');

    await fota.scheduleFota(db, caller, deviceId, { firmwareId: 'app', firmwareVersion: '3.1' });
    const refused = await firmware.deleteFirmware(db, caller, workspace_id, 'app', '3.1').catch((error: { status: number }) => error.status);
    const kept = await objects.headObject(image);
    await fota.finishFota(db, deviceId, { status: 'done' });
    const deleted = await firmware.deleteFirmware(db, caller, workspace_id, 'app', '3.1');

    expect((await jobStore.getFotaOfDevice(db, deviceId))?.firmware_ref).toBe(firmwareUseRef(`${workspace_id}#app#3.1`, deviceId));
    expect([refused, kept?.size]).toEqual([409, 1000]);
    expect(deleted).toMatchObject({ firmware_id: 'app', version: '3.1', status: 'ready' });
    expect(await objects.headObject(image)).toBeUndefined();
    await expect(firmware.getFirmware(db, caller, workspace_id, 'app', '3.1')).rejects.toMatchObject({ status: 404 });
  });

  it('mints one download per version for a batch of deliveries, and none for a version never registered', async () => {
    const { workspace_id, image } = await world('4.0', true);
    const downloads = firmware.firmwareDownloads(db);

    const [a, b] = await Promise.all([
      downloads(workspace_id, { firmware_id: 'app', firmware_version: '4.0' }),
      downloads(workspace_id, { firmware_id: 'app', firmware_version: '4.0' }),
    ]);
    const none = await downloads(workspace_id, { firmware_id: 'app', firmware_version: 'never' });
    const fetched = Buffer.from(await (await fetch(a!.url)).arrayBuffer());

    expect(a).toBe(b);
    expect(a).toMatchObject({ sha256: image.sha256, size: 1000 });
    expect(fetched.equals(image.bytes)).toBe(true);
    expect(none).toBeUndefined();
  });

  it('delivers a FOTA live with its download, and skips (for #status) a device whose download cannot be looked up', async () => {
    const { workspace_id, image } = await world('5.0', true);
    const place = (device_id: string) => ({ workspace_id, fleet_id: 'flt-1', device_id });
    const scheduled = { scheduled_at: '2026-11-22T11:00:00.000Z', status: 'pending', value: { firmware_id: 'app', firmware_version: '5.0' } };
    const published: Array<{ deviceId: string; args: Record<string, unknown> }> = [];
    const downloads = firmware.firmwareDownloads(db);

    await liveDelivery.deliverScheduled(
      async (deviceId, message) => void published.push({ deviceId, args: (message.value as { args: Record<string, unknown> }).args }),
      [
        { event: events.eventMessage(place('dev-a'), 'fota', 'c2d', scheduled), live: true },
        { event: events.eventMessage({ ...place('dev-b'), workspace_id: 'wks-broken' }, 'fota', 'c2d', scheduled), live: true },
      ],
      true,
      (ws, name) => (ws === 'wks-broken' ? Promise.reject(new Error('throttled')) : downloads(ws, name)),
    );

    expect(published).toEqual([
      {
        deviceId: 'dev-a',
        args: {
          firmware_id: 'app',
          firmware_version: '5.0',
          fw_version: '5.0',
          url: expect.any(String),
          sha256: image.sha256,
          size: 1000,
          expires_at: expect.any(String),
        },
      },
    ]);
  });
});
