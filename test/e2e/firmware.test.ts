/**
 * Firmware artifacts end to end (operations.md §3), on one runtime: register a version, upload its
 * image with the presigned PUT as a client does (S3 checks the bytes against the registered
 * SHA-256), see it ready, schedule it as a FOTA, and follow the download URL a device gets live on
 * `j/dn`, in its `#status` answer and from GET /device/status; the device simulator downloads and
 * checks it. Upload URLs live 60 s here (FIRMWARE_UPLOAD_URL_TTL_SECONDS): long enough for a test
 * to use one a few requests after it was minted on a loaded machine, short enough that the one
 * registered at the file's start has expired by its last test (which waits for it otherwise).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { fleetstreamArgs } from '../helpers/cli';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';
import { itOnTheSources, startRuntime } from '../helpers/runtime';

const UPLOAD_TTL_SECONDS = 60;

let runtime: LocalRuntime;
let api: ApiClient;
let ws: string;
let other: ApiClient;
/** A version registered at the file's start, whose upload URL the last test finds expired. */
let late: { image: Image; upload: { method: string; url: string; headers: Record<string, string>; expires_at: string } };
const devices: MqttDevice[] = [];

beforeAll(async () => {
  runtime = await startRuntime({ firmwareUploadUrlTtlSeconds: UPLOAD_TTL_SECONDS });
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
  // Loaded once the runtime has set the variables the handlers read when they load (lambdas/shared/env.ts).
  const { createAccount } = await import('../../lambdas/domain/tenancy/accounts');
  const { documentClient } = await import('../../lambdas/shared/clients');
  const account = await createAccount({ doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! }, { name: 'other' });
  other = apiClient(runtime.base_url, account.api_key);
  const image = imageOf(1024);
  late = { image, upload: (await register('app', 'late', image)).body.firmware.upload };
}, 120_000);
afterAll(async () => {
  for (const d of devices) d.client.end(true);
  await runtime?.stop();
});

/** A firmware image of `size` random bytes, with its SHA-256 as the API takes it (hex) and as S3's header carries it (base64). */
const imageOf = (size: number) => {
  const bytes = randomBytes(size);
  const digest = createHash('sha256').update(bytes).digest();
  return { bytes, sha256: digest.toString('hex'), base64: digest.toString('base64') };
};
type Image = ReturnType<typeof imageOf>;

const versionPath = (firmware: string, version: string) => `/workspaces/${ws}/firmwares/${firmware}/versions/${version}`;
const register = (firmware: string, version: string, image: Image, description?: string) =>
  api.post(versionPath(firmware, version), { size: image.bytes.length, sha256: image.sha256, ...(description ? { description } : {}) });
const statusOf = async (firmware: string, version: string) => (await api.get(versionPath(firmware, version))).body.firmware?.status;

