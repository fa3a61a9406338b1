/**
 * `npm run device -- --credentials zdevice.json`: a simulated device that speaks the MQTT device
 * protocol (spec/device-mqtt.md) as existing device clients do, from the credentials file alone:
 * connects (TLS with the file's `cacert` when `endpoint.mode` is `secure`), subscribes to
 * `j/dn/<id>`, asks `#status` and sends its `__manifest`, answers every job (`@<name>`) and FOTA,
 * asks `#now`, and publishes a data point every `--interval` seconds. A FOTA whose firmware was
 * uploaded (its args carry `url`, `sha256`, `size`) is downloaded and checked: the device reports
 * `"result": "success"` when size and SHA-256 match, `"fail"` with what did not otherwise; a FOTA
 * without a download is answered as a success at once. Progress goes to stderr.
 *
 *   --credentials <file>   the zdevice.json from POST …/identities (required)
 *   --count <n>            run the first n devices of a credentials file holding a JSON array of
 *                          documents (one connection per device: a client ID connects once)
 *   --create <n>           first create n devices with credentials over the HTTP API, as any API
 *                          client would, and write them to --credentials as such an array; needs
 *   --base-url <url> --api-key <key> --workspace <id>  (the READY line's base_url, api_key, workspace_id)
 *   --interval <seconds>   seconds between data points (default 5; 0: no data)
 *   --tag <tag>            the data points' tag (default "telemetry")
 *   --duration <seconds>   stop after this long (default: run until Ctrl-C)
 *   --corrupt <fraction>   share of the devices (the first ones, 0 to 1; default 0) whose firmware
 *                          downloads arrive with a byte changed, so that they report the FOTA failed
 *   --quiet                only a summary line every 5 seconds
 */
import mqtt, { type MqttClient } from 'mqtt';
import { SignJWT } from 'jose';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Credentials {
  devinfo: { device_id: string; key_id?: string; mode?: string; key_type?: string };
  prvkey: string;
  endpoint: { host: string; port: number; mode?: string };
  cacert?: string;
}

const { values } = parseArgs({
  options: {
    credentials: { type: 'string' },
    count: { type: 'string' },
    interval: { type: 'string', default: '5' },
    tag: { type: 'string', default: 'telemetry' },
    duration: { type: 'string' },
    quiet: { type: 'boolean', default: false },
    corrupt: { type: 'string', default: '0' },
    create: { type: 'string' },
    'base-url': { type: 'string' },
    'api-key': { type: 'string' },
    workspace: { type: 'string' },
  },
});

const fail = (message: string): never => {
  process.stderr.write(`device: ${message}\n`);
  process.exit(2);
};

if (!values.credentials) fail('--credentials <zdevice.json> is required');

/** Creates devices and their identities through the management API and saves the credentials. */
const createDevices = async (n: number) => {
  const base = values['base-url'] ?? fail('--create needs --base-url');
  const key = values['api-key'] ?? fail('--create needs --api-key');
  const workspace = values.workspace ?? fail('--create needs --workspace');
  const call = async (path: string, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await response.json()) as Record<string, any>;
    if (!response.ok) fail(`${path}: ${response.status} ${JSON.stringify(answer.error ?? answer)}`);
    return answer;
  };
  const created: Credentials[] = [];
  for (let i = 0; i < n; i += 1) {
    const { device } = await call(`/workspaces/${workspace}/devices`, { name: `simulated-${Date.now()}-${i}` });
    const { credentials } = await call(`/workspaces/${workspace}/devices/${device.id}/identities`);
    created.push(credentials as Credentials);
    if ((i + 1) % 50 === 0) process.stderr.write(`device: created ${i + 1}/${n}\n`);
  }
  writeFileSync(values.credentials!, JSON.stringify(created, null, 2) + '\n', { mode: 0o600 });
  process.stderr.write(`device: ${n} devices with credentials written to ${values.credentials}\n`);
};
if (values.create) await createDevices(Number(values.create));

