import type { Server } from 'node:http';
import { startApiGateway, type ApiGatewayOptions } from '../../../local/api-gateway';
import { ipRateRule, methodThrottles, tokenBucket } from '../../../local/api-gateway-throttling';
import { DEVICE_THROTTLE, FIREWALL, STAGE_THROTTLE } from '../../../local/runtime';
import { CONTEXT_DEFAULTS } from '../../../lib/stack-config';
import { fromAddress } from '../../helpers/from-address';

describe('a method’s throttle (a token bucket, as API Gateway’s)', () => {
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

  it('gives each method a bucket of its own: its own settings, or the stage’s default', () => {
    const admit = methodThrottles({ rateLimit: 1, burstLimit: 2 }, { 'POST /device/data': { rateLimit: 1, burstLimit: 4 } }, () => 0);

    const device = Array.from({ length: 5 }, () => admit('POST', '/device/data'));
    const workspaces = Array.from({ length: 3 }, () => admit('GET', '/workspaces'));
    const fleets = Array.from({ length: 3 }, () => admit('GET', '/workspaces/{workspaceId}/fleets'));

    expect(device).toEqual([true, true, true, true, false]);
    expect(workspaces).toEqual([true, true, false]);
    expect(fleets).toEqual([true, true, false]);
  });
});

describe('the firewall’s per-IP rate (WAF’s rate-based rule)', () => {
  it('blocks an address past its limit in the window, and no other address', () => {
    let now = 0;
    const passes = ipRateRule({ limit: 3, windowSeconds: 60 }, () => now);

    const first = Array.from({ length: 4 }, () => passes('127.0.0.2'));
    const other = passes('127.0.0.3');
    now = 59_999;
    const before = passes('127.0.0.2');
    now = 60_000; // the first second's requests leave the window; the block of 59 s is still in it
    const after = passes('127.0.0.2');

    expect(first).toEqual([true, true, true, false]);
    expect(other).toBe(true);
    expect(before).toBe(false);
    expect(after).toBe(true);
  });

  it('keeps an address blocked while it keeps sending past the limit: blocked requests count too', () => {
    let now = 0;
    const passes = ipRateRule({ limit: 3, windowSeconds: 5 }, () => now);

    const answers: boolean[] = [];
    for (let second = 0; second < 20; second++) {
      now = second * 1000;
      answers.push(passes('127.0.0.2')); // one a second: 5 in every 5-second window, over the limit of 3
    }

    expect(answers.slice(0, 3)).toEqual([true, true, true]);
    expect(answers.slice(3)).toEqual(Array(17).fill(false));
  });
});

describe('npm start’s firewall and throttles', () => {
  it('are the stack’s defaults', () => {
    expect(STAGE_THROTTLE).toEqual({ rateLimit: CONTEXT_DEFAULTS.throttleRateLimit, burstLimit: CONTEXT_DEFAULTS.throttleBurstLimit });
    expect(DEVICE_THROTTLE).toEqual({ rateLimit: CONTEXT_DEFAULTS.deviceThrottleRateLimit, burstLimit: CONTEXT_DEFAULTS.deviceThrottleBurstLimit });
    expect(FIREWALL).toEqual({ limit: CONTEXT_DEFAULTS.firewallIpRateLimit, windowSeconds: CONTEXT_DEFAULTS.firewallWindowSeconds });
  });
});

// Buckets that refill once in 100 s: a slow machine cannot give a token back during a test.
const SLOW = 0.01;

describe('the local gateway’s layers, outermost first', () => {
  let server: Server;
  let base: string;
  let handled: string[];

  const start = async (options: Partial<ApiGatewayOptions>) => {
    handled = [];
    server = await startApiGateway({
      port: 0,
      routes: [
        { method: 'GET', path: '/ping', handler: 'ping', auth: 'none' },
        { method: 'POST', path: '/device/data', handler: 'data', auth: 'none' },
      ],
      authorizers: {},
      loadHandler: async (name) => async () => {
        handled.push(name);
        return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"pong":true}' };
      },
      ...options,
    });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/v3`;
  };
  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers a throttled request 429 rate_limited with Retry-After in the error envelope, before any handler runs', async () => {
    await start({ throttle: { rateLimit: SLOW, burstLimit: 2 } });

    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await fromAddress('127.0.0.1')(`${base}/ping`));

    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[2].headers['retry-after']).toBe('1');
    expect(answers[2].body).toEqual({
      error: { code: 'rate_limited', message: expect.stringContaining('Retry-After'), details: [] },
      request_id: expect.any(String),
    });
    expect(handled).toHaveLength(2);
  });

  it('blocks an address past the firewall’s rate 403 forbidden before its method’s throttle, whatever X-Forwarded-For says', async () => {
    await start({ firewall: { limit: 3, windowSeconds: 60 }, throttle: { rateLimit: SLOW, burstLimit: 2 } });
    const flooder = fromAddress('127.0.0.2');

    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await flooder(`${base}/ping`, { headers: { 'x-forwarded-for': `10.0.0.${i}` } }));
    const other = await fromAddress('127.0.0.3')(`${base}/ping`);

    // Three pass the firewall (two admitted, one throttled), the next are blocked: they spend no token.
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429, 403, 403]);
    expect(answers[3].body).toEqual({
      error: { code: 'forbidden', message: expect.stringContaining('firewall'), details: [] },
      request_id: expect.any(String),
    });
    expect(other.status).toBe(429); // the method's bucket, spent by the flooder's first two
    expect(handled).toEqual(['ping', 'ping']);
  });

  it('keeps a method’s own throttle apart from the stage’s default: a flood on one leaves the other answered', async () => {
    await start({ throttle: { rateLimit: SLOW, burstLimit: 2 }, methodThrottles: { 'POST /device/data': { rateLimit: SLOW, burstLimit: 3 } } });
    const caller = fromAddress('127.0.0.1');

    const flood = [];
    for (let i = 0; i < 6; i++) flood.push(await caller(`${base}/device/data`, { method: 'POST', body: {} }));
    const ping = await caller(`${base}/ping`);

    expect(flood.map((a) => a.status)).toEqual([200, 200, 200, 429, 429, 429]);
    expect(ping.status).toBe(200);
  });
});
