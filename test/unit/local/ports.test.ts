import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort, holdPort, PortTakenError } from '../../../local/ports';

/** Where this system starts the ports it gives outgoing connections (Linux; 49152 elsewhere). */
const ephemeralStart = () => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 49_152;
  }
};

describe('ports the runtime chooses itself', () => {
  it('are held below the ephemeral range, where no outgoing connection can take them, each a different one', async () => {
    const held = await Promise.all(Array.from({ length: 20 }, () => holdPort()));
    try {
      const ports = held.map((h) => h.port);
      expect(new Set(ports).size).toBe(ports.length);
      for (const port of ports) expect(port).toBeGreaterThanOrEqual(10_000);
      for (const port of ports) expect(port).toBeLessThan(ephemeralStart());
    } finally {
      await Promise.all(held.map((h) => h.release()));
    }
  });

  it('gives a free port below the ephemeral range that a server can then listen on', async () => {
    const port = await freePort();
    expect(port).toBeLessThan(ephemeralStart());
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('names the variable that moves a port another listener has taken', async () => {
    const taken = await holdPort();
    try {
      await expect(holdPort(taken.port, 'MQTT_PORT')).rejects.toThrow(new PortTakenError(taken.port, 'MQTT_PORT').message);
    } finally {
      await taken.release();
    }
  });
});
