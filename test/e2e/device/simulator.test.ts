import { Aedes } from 'aedes';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
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
