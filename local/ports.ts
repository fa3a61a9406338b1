import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A TCP port that is free on loopback right now, for a server in another process (DynamoDB Local,
 * fauxqs): chosen as `holdPort` chooses, below the ephemeral range, and let go at once.
 */
export const freePort = async () => {
  const held = await holdAny(0);
  await held.release();
  return held.port;
};

/** A port that another process listens on, named with the variable that moves it. */
export class PortTakenError extends Error {
  constructor(
    readonly port: number,
    readonly variable: string,
    options?: ErrorOptions,
  ) {
    super(`port ${port} is taken (another fleetstream start?): choose another with ${variable}=… (0 picks a free one)`, options);
    this.name = 'PortTakenError';
  }
}

/** Runs `start`, which listens on `port`; a port already taken fails naming `variable`, the setting that moves it. */
export const listeningOn = async <T>(variable: string, port: number | undefined, start: () => Promise<T>): Promise<T> => {
  try {
    return await start();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortTakenError(port ?? 0, variable, { cause: error });
    throw error;
  }
};

/**
 * A free port on 127.0.0.1, held by a listener until `release()`: functions must know the API's
 * address before the gateway can listen, and a port only probed (`freePort`) may meanwhile be
 * given to one of the runtime's own outgoing connections or to another process.
 */
export const holdPort = (port = 0, variable = 'PORT') => listeningOn(variable, port, () => holdAny(port));

const holdAny = async (port: number) => {
  if (port !== 0) return holdExactly(port);
  // A port of our own choosing, below the system's ephemeral range: a port the system chose (port 0)
  // comes from that range, which every outgoing connection draws from too, so that between the
  // release and its server's listen it was now and then taken by a connection (EADDRINUSE).
  const [low, high] = [10_000, ephemeralRangeStart()];
  for (let attempt = 1; ; attempt++) {
    try {
      return await holdExactly(low + Math.floor(Math.random() * (high - low)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 50) throw error;
    }
  }
};

const holdExactly = (port: number) =>
  new Promise<{ port: number; release: () => Promise<void> }>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const held = (server.address() as { port: number }).port;
      resolve({ port: held, release: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });

/** The first port of the range the system gives outgoing connections and port-0 listeners (Linux says; 49152 elsewhere, IANA's). */
const ephemeralRangeStart = () => {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return first > 10_001 ? first : 49_152;
  } catch {
    return 49_152;
  }
};

/** Polls `probe` until it resolves, or fails with the last error at the deadline. */
export const waitFor = async <T>(probe: () => Promise<T>, what: string, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await probe();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what} did not become ready within ${timeoutMs} ms`, { cause: error });
      await new Promise((r) => setTimeout(r, delay));
    }
  }
};

/** Polls `condition` until it holds, or fails naming `what` at the deadline. */
export const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000) =>
  waitFor(
    async () => {
      if (!(await condition())) throw new Error(`not yet: ${what}`);
    },
    what,
    timeoutMs,
  );
