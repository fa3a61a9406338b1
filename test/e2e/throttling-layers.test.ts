import type { LocalRuntime } from '../../local/runtime';
import { fromAddress, type AddressedAnswer } from '../helpers/from-address';
import { startRuntime } from '../helpers/runtime';

// Low numbers, so that a flood of a few hundred requests does what thousands would do to the
// defaults (docs/limits.md). The buckets refill once in 100 s: a slow machine gives no token back
// during a test. The device door's burst differs from the management API's, to tell them apart.
const FIREWALL = { limit: 30, windowSeconds: 60 };
const MANAGEMENT = { rateLimit: 0.01, burstLimit: 50 };
const DEVICE = { rateLimit: 0.01, burstLimit: 40 };

let runtime: LocalRuntime;
beforeAll(async () => {
  runtime = await startRuntime({ firewall: FIREWALL, stageThrottle: MANAGEMENT, deviceThrottle: DEVICE });
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

/** Sends `count` requests, `atOnce` at a time, and counts their answers by status. */
const flood = async (count: number, send: (i: number) => Promise<AddressedAnswer>, atOnce = 25) => {
  const statuses: Record<number, number> = {};
  for (let start = 0; start < count; start += atOnce) {
    const answers = await Promise.all(Array.from({ length: Math.min(atOnce, count - start) }, (_, i) => send(start + i)));
    for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  }
  return statuses;
};

/** A tenant's eight requests with its valid key, one after another, from an address of its own. */
const tenantRequests = async (address: string, path: string) => {
  const asTenant = fromAddress(address);
  const answers: AddressedAnswer[] = [];
  for (let i = 0; i < 8; i++) answers.push(await asTenant(`${runtime.base_url}${path}`, { headers: { 'x-api-key': runtime.api_key } }));
  return answers;
};

describe('the throttling layers: one caller cannot spend the API for everyone', () => {
  it('blocks an anonymous flood from one address at the firewall, and answers a tenant on another address', async () => {
    const anonymous = fromAddress('127.0.0.2');

    const statuses = await flood(300, () => anonymous(`${runtime.base_url}/workspaces`));
    const tenant = await tenantRequests('127.0.0.3', '/workspaces');

    // The firewall let the address's first 30 through to the authorizer (401) and blocked the rest:
    // 30 of the method's 50 tokens spent, none refused by the throttle.
    expect(statuses).toEqual({ 401: FIREWALL.limit, 403: 300 - FIREWALL.limit });
    expect(tenant.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(tenant[0].body.workspaces.map((w: { id: string }) => w.id)).toContain(runtime.workspace_id);
  });

  it('answers the blocked requests 403 forbidden in the error envelope', async () => {
    const blocked = await fromAddress('127.0.0.2')(`${runtime.base_url}/workspaces`, { headers: { 'x-api-key': runtime.api_key } });

    // Still blocked, even with a valid key: WAF looks at the address before any credential.
    expect(blocked.status).toBe(403);
    expect(blocked.body).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('firewall'), details: [] }, request_id: expect.any(String) });
  });

  it('keeps a flood on the device door, from addresses each under the firewall’s rate, off the management API', async () => {
    // 10 addresses × 20 requests without a device token: each under the firewall's 30.
    const statuses = await flood(200, (i) =>
      fromAddress(`127.0.1.${1 + (i % 10)}`)(`${runtime.base_url}/device/data`, { method: 'POST', body: { tag: 't', payload: 1 } }),
    );
    const tenant = await tenantRequests('127.0.0.4', `/workspaces/${runtime.workspace_id}`);

    // The device door's own burst (40) went to the flood, the rest refused 429 by its throttle.
    expect(statuses).toEqual({ 401: DEVICE.burstLimit, 429: 200 - DEVICE.burstLimit });
    expect(tenant.map((a) => a.status)).toEqual(Array(8).fill(200));
  });
});
