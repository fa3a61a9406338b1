import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The From address of alarm e-mails on the local runtimes: npm start's, and the `alarmSender` the
 * cloud-assembly runtime synthesizes the app with (the stack's is its deploy setting).
 */
export const LOCAL_ALARM_SENDER = 'alarms@fleetstream.local';

/** The local SES v2 engine: aws-ses-v2-local (npm), its API and its page of sent mails. */
export interface LocalSes {
  /** The value of AWS_ENDPOINT_URL_SESV2 for clients of this engine. */
  endpoint: string;
  /** The page that shows the sent mails (`/`); `GET /store` answers them as JSON. */
  pageUrl: string;
  /** Stops the engine; its port stays this runtime's until `start` (tests make SES unreachable so). */
  stop: () => Promise<void>;
  /** Starts it again on the same port, with the mails it had (they live in this process). */
  start: () => Promise<void>;
}

type StartServer = (config: { host: string; port: number }) => Promise<Server>;

/** The package's server function, a CommonJS default export however this module was loaded. */
const serverFunction = async (): Promise<StartServer> => {
  const mod = (await import('aws-ses-v2-local')) as unknown as { default: StartServer | { default: StartServer } };
  return typeof mod.default === 'function' ? mod.default : mod.default.default;
};

/**
 * Starts the package's server; a port that is taken fails with EADDRINUSE (the package resolves
 * with a server that does not listen: Express hands the listen error to its callback).
 */
const listen = async (startServer: StartServer, port: number) => {
  const server = await startServer({ host: '127.0.0.1', port });
  if (!server.address()) throw Object.assign(new Error(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`), { code: 'EADDRINUSE' });
  return server;
};

const closed = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

/**
 * Starts aws-ses-v2-local in this process on 127.0.0.1:`port` (a free one when 0): the SES v2 API
 * (SendEmail and more) with any credentials, a page of the sent mails, and `GET /store` with them
 * as JSON. Its mails are kept in this process's memory, shared by the runtimes a process starts.
 */
export const startLocalSes = async (options: { port?: number } = {}): Promise<LocalSes> => {
  const startServer = await serverFunction();
  let server: Server | undefined = await listen(startServer, options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    pageUrl: `${endpoint}/`,
    stop: async () => {
      if (server) await closed(server);
      server = undefined;
    },
    start: async () => {
      server ??= await listen(startServer, port);
    },
  };
};
