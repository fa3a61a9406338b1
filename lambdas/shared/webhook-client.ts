import { lookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { PostOutcome, WebhookPost } from '../domain/webhooks/forwarding';
import { hostOf, isPrivateAddress, isPrivateHost } from './public-addresses';

// Connections are kept between batches of one container: a receiver gets a POST per batch.
const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 64 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 64 }) };

const ERROR_MAX = 300;

/**
 * A DNS lookup that refuses every answer that is not a public address (private, loopback,
 * link-local, NAT64, 6to4, …: shared/public-addresses.ts), so that a public name that resolves
 * (or is rebound) to an internal address is never reached.
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const allowed = addresses.filter((a) => !isPrivateAddress(a.address));
    if (!allowed.length) {
      return callback(Object.assign(new Error(`${hostname} resolves only to private addresses`), { code: 'EPRIVATEADDRESS' }), '', 0);
    }
    if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
    callback(null, allowed[0].address, allowed[0].family);
  });
};

/**
 * Makes the forwarder's POST function: one request, answered with `ok` on 2xx, otherwise with what
 * went wrong; the whole exchange is bounded by `timeoutMs` (a slow receiver counts as failed, and
 * may still have received the POST: at least once). Redirects are not followed. Unless
 * `allowPrivate`, only public addresses are contacted.
 */
export const webhookPoster =
  (options: { timeoutMs: number; allowPrivate: boolean }) =>
  (post: WebhookPost): Promise<PostOutcome> =>
    new Promise((resolve) => {
      const url = new URL(post.url);
      // The creation's rules again (a URL stored before they were complete is refused here): an IP
      // literal is never looked up, so it is judged here; a name's answers by publicOnlyLookup.
      if (!options.allowPrivate && isPrivateHost(url.hostname)) return resolve({ ok: false, error: `${hostOf(url.hostname)} is a private address` });
      const secure = url.protocol === 'https:';
      const request = (secure ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        agent: secure ? agents.https : agents.http,
        headers: { ...post.headers, 'content-length': post.body.length },
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      });
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        response.resume(); // the answer's body is not read, but must be drained to reuse the connection
        response.on('end', () => resolve(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, error: `HTTP ${status}`, status }));
        response.on('error', (error) => resolve({ ok: false, error: error.message.slice(0, ERROR_MAX) }));
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        const timedOut = error.name === 'AbortError' || error.name === 'TimeoutError';
        resolve({
          ok: false,
          error: timedOut ? `no answer within ${options.timeoutMs} ms` : `${error.code ?? error.name}: ${error.message}`.slice(0, ERROR_MAX),
        });
      });
      request.end(post.body);
    });