/** Sends the presigned request as curl or a browser would: its URL, its headers, the bytes. */
const upload = async (upload: { method: string; url: string; headers: Record<string, string> }, bytes: Buffer) => {
  const answer = await fetch(upload.url, { method: upload.method, headers: upload.headers, body: bytes });
  return { status: answer.status, text: await answer.text() };
};
const s3Code = (xml: string) => /<Code>([^<]+)<\/Code>/.exec(xml)?.[1];
/** The object key a presigned URL names (path-style: `/<bucket>/<key>`). */
const keyOf = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').slice(2).join('/'));
/** Writes an object straight into the firmware bucket, as an operator with S3 access (or a bug) could; with the SHA-256 S3 keeps when `checksum`. */
const writeObject = async (key: string, bytes: Buffer, checksum?: string) => {
  const s3 = new S3Client({ endpoint: runtime.s3_endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await s3.send(new PutObjectCommand({ Bucket: runtime.buckets.firmware, Key: key, Body: bytes, ...(checksum ? { ChecksumSHA256: checksum } : {}) }));
  s3.destroy();
};

/** A version registered and uploaded: ready. */
const readyVersion = async (firmware: string, version: string, image: Image) => {
  const { body } = await register(firmware, version, image);
  expect((await upload(body.firmware.upload, image.bytes)).status).toBe(200);
  expect(await statusOf(firmware, version)).toBe('ready');
};

const newDevice = async (name: string): Promise<{ id: string; credentials: Credentials }> => {
  const device = (await api.post(`/workspaces/${ws}/devices`, { name })).body.device;
  const { credentials } = (await api.post(`/workspaces/${ws}/devices/${device.id}/identities`)).body;
  return { id: device.id, credentials };
};
/** A device connected over MQTT, once its connected state is stored: a scheduling then delivers live. */
const connected = async (credentials: Credentials) => {
  const device = await connectDevice(credentials);
  devices.push(device);
  const id = credentials.devinfo.device_id;
  await until(async () => (await api.get(`/workspaces/${ws}/devices/${id}`)).body.device.connected === true, `${id} connected`);
  return device;
};

/** Downloads a URL a device was given and says what it holds: status, size, SHA-256. */
const download = async (url: string) => {
  const answer = await fetch(url);
  const bytes = Buffer.from(await answer.arrayBuffer());
  return { status: answer.status, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
};

/** The download fields of @fota args, checked for a fresh URL valid at least an hour. */
const expectDownloadOf = (args: Record<string, unknown>, firmware: string, version: string, image: Image) => {
  expect(args).toEqual({
    firmware_id: firmware,
    firmware_version: version,
    fw_version: version,
    url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/.+X-Amz-Signature=/),
    sha256: image.sha256,
    size: image.bytes.length,
    expires_at: expect.any(String),
  });
  // An hour from when it was minted, less what a loaded machine took since.
  expect(Date.parse(args.expires_at as string) - Date.now()).toBeGreaterThan(3540_000);
};

describe('registering and uploading a firmware version', () => {
  it('registers a version awaiting its upload, with a presigned PUT that names the checksum header to send', async () => {
    const image = imageOf(4096);

    const { status, body } = await register('app', '1.0.0', image, 'first build');

    expect(status).toBe(201);
    expect(body.firmware).toEqual({
      workspace_id: ws,
      firmware_id: 'app',
      version: '1.0.0',
      size: 4096,
      sha256: image.sha256,
      description: 'first build',
      status: 'awaiting_upload',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      upload: {
        method: 'PUT',
        // The registration's own key: <workspace>/<firmware>/<version>/<registration>.
        url: expect.stringMatching(new RegExp(`/${ws}/app/1\\.0\\.0/fwr-[0-9a-z]{20}\\?`)),
        headers: { 'x-amz-checksum-sha256': image.base64 },
        expires_at: expect.any(String),
      },
    });
    const lifetime = Date.parse(body.firmware.upload.expires_at) - Date.parse(body.firmware.created_at);
    expect(lifetime).toBeGreaterThanOrEqual(UPLOAD_TTL_SECONDS * 1000 - 1000);
    expect(lifetime).toBeLessThanOrEqual(UPLOAD_TTL_SECONDS * 1000 + 1000);
  });

  it('lets S3 refuse other bytes (400 BadDigest), stays awaiting_upload, and becomes ready with the right bytes', async () => {
    const image = imageOf(64 * 1024);
    const { body } = await register('app', '1.1.0', image);
    const wrong = Buffer.from(image.bytes);
    wrong[1000] ^= 0x01;

    const refused = await upload(body.firmware.upload, wrong);
    const before = await statusOf('app', '1.1.0');
    const accepted = await upload(body.firmware.upload, image.bytes);

    expect([refused.status, s3Code(refused.text)]).toEqual([400, 'BadDigest']);
    expect(before).toBe('awaiting_upload');
    expect(accepted.status).toBe(200);
    expect(await statusOf('app', '1.1.0')).toBe('ready');
  });

  itOnTheSources('keeps an object of other bytes, written some other way, from making the version ready; the right bytes mend it', async () => {
    const image = imageOf(2048);
    const { body } = await register('app', 'mended', image);
    await writeObject(keyOf(body.firmware.upload.url), randomBytes(2048));

    const before = await statusOf('app', 'mended');
    await upload(body.firmware.upload, image.bytes);

    expect(before).toBe('awaiting_upload');
    expect(await statusOf('app', 'mended')).toBe('ready');
  });

  itOnTheSources('answers a registration again: a fresh URL for the same bytes while awaiting, 409 for other bytes, 409 once ready', async () => {
    const image = imageOf(512);
    const first = await register('again', '1', image, 'one');
    const same = await register('again', '1', image, 'two');
    const otherBytes = await register('again', '1', imageOf(512));
    await upload(same.body.firmware.upload, image.bytes);
    // ready once the object is seen (the bucket's event, or the read that checks S3), not at the PUT's answer
    await until(async () => (await statusOf('again', '1')) === 'ready', 'the version ready');
    const afterReady = await register('again', '1', image);

    expect([first.status, same.status, otherBytes.status, afterReady.status]).toEqual([201, 201, 409, 409]);
    expect(same.body.firmware).toMatchObject({ description: 'two', created_at: first.body.firmware.created_at, status: 'awaiting_upload' });
    expect(otherBytes.body.error.message).toMatch(/another size or SHA-256/);
    expect(afterReady.body.error.message).toMatch(/is ready/);
    expect(await statusOf('again', '1')).toBe('ready');
  });

  it('lets the console’s origin send the upload from a browser (CORS), and no other origin', async () => {
    const image = imageOf(256);
    const { body } = await register('browser', '1', image);
    const preflight = (origin: string) =>
      fetch(body.firmware.upload.url, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type,x-amz-checksum-sha256' },
      });
    const consoleOrigin = new URL(runtime.base_url).origin;

    const allowed = await preflight(consoleOrigin);
    const other = await preflight('https://elsewhere.example');
    const put = await fetch(body.firmware.upload.url, {
      method: 'PUT',
      headers: { ...body.firmware.upload.headers, origin: consoleOrigin },
      body: image.bytes,
    });

    expect([allowed.status, allowed.headers.get('access-control-allow-origin'), allowed.headers.get('access-control-allow-methods')]).toEqual([
      200,
      consoleOrigin,
      'PUT',
    ]);
    expect(other.status).toBe(403);
    expect([put.status, put.headers.get('access-control-allow-origin')]).toEqual([200, consoleOrigin]);
  });

  itOnTheSources('refuses bad input with 400 naming the field, and writes nothing', async () => {
    const before = (await api.get(`/workspaces/${ws}/firmwares`)).body.firmwares;
    const image = imageOf(16);

    const answers = await Promise.all([
      api.post(versionPath('bad', '1'), { size: 16, sha256: 'abc' }),
      api.post(versionPath('bad', '1'), { size: 0, sha256: image.sha256 }),
      api.post(versionPath('bad', '1'), { size: 2 * 1024 ** 3 + 1, sha256: image.sha256 }),
      api.post(versionPath('bad', '1'), { size: 16, sha256: image.sha256, url: 'x' }),
      api.post(versionPath('bad!', '1'), { size: 16, sha256: image.sha256 }),
    ]);

    expect(answers.map((a) => [a.status, a.body.error.details.map((d: { field: string }) => d.field)])).toEqual([
      [400, ['body.sha256']],
      [400, ['body.size']],
      [400, ['body.size']],
      [400, ['body.url']],
      [400, ['path.firmwareId']],
    ]);
    expect((await api.get(`/workspaces/${ws}/firmwares`)).body.firmwares).toEqual(before);
  });

  itOnTheSources('lists the workspace’s versions by firmware and version, paged', async () => {
    const all = (await api.get(`/workspaces/${ws}/firmwares`)).body.firmwares as Array<{ firmware_id: string; version: string; upload?: unknown }>;
    const first = (await api.get(`/workspaces/${ws}/firmwares?limit=2`)).body;
    const second = (await api.get(`/workspaces/${ws}/firmwares?limit=2&cursor=${first.next}`)).body;

    expect(all.map((f) => `${f.firmware_id} ${f.version}`)).toEqual(expect.arrayContaining(['app 1.0.0', 'app 1.1.0', 'again 1']));
    expect(all.map((f) => `${f.firmware_id} ${f.version}`)).toEqual(all.map((f) => `${f.firmware_id} ${f.version}`).sort());
    expect(all.every((f) => f.upload === undefined)).toBe(true);
    expect([...first.firmwares, ...second.firmwares]).toEqual(all.slice(0, 4));
  });

  itOnTheSources('answers another account’s firmware 404, whatever the route', async () => {
    const answers = await Promise.all([
      other.get(versionPath('app', '1.1.0')),
      other.get(`/workspaces/${ws}/firmwares`),
      other.call('DELETE', versionPath('app', '1.1.0')),
      other.post(versionPath('app', '9.9.9'), { size: 1, sha256: 'a'.repeat(64) }),
    ]);

    expect(answers.map((a) => [a.status, a.body.error.code])).toEqual(Array(4).fill([404, 'not_found']));
    expect(await statusOf('app', '1.1.0')).toBe('ready');
  });
});

describe('FOTA of a registered firmware', () => {
  it('refuses a FOTA of a version that is registered but not ready (409) on a device and on fleets, and schedules nothing', async () => {
    const { id } = await newDevice('not-ready');
    await register('pending-fw', '1.0', imageOf(100));

    const one = await api.post(`/devices/${id}/fota/pending-fw/versions/1.0`);
    const fleets = await api.post(`/workspaces/${ws}/fota/pending-fw/versions/1.0`);

    expect([one.status, fleets.status]).toEqual([409, 409]);
    expect(one.body.error.message).toMatch(/not ready/);
    expect((await api.get(`/devices/${id}/fota`)).status).toBe(404);
  });

  itOnTheSources('schedules a version never registered as in v3, without a download', async () => {
    const { id, credentials } = await newDevice('v3-fota');
    const device = await connected(credentials);

    await api.post(`/devices/${id}/fota/unregistered/versions/3.0`);
    const live = await device.next('@fota');

    expect(live.value).toEqual({ args: { firmware_id: 'unregistered', firmware_version: '3.0', fw_version: '3.0' } });
  });

  it('gives the device a fresh download URL live on j/dn, in its #status answer and from GET /device/status, each of the exact bytes', async () => {
    const image = imageOf(300 * 1024);
    await readyVersion('main', '2.0.0', image);
    const { id, credentials } = await newDevice('fota-target');
    const device = await connected(credentials);

    await api.post(`/devices/${id}/fota/main/versions/2.0.0`);
    const live = (await device.next('@fota')).value.args;
    await device.up('#status', {});
    const status = (await device.next('#status')).value.expected['@fota'].v.args;
    const https = await deviceClient(runtime.base_url, await deviceToken(credentials)).get('/status');

    expectDownloadOf(live, 'main', '2.0.0', image);
    expectDownloadOf(status, 'main', '2.0.0', image);
    expectDownloadOf(https.body.fota.value, 'main', '2.0.0', image);
    for (const url of [live.url, status.url, https.body.fota.value.url]) {
      expect(await download(url)).toEqual({ status: 200, size: image.bytes.length, sha256: image.sha256 });
    }
    // The scheduled FOTA itself names the firmware only (the v3 answer), never a URL.
    expect((await api.get(`/devices/${id}/fota`)).body.fota.value).toEqual({ firmware_id: 'main', firmware_version: '2.0.0' });
  });

  it('delivers a fleet-wide FOTA of a ready version with its download to every connected device', async () => {
    const image = imageOf(10 * 1024);
    await readyVersion('fleet-fw', '1.0', image);
    const fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'fota-fleet' })).body.fleet;
    const targets = await Promise.all(
      [1, 2, 3].map(async (n) => {
        const { id, credentials } = await newDevice(`fleet-${n}`);
        await api.put(`/workspaces/${ws}/devices/${id}`, { name: `fleet-${n}`, fleet_id: fleet.id });
        return connected(credentials);
      }),
    );

    const scheduled = await api.post(`/workspaces/${ws}/fota/fleet-fw/versions/1.0?fleet=${fleet.id}`);
    const delivered = await Promise.all(targets.map(async (d) => (await d.next('@fota')).value.args));

    expect(scheduled.status).toBe(200);
    for (const args of delivered) expectDownloadOf(args, 'fleet-fw', '1.0', image);
    expect(await download(delivered[0].url)).toMatchObject({ status: 200, sha256: image.sha256 });
  });

  it('refuses to delete a version while a FOTA that has not ended uses it (409), and deletes it and its image once it ended', async () => {
    const image = imageOf(2048);
    await readyVersion('in-use', '1.0', image);
    const { id, credentials } = await newDevice('in-use');
    const device = await connected(credentials);
    await api.post(`/devices/${id}/fota/in-use/versions/1.0`);
    const { url } = (await device.next('@fota')).value.args;

    // DynamoDB Local's indexes follow a write at once (on AWS, within moments: docs/decisions.md).
    const refused = await api.call('DELETE', versionPath('in-use', '1.0'));
    await device.up('@fota', { fw_version: '1.0', result: 'success' });
    await until(async () => (await api.get(`/devices/${id}/fota`)).body.fota.status === 'done', 'the FOTA is done');
    const deleted = await api.call('DELETE', versionPath('in-use', '1.0'));

    expect([refused.status, refused.body.error.message]).toEqual([409, expect.stringContaining(`device ${id}`)]);
    expect(deleted.status).toBe(200);
    expect(deleted.body.firmware).toMatchObject({ firmware_id: 'in-use', version: '1.0', status: 'ready' });
    expect((await api.get(versionPath('in-use', '1.0'))).status).toBe(404);
    expect((await download(url)).status).toBeGreaterThanOrEqual(400);
    // Registered again, it awaits a new upload: the old image is gone.
    expect((await register('in-use', '1.0', image)).body.firmware.status).toBe('awaiting_upload');
  });
});

