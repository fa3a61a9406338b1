import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

/** One POST the receiver got. */
export interface ReceivedPost {
  headers: IncomingHttpHeaders;
  raw: string;
  body: { batch_id: string; result: Array<Record<string, unknown> & { id: string }> };
  /** The status the receiver answered with (undefined: it never answered). */
  status?: number;
  /** When the whole POST had arrived (epoch ms). */
  receivedAt: number;
}

/** What the receiver does with a POST: answer with a status, never answer, or drop the connection (as if down). */
export type Behaviour = (post: Omit<ReceivedPost, 'status' | 'receivedAt'>) => number | 'hang' | 'reset';

export interface WebhookReceiver {
  url: string;
  posts: ReceivedPost[];
  /** Changes how later POSTs are answered. */
  behave: (behaviour: Behaviour) => void;
  /** Entries of the POSTs answered with 2xx. */
  accepted: () => Array<Record<string, unknown>>;
  stop: () => Promise<void>;
}

/**
 * Verifies a Fleetstream webhook signature as a receiver would (the snippet of docs/webhooks.md): HMAC-SHA256
 * of `${timestamp}.${raw body}` with the secret, compared in constant time with each `v1=` value,
 * and a timestamp no older than `toleranceSeconds`.
 */
export const verifySignature = (secret: string, headers: IncomingHttpHeaders, raw: string, toleranceSeconds = 300, now = Date.now()) => {
  const timestamp = Number(headers['x-fleetstream-timestamp']);
  if (!Number.isInteger(timestamp) || Math.abs(now / 1000 - timestamp) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${raw}`).digest();
  return String(headers['x-fleetstream-signature'] ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith('v1='))
    .some((part) => {
      const given = Buffer.from(part.slice(3), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
};

/** A real HTTP webhook receiver on 127.0.0.1 that records every POST; answers 200 unless told otherwise. */
export const startWebhookReceiver = async (behaviour: Behaviour = () => 200): Promise<WebhookReceiver> => {
  let behave = behaviour;
  const posts: ReceivedPost[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: ReceivedPost['body'];
      try {
        body = JSON.parse(raw);
      } catch {
        // As a receiver would: a body that is not JSON is refused, whatever the behaviour.
        posts.push({ headers: req.headers, raw, body: { batch_id: '', result: [] }, receivedAt: Date.now(), status: 400 });
        return void res.writeHead(400, { 'content-type': 'text/plain' }).end('not JSON');
      }
      const post: ReceivedPost = { headers: req.headers, raw, body, receivedAt: Date.now() };
      posts.push(post);
      const answer = behave(post);
      if (answer === 'hang') return;
      if (answer === 'reset') return void req.socket.destroy();
      post.status = answer;
      res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    posts,
    behave: (next) => {
      behave = next;
    },
    accepted: () => posts.filter((p) => p.status !== undefined && p.status < 300).flatMap((p) => p.body.result),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

/**
 * Receivers a test file starts as it goes, all stopped by `stopAll` (its `afterAll`):
 * `start` takes what {@link startWebhookReceiver} takes.
 */
export const webhookReceivers = () => {
  const started: WebhookReceiver[] = [];
  return {
    start: async (...args: Parameters<typeof startWebhookReceiver>) => {
      const receiver = await startWebhookReceiver(...args);
      started.push(receiver);
      return receiver;
    },
    stopAll: () => Promise.all(started.map((r) => r.stop())),
  };
};
