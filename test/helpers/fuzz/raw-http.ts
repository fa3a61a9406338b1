/**
 * HTTP requests sent exactly as written. fetch (WHATWG URL) rewrites paths — `%2e%2e` becomes a
 * parent step, malformed escapes are re-encoded — so the fuzz suite speaks node:http instead.
 */
import { Agent, request, type IncomingHttpHeaders } from 'node:http';

export interface RawRequest {
  method: string;
  /** Path and query as they go on the request line, already percent-encoded (or deliberately not). */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface RawResponse {
  /** 0 when no answer came (connection reset, timeout). */
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Why no answer came. */
  error?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Sends one request to `origin` (`http://127.0.0.1:port`) and reads the whole answer. */
export const sendRaw = (origin: string, req: RawRequest, timeoutMs = 30_000): Promise<RawResponse> => {
  const url = new URL(origin);
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: RawResponse) => {
      if (!settled) resolve(r);
      settled = true;
    };
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body) headers['content-length'] = req.body.length;
    let client: ReturnType<typeof request>;
    try {
      client = request({ host: url.hostname, port: url.port, method: req.method, path: req.target, headers, agent, insecureHTTPParser: false });
    } catch (error) {
      // node refuses some request lines itself (unescaped characters): the server never saw them
      throw new Error(`node:http cannot send ${req.method} ${req.target.slice(0, 200)}: ${(error as Error).message}`);
    }
    client.setTimeout(timeoutMs, () => client.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    client.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (error) =>
        done({ status: 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8'), error: `answer cut: ${error.message}` }),
      );
    });
    client.on('error', (error) => done({ status: 0, headers: {}, text: '', error: error.message }));
    client.end(req.body);
  });
};