describe('firmware objects: an old upload URL, and what S3 holds when a download is minted', () => {
  itOnTheSources('keeps an upload URL of a deleted registration from reaching the version registered again: devices download the new bytes', async () => {
    const first = imageOf(4096);
    const second = imageOf(4096);
    const { body: registered } = await register('rereg', '1.0', first);
    expect((await upload(registered.firmware.upload, first.bytes)).status).toBe(200);
    expect((await api.call('DELETE', versionPath('rereg', '1.0'))).status).toBe(200);
    const { body: again } = await register('rereg', '1.0', second);
    expect((await upload(again.firmware.upload, second.bytes)).status).toBe(200);
    expect(await statusOf('rereg', '1.0')).toBe('ready');
    const { id, credentials } = await newDevice('rereg-target');
    await api.post(`/devices/${id}/fota/rereg/versions/1.0`);

    // The first registration's URL, still valid, with the bytes it was signed for.
    const stale = await upload(registered.firmware.upload, first.bytes);
    const status = await deviceClient(runtime.base_url, await deviceToken(credentials)).get('/status');

    expect((await api.get(versionPath('rereg', '1.0'))).body.firmware).toMatchObject({ status: 'ready', sha256: second.sha256 });
    expectDownloadOf(status.body.fota.value, 'rereg', '1.0', second);
    expect(await download(status.body.fota.value.url)).toEqual({ status: 200, size: 4096, sha256: second.sha256 });
    // S3 takes the stale PUT, at the first registration's key, which nothing reads any more.
    expect(stale.status).toBe(200);
    expect(keyOf(again.firmware.upload.url)).not.toBe(keyOf(registered.firmware.upload.url));
  });

  it('mints no download URL while the object S3 holds is not the registered image, holds the FOTA back, and delivers it once it is', async () => {
    const image = imageOf(8192);
    const { body } = await register('swapped', '1.0', image);
    expect((await upload(body.firmware.upload, image.bytes)).status).toBe(200);
    expect(await statusOf('swapped', '1.0')).toBe('ready');
    const key = keyOf(body.firmware.upload.url);
    const { id, credentials } = await newDevice('swapped-target');
    await api.post(`/devices/${id}/fota/swapped/versions/1.0`);
    const device = await connected(credentials);
    const https = deviceClient(runtime.base_url, await deviceToken(credentials));
    const other = imageOf(8192);

    // Other bytes of the same size, stored with their own checksum (S3 checked them against it).
    await writeObject(key, other.bytes, other.base64);
    const overHttps = await https.get('/status');
    await device.up('#status', {});
    const overMqtt = (await device.next('#status')).value;
    // Cut short, stored without a checksum.
    await writeObject(key, image.bytes.subarray(0, 100));
    const truncated = await https.get('/status');
    // The registered bytes again: the FOTA is delivered with a URL of them.
    await writeObject(key, image.bytes, image.base64);
    const mended = await https.get('/status');

    expect([overHttps.status, overHttps.body.fota]).toEqual([200, null]);
    expect(overMqtt.expected['@fota']).toBeUndefined();
    expect(truncated.body.fota).toBeNull();
    expectDownloadOf(mended.body.fota.value, 'swapped', '1.0', image);
    expect(await download(mended.body.fota.value.url)).toEqual({ status: 200, size: 8192, sha256: image.sha256 });
    // The FOTA itself was never changed: it waited, pending.
    expect((await api.get(`/devices/${id}/fota`)).body.fota.status).toBe('pending');
  });
});

