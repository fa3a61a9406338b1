import { Aedes } from 'aedes';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { until } from '../../../local/ports';
import { fleetstreamArgs } from '../../helpers/cli';

// The simulator (`fleetstream device`) against a bare broker that records each CONNECT's token and
// closes the first connection: what it presents when it connects again is what this checks. The
// cloud refuses a token past its exp (60 s of clock tolerance), so a device that reuses its first
// token is stranded an hour after it started (docs/security.md, "The MQTT door").

let broker: Aedes;
let server: Server;
/** Each CONNECT's token `exp`, in order. */
const connects: number[] = [];

beforeAll(async () => {
  broker = await Aedes.createBroker({
    authenticate: (_client, _username, password, done) => {
      connects.push(decodeJwt(password!.toString('utf8')).exp!);
      done(null, true);
    },
  });
  broker.on('clientReady', (client) => {
    if (connects.length === 1) client.close();
  });
  server = createServer((socket) => broker.handle(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
});
afterAll(async () => {
  await new Promise<void>((resolve) => broker.close(() => resolve()));
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the device simulator (npm run device)', () => {
  it('signs a new token when it connects again, instead of presenting its first one', async () => {
    const credentials = {
      devinfo: { device_id: 'dev-aaaaaaaaaaaaaaaaaaaa', key_id: 'idn-aaaaaaaaaaaaaaaaaaaa', mode: 'device_token', key_type: 'sym' },
      prvkey: Buffer.alloc(32, 7).toString('base64'),
      endpoint: { host: '127.0.0.1', port: (server.address() as { port: number }).port, mode: 'insecure' },
    };
    const file = join(mkdtempSync(join(tmpdir(), 'fleetstream-sim-')), 'zdevice.json');
    writeFileSync(file, JSON.stringify(credentials));
    const child = spawn(process.execPath, fleetstreamArgs('device', ['--credentials', file, '--interval', '0', '--quiet']), { stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await until(() => connects.length >= 2, 'the simulator connected again after its connection was closed', 30_000);
    } finally {
      child.kill('SIGINT');
      await exited;
    }

    // Signed at least 2 s (its reconnect delay) after the first: a later exp, to the second.
    expect(connects[1]).toBeGreaterThan(connects[0]);
  }, 60_000);
});

// The simulator's state (`--state`, `--refuse`) against a bare broker that plays the cloud's side
// of spec/device-mqtt.md: it answers `#status` with a job and desired keys, sends a live `#state`,
// and records what the device publishes on `j/up`.
describe('the device simulator’s state (fleet-state.md §3)', () => {
  const DEVICE = 'dev-bbbbbbbbbbbbbbbbbbbb';
  let cloud: Aedes;
  let cloudServer: Server;
  /** What the device published on j/up, in order. */
  const ups: Array<{ key: string; value: any }> = [];
  const down = (key: string, value: unknown) =>
    cloud.publish(
      { cmd: 'publish', topic: `j/dn/${DEVICE}`, payload: Buffer.from(JSON.stringify({ key, value })), qos: 1, dup: false, retain: false },
      () => {},
    );

  beforeAll(async () => {
    cloud = await Aedes.createBroker();
    cloud.on('publish', (packet, client) => {
      if (!client || packet.topic !== `j/up/${DEVICE}`) return;
      const message = JSON.parse(packet.payload.toString('utf8'));
      ups.push(message);
      if (message.key === '#status')
        down('#status', {
          expected: { '@reboot': { v: { args: { soon: true } } }, interval: { v: 60 }, mode: { v: 'eco' } },
          current: { interval: { v: 30 } },
        });
    });
    cloudServer = createServer((socket) => cloud.handle(socket));
    await new Promise<void>((resolve) => cloudServer.listen(0, '127.0.0.1', () => resolve()));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => cloud.close(() => resolve()));
    await new Promise<void>((resolve) => cloudServer.close(() => resolve()));
  });

  it('runs only the @ keys as jobs, applies and reports desired keys but the refused one, and keeps its state in the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetstream-sim-'));
    const credentials = join(dir, 'zdevice.json');
    const stateFile = join(dir, 'state.json');
    writeFileSync(
      credentials,
      JSON.stringify({
        devinfo: { device_id: DEVICE, key_id: 'idn-bbbbbbbbbbbbbbbbbbbb', mode: 'device_token', key_type: 'sym' },
        prvkey: Buffer.alloc(32, 7).toString('base64'),
        endpoint: { host: '127.0.0.1', port: (cloudServer.address() as { port: number }).port, mode: 'insecure' },
      }),
    );
    writeFileSync(stateFile, JSON.stringify({ interval: 30, threshold: 5 }));
    const child = spawn(
      process.execPath,
      fleetstreamArgs('device', ['--credentials', credentials, '--interval', '0', '--quiet', '--state', stateFile, '--refuse', 'mode']),
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const reports = () => ups.filter((m) => m.key === '#state').map((m) => m.value.reported);
    try {
      await until(() => reports().length >= 1 && ups.some((m) => m.key === '@reboot'), 'the simulator answered #status', 30_000);
      // A live change: a new key set, one removed, the refused one again.
      down('#state', { desired: { threshold: null, led: true, mode: 'turbo' }, version: 2 });
      await until(() => reports().length >= 2, 'the simulator reported the live change', 30_000);
      await until(() => JSON.parse(readFileSync(stateFile, 'utf8')).led === true, 'the state file to hold the live change', 30_000);
    } finally {
      child.kill('SIGINT');
      await exited;
    }

    // The job ran; the desired keys did not (no `interval` or `mode` result).
    expect(ups.filter((m) => m.key.startsWith('@')).map((m) => m.key)).toEqual(['@reboot']);
    expect(ups.some((m) => m.key === 'interval' || m.key === 'mode')).toBe(false);
    // First: interval applied (60), threshold reported as the cloud's copy lacks it, mode refused.
    expect(reports()).toEqual([
      { interval: 60, threshold: 5 },
      { threshold: null, led: true },
    ]);
    expect(JSON.parse(readFileSync(stateFile, 'utf8'))).toEqual({ interval: 60, led: true });
  }, 90_000);
});
