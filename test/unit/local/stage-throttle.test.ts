import type { Server } from 'node:http';
import { startApiGateway, tokenBucket } from '../../../local/api-gateway';
import { STAGE_THROTTLE } from '../../../local/runtime';
import { CONTEXT_DEFAULTS } from '../../../lib/stack-config';

describe('the stage’s throttling (a token bucket, as API Gateway’s)', () => {
  it('holds burstLimit requests, then admits rateLimit a second', () => {
    let now = 0;
    const admit = tokenBucket({ rateLimit: 2, burstLimit: 3 }, () => now);

    const burst = Array.from({ length: 4 }, () => admit());
    now += 500; // one token back
    const later = [admit(), admit()];
    now += 10_000; // full again, never more than the burst
    const refilled = Array.from({ length: 4 }, () => admit());

    expect(burst).toEqual([true, true, true, false]);
    expect(later).toEqual([true, false]);
    expect(refilled).toEqual([true, true, true, false]);
  });

  it('is the stack’s default throttling under npm start', () => {
    expect(STAGE_THROTTLE).toEqual({ rateLimit: CONTEXT_DEFAULTS.throttleRateLimit, burstLimit: CONTEXT_DEFAULTS.throttleBurstLimit });
  });

  it('answers a throttled request 429 rate_limited with Retry-After in the error envelope, before any handler runs', async () => {
    let handled = 0;
    const server: Server = await startApiGateway({
      port: 0,
      routes: [{ method: 'GET', path: '/ping', handler: 'ping', auth: 'none' }],
      authorizers: {},
      throttle: { rateLimit: 1, burstLimit: 2 },
      loadHandler: async () => async () => {
        handled += 1;
        return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"pong":true}' };
      },
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v3/ping`;

      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await fetch(url));

      expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
      expect(answers[2].headers.get('retry-after')).toBe('1');
      expect(await answers[2].json()).toEqual({
        error: { code: 'rate_limited', message: expect.stringContaining('Retry-After'), details: [] },
        request_id: expect.any(String),
      });
      expect(handled).toBe(2);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
