import { request } from 'node:http';

/** An answer read off the wire: its status, lower-cased headers and JSON body (undefined when it is not JSON). */
export interface AddressedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/**
 * Sends requests from one loopback address (127.0.0.2, 127.0.0.3, …: every 127/8 address is the
 * loopback on Linux), so that a gateway listening on 127.0.0.1 sees them come from that address,
 * as WAF and API Gateway see a caller by its connection. Each request has a connection of its own.
 *
 * @example const anonymous = fromAddress('127.0.0.2'); const answer = await anonymous(`${base}/workspaces`);
 */
export const fromAddress =
  (localAddress: string) =>
  (url: string, options: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<AddressedAnswer> =>
    new Promise((resolve, reject) => {
      const body = options.body === undefined ? undefined : JSON.stringify(options.body);
      const req = request(
        url,
        {
          method: options.method ?? 'GET',
          localAddress,
          agent: false,
          headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode!, headers: res.headers, body: parsed });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
