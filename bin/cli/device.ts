/**
 * `fleetstream device --credentials zdevice.json` (`npm run device`): a simulated device that speaks
 * the MQTT device protocol (spec/device-mqtt.md) as existing device clients do, from the credentials
 * file alone: connects (TLS with the file's `cacert` when `endpoint.mode` is `secure`), subscribes
 * to `j/dn/<id>`, asks `#status` and sends its `__manifest`, answers every job (`@<name>`) and
 * FOTA, asks `#now`, and publishes a data point every `--interval` seconds. A FOTA whose firmware
 * was uploaded (its args carry `url`, `sha256`, `size`) is downloaded and checked: the device
 * reports `"result": "success"` when size and SHA-256 match, `"fail"` with what did not otherwise;
 * a FOTA without a download is answered as a success at once. It keeps a state (`--state`, spec
 * fleet-state.md §3): it applies the desired keys of its `#status` answer and of each live `#state`
 * (but the keys it was told to refuse) and reports what changed with `#state`; after a FOTA it
 * reports its `fw_version`. Progress goes to stderr. The options (several devices from one file,
 * creating them first, corrupted downloads, state) are bin/commands/device.ts's.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { SignJWT } from 'jose';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { applyDesired, desiredOfStatus, type StateDocument } from './device-state';

interface Credentials {
  devinfo: { device_id: string; key_id?: string; mode?: string; key_type?: string };
  prvkey: string;
  endpoint: { host: string; port: number; mode?: string };
  cacert?: string;
}

/** `device`'s options (the options of bin/commands/device.ts, parsed). */
export interface DeviceOptions {
  credentials: string;
  count?: number;
  interval: number;
  tag: string;
  duration?: number;
  quiet?: boolean;
  corrupt: number;
  create?: number;
  baseUrl?: string;
  apiKey?: string;
  workspace?: string;
  /** With `create`: the tags of the devices it makes. */
  deviceTag?: Record<string, string>;
  /** A JSON file of the state the devices start with (and, for one device, where it keeps what it applied). */
  state?: string;
  /** Desired keys the devices do not apply (they stay `pending`). */
  refuse?: string[];
}

const fail = (message: string): never => {
  process.stderr.write(`device: ${message}\n`);
  process.exit(2);
};

/** Creates devices and their identities through the management API and saves the credentials. */
const createDevices = async (options: DeviceOptions, n: number) => {
  // The command refuses --create without the three (bin/commands/device.ts).
  const [base, key, workspace] = [options.baseUrl!, options.apiKey!, options.workspace!];
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
    const { device } = await call(`/workspaces/${workspace}/devices`, {
      name: `simulated-${Date.now()}-${i}`,
      ...(options.deviceTag ? { tags: options.deviceTag } : {}),
    });
    const { credentials } = await call(`/workspaces/${workspace}/devices/${device.id}/identities`);
    created.push(credentials as Credentials);
    if ((i + 1) % 50 === 0) process.stderr.write(`device: created ${i + 1}/${n}\n`);
  }
  writeFileSync(options.credentials, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
  process.stderr.write(`device: ${n} devices with credentials written to ${options.credentials}\n`);
};

/** What the devices of one run share: their settings, their counts, whether they are stopping. */
interface Simulation {
  intervalMs: number;
  tag: string;
  /** The first this many devices corrupt their firmware downloads. */
  corrupted: number;
  stats: { connected: number; points: number; jobs: number; refused: number; firmwareOk: number; firmwareFailed: number; stateChanges: number };
  stopping: boolean;
  /** The state each device starts with (each device keeps its own copy). */
  initialState: StateDocument;
  /** Desired keys not applied. */
  refuse: ReadonlySet<string>;
  /** Called with a device's state after it changed (writes the --state file when one device runs). */
  keepState: (state: StateDocument) => void;
  say: (id: string, line: string) => void;
}

/** A device token as clients make it (spec/device-mqtt.md): HS256, `sub`, `key`, `exp` an hour ahead. */
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

/** How long a device waits before it connects again after its connection closed (or was refused). */
const RECONNECT_MS = 2_000;

/**
 * Connects again whenever the connection closes, with a token signed for that attempt: the cloud
 * refuses an expired token (past 60 s of clock tolerance, docs/security.md), so the first token,
 * which the spec's clients reuse, would strand the device an hour after it started. mqtt.js's own
 * reconnect would resend the first token; this one signs a new token, then reconnects keeping
 * the messages still waiting for their PUBACK.
 */
const reconnectWithFreshTokens = (sim: Simulation, c: Credentials, client: MqttClient) => {
  let pending: NodeJS.Timeout | undefined;
  client.on('close', () => {
    if (sim.stopping || pending) return;
    pending = setTimeout(() => {
      pending = undefined;
      if (sim.stopping) return;
      void tokenOf(c).then((token) => {
        client.options.password = token;
        client.reconnect({ incomingStore: client.incomingStore, outgoingStore: client.outgoingStore });
      });
    }, RECONNECT_MS);
  });
};