describe('the device simulator (npm run device)', () => {
  /** Runs `fleetstream device` on credentials, as `npm run device` does, until it exits or is stopped. */
  const simulate = (credentials: Credentials[], ...args: string[]) => {
    const file = join(mkdtempSync(join(tmpdir(), 'fleetstream-sim-')), 'devices.json');
    writeFileSync(file, JSON.stringify(credentials));
    let stderr = '';
    const child = spawn(process.execPath, fleetstreamArgs('device', ['--credentials', file, '--interval', '0', ...args]), {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return { stderr: () => stderr, stop: async () => (child.kill('SIGINT'), await exited) };
  };

  itOnTheSources(
    'downloads a FOTA’s image and checks it: a good download reports done, a corrupted one failed with what did not match',
    async () => {
      const image = imageOf(256 * 1024);
      await readyVersion('sim', '4.2.0', image);
      const good = await newDevice('sim-good');
      const bad = await newDevice('sim-bad');
      const healthy = simulate([good.credentials]);
      const flaky = simulate([bad.credentials], '--corrupt', '1');
      try {
        await until(() => healthy.stderr().includes('status:') && flaky.stderr().includes('status:'), 'both simulators connected and asked #status', 30_000);
        await api.post(`/devices/${good.id}/fota/sim/versions/4.2.0`);
        await api.post(`/devices/${bad.id}/fota/sim/versions/4.2.0`);

        await until(async () => (await api.get(`/devices/${good.id}/fota`)).body.fota.status === 'done', 'the good device’s FOTA done', 30_000);
        await until(async () => (await api.get(`/devices/${bad.id}/fota`)).body.fota.status === 'failed', 'the corrupted device’s FOTA failed', 30_000);
      } finally {
        await Promise.all([healthy.stop(), flaky.stop()]);
      }

      expect(healthy.stderr()).toContain('image checked (size and SHA-256), reporting success');
      expect(flaky.stderr()).toMatch(/SHA-256 mismatch: got [0-9a-f]{64}, expected [0-9a-f]{64}, reporting fail/);
    },
    90_000,
  );
});

describe('an upload URL past its expiry', () => {
  itOnTheSources(
    'is refused (403 AccessDenied), and the version stays awaiting_upload',
    async () => {
      await until(() => Date.now() > Date.parse(late.upload.expires_at) + 1000, 'the upload URL expired', (UPLOAD_TTL_SECONDS + 10) * 1000);
      const refused = await upload(late.upload, late.image.bytes);

      expect([refused.status, s3Code(refused.text)]).toEqual([403, 'AccessDenied']);
      expect(refused.text).toContain('Request has expired');
      expect(await statusOf('app', 'late')).toBe('awaiting_upload');
      // Registering again with the same bytes gives a fresh URL, which works.
      const again = await register('app', 'late', late.image);
      expect(again.status).toBe(201);
      expect((await upload(again.body.firmware.upload, late.image.bytes)).status).toBe(200);
      expect(await statusOf('app', 'late')).toBe('ready');
    },
    120_000,
  );
});
