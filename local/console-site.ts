import { createReadStream, existsSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { consoleSecurityHeaders, originOf } from '../console/security-headers';
import type { ConsoleConfig } from '../console/src/lib/config';
import type { OutboxMessage } from './cognito-local';

export interface ConsoleSiteOptions {
  /** The built console (`console/dist`); served when it holds an index.html. */
  distDir: string;
  /** What `GET /config.json` answers: the console's own contract (console/src/lib/config.ts). */
  config: () => ConsoleConfig;
  /** The codes the local user pool would have e-mailed (`GET /local/outbox`). */
  outbox: () => OutboxMessage[];
  /**
   * What the console may call beyond the API and the user pool its config names: the local S3,
   * where the firmware page uploads through presigned URLs (the stack's policy names the bucket).
   */
  uploadOrigins?: () => string[];
}

// The types a Vite build emits, and what a browser must be told for each (a module script served
// as anything but JavaScript is refused).
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.wasm': 'application/wasm',
};

// Vite names what it builds under assets/ by content hash: a new build is a new name, so those
// may be kept forever; everything else (index.html above all) must be checked on every load.
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/**
 * The headers of the CloudFront distribution's response headers policy (lib/constructs/console-site.ts,
 * both from console/security-headers.ts), with the sources this runtime's console calls: the API and
 * the user pool of its config, and the local S3.
 */
const securityHeadersOf = (options: ConsoleSiteOptions) => {
  const config = options.config();
  const cognito = config.cognitoEndpoint ?? `https://cognito-idp.${config.region}.amazonaws.com`;
  return consoleSecurityHeaders([
    ...new Set([
      originOf(config.apiUrl),
      originOf(cognito),
      ...(config.liveUrl ? [originOf(config.liveUrl)] : []),
      ...(options.uploadOrigins?.() ?? []).map(originOf),
    ]),
  ]);
};

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fleetstream console not built</title></head>
<body><h1>The console is not built</h1>
<p>Run <code>npm run console:build</code> (it writes <code>console/dist/</code>), then reload this page.
The API is running at <code>/v3</code>.</p></body></html>
`;

type Security = Record<string, string>;

const send = (res: ServerResponse, security: Security, status: number, headers: Record<string, string>, body: string | Buffer, head: boolean) => {
  res.writeHead(status, { ...security, ...headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(head ? undefined : body);
};

const sendFile = (res: ServerResponse, security: Security, file: string, cacheControl: string, head: boolean) => {
  const type = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  res.writeHead(200, { ...security, 'content-type': type, 'content-length': String(statSync(file).size), 'cache-control': cacheControl });
  if (head) return void res.end();
  createReadStream(file).pipe(res);
};

/** The file a URL path names inside `root`, or undefined when it names none (or climbs out of it). */
const fileIn = (root: string, urlPath: string) => {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const file = resolve(root, `.${decoded}`);
  if (file !== root && !file.startsWith(root + sep)) return undefined;
  return existsSync(file) && statSync(file).isFile() ? file : undefined;
};

/**
 * Whether a request names this server itself in its Host: 127.0.0.1 or localhost at the port it
 * came in on. A page of another site whose name was rebound to 127.0.0.1 (DNS rebinding) sends its
 * own name, and so cannot read what only this machine's user should (the outbox's codes).
 */
const isOwnHost = (req: IncomingMessage) => {
  const host = (req.headers.host ?? '').toLowerCase();
  const port = req.socket.localPort;
  return host === `127.0.0.1:${port}` || host === `localhost:${port}`;
};

/**
 * Serves what lies outside the API's stage on the local runtime's port: `GET /config.json`, the
 * outbox of codes at `GET /local/outbox` (to requests whose Host is this server's own only), and the built console with a single-page app's fallback
 * (an unknown path without a file extension is the app's index.html, so its own routes reload).
 * Returns false for what it does not serve (the gateway then answers 404).
 */
export const consoleSite = (options: ConsoleSiteOptions) => {
  const root = resolve(options.distDir);
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return false;
    const head = method === 'HEAD';
    const security = securityHeadersOf(options);
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname === '/config.json') {
      send(res, security, 200, { 'content-type': 'application/json', 'cache-control': REVALIDATE }, JSON.stringify(options.config()), head);
      return true;
    }
    if (url.pathname === '/local/outbox') {
      if (!isOwnHost(req)) {
        const message = `The outbox answers requests to this console's own address (Host 127.0.0.1:${req.socket.localPort} or localhost:${req.socket.localPort}) only.`;
        send(
          res,
          security,
          403,
          { 'content-type': 'application/json', 'cache-control': 'no-store' },
          JSON.stringify({ error: { code: 'forbidden', message } }),
          head,
        );
        return true;
      }
      const to = url.searchParams.get('to')?.toLowerCase();
      const messages = options.outbox().filter((m) => !to || m.to.toLowerCase() === to);
      send(res, security, 200, { 'content-type': 'application/json', 'cache-control': 'no-store' }, JSON.stringify({ messages }), head);
      return true;
    }
    const index = join(root, 'index.html');
    if (!existsSync(index)) {
      send(res, security, 503, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }, NOT_BUILT, head);
      return true;
    }
    const file = url.pathname === '/' ? index : fileIn(root, url.pathname);
    if (file) {
      sendFile(res, security, file, file === index ? REVALIDATE : url.pathname.startsWith('/assets/') ? IMMUTABLE : REVALIDATE, head);
      return true;
    }
    // A missing file (with an extension) is a 404; any other path is one of the app's own routes.
    if (extname(url.pathname)) return false;
    sendFile(res, security, index, REVALIDATE, head);
    return true;
  };
};