const runDevice = async (sim: Simulation, c: Credentials, index: number): Promise<MqttClient> => {
  const { stats, say, intervalMs } = sim;
  const id = c.devinfo.device_id;
  const corruptsDownloads = index < sim.corrupted;
  // A FOTA may come live and again in a #status answer: each version is worked on once at a time.
  const updating = new Set<string>();
  const state: StateDocument = structuredClone(sim.initialState);
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
    reconnectPeriod: 0,
    ...(secure ? { ca: c.cacert, rejectUnauthorized: true } : {}),
  });
  reconnectWithFreshTokens(sim, c, client);
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
        client.publish(`j/data/${id}/${sim.tag}`, JSON.stringify(payload), { qos: 1 }, (error) => {
          if (!error) stats.points += 1;
        });
      }, intervalMs);
    }
  });
  client.on('close', () => {
    if (stats.connected > 0 && !sim.stopping) say(id, 'connection closed');
  });
  client.on('error', (error) => {
    if (sim.stopping) return; // the broker closing our sockets as we leave
    stats.refused += 1;
    say(id, `error: ${error.message}`);
  });
  /** Applies desired keys and reports what changed, with `extra` reported keys (what the cloud's copy lacks). */
  const converge = (desired: StateDocument, extra: StateDocument = {}) => {
    const { reported, refused } = applyDesired(state, desired, sim.refuse);
    if (refused.length) say(id, `state: refusing ${refused.join(', ')} (as told by --refuse)`);
    const report = { ...extra, ...reported };
    if (!Object.keys(report).length) return;
    stats.stateChanges += Object.keys(reported).length;
    say(id, `state: reporting ${JSON.stringify(report)}`);
    up('#state', { reported: report });
    sim.keepState(state);
  };
  client.on('message', (_topic, payload) => {
    const { key, value } = JSON.parse(payload.toString('utf8')) as { key: string; value: any };
    if (key === '#now') return say(id, `time is ${new Date(value.ms).toISOString()}`);
    if (key === '#status') {
      // `@` keys are jobs; keys without a prefix are desired state (spec/device-mqtt.md).
      const jobs = Object.entries((value?.expected ?? {}) as Record<string, { v: { args: unknown } }>).filter(([k]) => k.startsWith('@'));
      say(id, `status: ${jobs.length} pending (${jobs.map(([k]) => k).join(', ') || 'nothing'})`);
      for (const [k, { v }] of jobs) answer(k, v?.args);
      // What the cloud holds as reported and differs from this device's state is reported again.
      const current = desiredOfStatus(value?.current);
      const stale = Object.fromEntries(Object.entries(state).filter(([k, v]) => !isDeepStrictEqual(current[k], v)));
      return converge(desiredOfStatus(value?.expected), stale);
    }
    if (key === '#state') return converge((value?.desired ?? {}) as StateDocument);
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
        if (args.fw_version) converge({}, { fw_version: (state.fw_version = args.fw_version) });
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

/** Reads the credentials file: one zdevice.json document, or an array of them. */
const readCredentials = (file: string): Credentials[] => {
  try {
    const loaded = JSON.parse(readFileSync(file, 'utf8')) as Credentials | Credentials[];
    return Array.isArray(loaded) ? loaded : [loaded];
  } catch (error) {
    return fail(`${file}: ${(error as Error).message}`);
  }
};

/** Reads the --state file: a JSON object of top-level keys. */
const readState = (file: string): StateDocument => {
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (state === null || typeof state !== 'object' || Array.isArray(state)) return fail(`${file}: a state is a JSON object, e.g. {"interval": 30}`);
    return state as StateDocument;
  } catch (error) {
    return fail(`${file}: ${(error as Error).message}`);
  }
};

/**
 * Runs the simulated devices (creating them first with `--create`) until Ctrl-C or `--duration`;
 * a failure is said in one line and exits 2.
 */
export const simulateDevices = async (options: DeviceOptions) => {
  if (options.create !== undefined) await createDevices(options, options.create);
  const documents = readCredentials(options.credentials);
  const count = options.count ?? documents.length;
  if (count > documents.length) fail(`--count ${count} needs ${count} credentials documents (a JSON array); the file has ${documents.length}`);
  const stats = { connected: 0, points: 0, jobs: 0, refused: 0, firmwareOk: 0, firmwareFailed: 0, stateChanges: 0 };
  const initialState = options.state === undefined ? {} : readState(options.state);
  const sim: Simulation = {
    initialState,
    refuse: new Set(options.refuse ?? []),
    // One device keeps its state in the file, so that it starts from it again; several share it as their start only.
    keepState: (state) => {
      if (options.state !== undefined && count === 1) writeFileSync(options.state, `${JSON.stringify(state, null, 2)}\n`);
    },
    intervalMs: options.interval * 1000,
    tag: options.tag,
    corrupted: Math.round(count * options.corrupt),
    stats,
    stopping: false,
    say: (id, line) => {
      if (!options.quiet) process.stderr.write(`${new Date().toISOString()} ${id} ${line}\n`);
    },
  };
  try {
    const clients = await Promise.all(documents.slice(0, count).map((c, i) => runDevice(sim, c, i)));
    process.stderr.write(`device: ${clients.length} simulated device(s) started; Ctrl-C stops\n`);
    const summary = setInterval(() => {
      const online = clients.filter((c) => c.connected).length;
      process.stderr.write(
        `device: ${online}/${clients.length} connected, ${stats.points} points, ${stats.jobs} jobs answered, firmware ${stats.firmwareOk} installed / ${stats.firmwareFailed} refused, ${stats.stateChanges} state keys applied, ${stats.refused} errors\n`,
      );
    }, 5_000);
    const stop = () => {
      sim.stopping = true;
      clearInterval(summary);
      Promise.all(clients.map((c) => c.endAsync())).finally(() => process.exit(0));
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    if (options.duration !== undefined) setTimeout(stop, options.duration * 1000);
  } catch (error) {
    fail((error as Error).message);
  }
};