const loaded = JSON.parse(readFileSync(values.credentials!, 'utf8')) as Credentials | Credentials[];
const documents = Array.isArray(loaded) ? loaded : [loaded];
const count = Number(values.count ?? documents.length);
if (!Number.isInteger(count) || count < 1) fail('--count must be a positive integer');
if (count > documents.length) fail(`--count ${count} needs ${count} credentials documents (a JSON array); the file has ${documents.length}`);
const intervalMs = Number(values.interval) * 1000;
const corrupt = Number(values.corrupt);
if (!(corrupt >= 0 && corrupt <= 1)) fail('--corrupt must be a fraction from 0 to 1');
const corrupted = Math.round(count * corrupt);
const stats = { connected: 0, points: 0, jobs: 0, refused: 0, firmwareOk: 0, firmwareFailed: 0 };
let stopping = false;
const say = (id: string, line: string) => {
  if (!values.quiet) process.stderr.write(`${new Date().toISOString()} ${id} ${line}\n`);
};

/** The device token as clients make it: once, at start, reused on reconnects (spec/device-mqtt.md). */
const tokenOf = (c: Credentials) =>
  new SignJWT({ sub: c.devinfo.device_id, key: c.devinfo.key_id ?? 0 })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
    .sign(Buffer.from(c.prvkey, 'base64'));

/** What a FOTA's args say of its firmware's download (operations.md §3); absent for a FOTA without one. */
interface FirmwareDownload {
  fw_version?: string;
  url?: string;
  sha256?: string;
  size?: number;
}

/**
 * Downloads a firmware image and checks it against its args, as a device's updater would before
 * flashing it: the same size and SHA-256, or the reason it is refused. `corrupt` changes one byte
 * of what arrived first, as a flaky link would.
 */
const checkedDownload = async (args: FirmwareDownload, corrupt: boolean): Promise<{ ok: true } | { ok: false; why: string }> => {
  const answer = await fetch(args.url!).catch((error: Error) => error);
  if (answer instanceof Error) return { ok: false, why: `download failed: ${answer.message}` };
  if (!answer.ok || !answer.body) return { ok: false, why: `download failed: HTTP ${answer.status} ${(await answer.text()).slice(0, 200)}` };
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of answer.body as AsyncIterable<Uint8Array>) {
    const bytes = Buffer.from(chunk);
    if (corrupt && size === 0 && bytes.length) bytes[0] ^= 0xff;
    hash.update(bytes);
    size += bytes.length;
  }
  const sha256 = hash.digest('hex');
  if (size !== args.size) return { ok: false, why: `size mismatch: got ${size} bytes, expected ${args.size}` };
  if (sha256 !== args.sha256) return { ok: false, why: `SHA-256 mismatch: got ${sha256}, expected ${args.sha256}` };
  return { ok: true };
};

