import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from 'node:http';
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
 * The address of the package's own server, started on a free port of 127.0.0.1 when first asked
 * for: loading it (Express and its dependencies) costs a runtime's start more than half a second of
 * CPU, and most runs never send an e-mail.
 */
const lazyEngine = () => {
  let engine: Promise<{ url: string; server: Server }> | undefined;
  return {
    url: async () => {
      engine ??= serverFunction().then(async (startServer) => {
        const server = await startServer({ host: '127.0.0.1', port: 0 });
        return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
      });
      return (await engine).url;
    },
    stop: async () => {
      if (engine) await closed((await engine).server);
      engine = undefined;
    },
  };
};

/** Passes a request to the engine as it came, and its answer back; an engine that fails answers 502. */
const forwardTo = (engineUrl: () => Promise<string>) => (request: IncomingMessage, response: ServerResponse) => {
  const fail = (error: Error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`the local SES engine failed: ${error.message}`);
  };
  engineUrl().then((url) => {
    const upstream = httpRequest(new URL(request.url ?? '/', url), { method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', fail);
    request.pipe(upstream);
  }, fail);
};

/** Listens on 127.0.0.1:`port` (a free one when 0); a port that is taken fails with EADDRINUSE. */
const listen = (server: Server, port: number) =>
  new Promise<Server>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });

const closed = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

/**
 * Starts the local SES on 127.0.0.1:`port` (a free one when 0): aws-ses-v2-local's SES v2 API
 * (SendEmail and more) with any credentials, a page of the sent mails, and `GET /store` with them
 * as JSON. The port is this runtime's from the start; the package itself is loaded and started
 * behind it at the first request. Its mails are kept in this process's memory, shared by the
 * runtimes a process starts.
 */
export const startLocalSes = async (options: { port?: number } = {}): Promise<LocalSes> => {
  const engine = lazyEngine();
  const front = () => createServer(forwardTo(engine.url));
  let server: Server | undefined = await listen(front(), options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    pageUrl: `${endpoint}/`,
    stop: async () => {
      if (server) await closed(server);
      server = undefined;
      await engine.stop();
    },
    start: async () => {
      server ??= await listen(front(), port);
    },
  };
};