const runDevice = async (c: Credentials, index: number): Promise<MqttClient> => {
  const id = c.devinfo.device_id;
  const corruptsDownloads = index < corrupted;
  // A FOTA may come live and again in a #status answer: each version is worked on once at a time.
  const updating = new Set<string>();
  const secure = c.endpoint.mode === 'secure';
  if (secure && !c.cacert) fail(`${id}: endpoint.mode is secure but the credentials carry no cacert`);
  const client = mqtt.connect(`${secure ? 'mqtts' : 'mqtt'}://${c.endpoint.host}:${c.endpoint.port}`, {
    clientId: id,
    username: id,
    password: await tokenOf(c),
    protocolVersion: 4,
    clean: true,
    keepalive: 60,
    connectTimeout: 10_000,
    reconnectPeriod: 2_000,
    ...(secure ? { ca: c.cacert, rejectUnauthorized: true } : {}),
  });
  const up = (key: string, value: unknown) => client.publish(`j/up/${id}`, JSON.stringify({ key, value }), { qos: 1 });
  let timer: NodeJS.Timeout | undefined;
  client.on('connect', () => {
    stats.connected += 1;
    say(id, `connected to ${c.endpoint.host}:${c.endpoint.port}${secure ? ' (TLS)' : ''}`);
    // Clean sessions: subscribe on every connect, then ask what to do and tell what we can do.
    client.subscribe(`j/dn/${id}`, { qos: 1 }, () => {
      up('#status', {});
      up('__manifest', { jobs: ['*'], conditions: [] });
      up('#now', {});
    });
    if (intervalMs > 0 && !timer) {
      timer = setInterval(() => {
        const payload = { value: Math.round(Math.random() * 1000) / 10, uptime_s: Math.round(process.uptime()) };
        client.publish(`j/data/${id}/${values.tag}`, JSON.stringify(payload), { qos: 1 }, (error) => {
          if (!error) stats.points += 1;
        });
      }, intervalMs);
    }
  });
  client.on('close', () => {
    if (stats.connected > 0 && !stopping) say(id, 'connection closed');
  });
  client.on('error', (error) => {
    if (stopping) return; // the broker closing our sockets as we leave
    stats.refused += 1;
    say(id, `error: ${error.message}`);
  });
  client.on('message', (_topic, payload) => {
    const { key, value } = JSON.parse(payload.toString('utf8')) as { key: string; value: any };
    if (key === '#now') return say(id, `time is ${new Date(value.ms).toISOString()}`);
    if (key === '#status') {
      const expected = Object.entries((value?.expected ?? {}) as Record<string, { v: { args: unknown } }>);
      say(id, `status: ${expected.length} pending (${expected.map(([k]) => k).join(', ') || 'nothing'})`);
      for (const [k, { v }] of expected) answer(k, v.args);
      return;
    }
    if (key.startsWith('@')) answer(key, value?.args);
  });
  const updateFirmware = async (args: FirmwareDownload) => {
    const version = args.fw_version ?? '?';
    if (updating.has(version)) return;
    updating.add(version);
    try {
      say(id, `FOTA to ${version}: downloading ${args.size} bytes${corruptsDownloads ? ' (corrupting them on purpose)' : ''}`);
      const checked = await checkedDownload(args, corruptsDownloads);
      if (checked.ok) {
        stats.firmwareOk += 1;
        say(id, `FOTA to ${version}: image checked (size and SHA-256), reporting success`);
        up('@fota', { fw_version: args.fw_version, result: 'success', msg: 'image downloaded and checked' });
      } else {
        stats.firmwareFailed += 1;
        say(id, `FOTA to ${version}: ${checked.why}, reporting fail`);
        up('@fota', { fw_version: args.fw_version, result: 'fail', msg: checked.why });
      }
    } finally {
      updating.delete(version);
    }
  };
  const answer = (key: string, args: unknown) => {
    if (key === '@fota') {
      const download = (args ?? {}) as FirmwareDownload;
      if (download.url) return void updateFirmware(download);
      say(id, `FOTA to ${download.fw_version ?? '?'} (no image to download): pretending it succeeded`);
      up('@fota', { fw_version: download.fw_version, result: 'success', msg: 'simulated' });
      return;
    }
    stats.jobs += 1;
    say(id, `job ${key.slice(1)} with ${JSON.stringify(args)}: done`);
    up(key, { ok: true, simulated: true, args });
  };
  return client;
};

const main = async () => {
  const clients = await Promise.all(documents.slice(0, count).map((c, i) => runDevice(c, i)));
  process.stderr.write(`device: ${clients.length} simulated device(s) started; Ctrl-C stops\n`);
  const summary = setInterval(() => {
    const online = clients.filter((c) => c.connected).length;
    process.stderr.write(
      `device: ${online}/${clients.length} connected, ${stats.points} points, ${stats.jobs} jobs answered, firmware ${stats.firmwareOk} installed / ${stats.firmwareFailed} refused, ${stats.refused} errors\n`,
    );
  }, 5_000);
  const stop = () => {
    stopping = true;
    clearInterval(summary);
    Promise.all(clients.map((c) => c.endAsync())).finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (values.duration) setTimeout(stop, Number(values.duration) * 1000);
};

main().catch((error: Error) => fail(error.message));
