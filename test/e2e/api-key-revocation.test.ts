import { until } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { startRuntime } from '../helpers/runtime';

// The API authorizer keeps an accepted key's answer for AUTHORIZER_CACHE_TTL_SECONDS (300 s here,
// far past every wait of this file): what these tests see is what the cache cannot hide.
let runtime: LocalRuntime;
let admin: ApiClient;
let ws: string;

beforeAll(async () => {
  runtime = await startRuntime({ authorizerCacheTtlSeconds: 300 });
  admin = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

const newKey = async (fields: Record<string, unknown> = {}) => {
  const { status, body } = await admin.post(`/workspaces/${ws}/api-keys`, { name: 'temporary', ...fields });
  expect(status).toBe(200);
  return { id: body.api_key.id as string, client: apiClient(runtime.base_url, body.key as string) };
};

describe('a revoked or expired API key', () => {
  it('creates no key and no device identity once revoked, though the cache still answers its reads', async () => {
    const device = (await admin.post(`/workspaces/${ws}/devices`, { name: 'target' })).body.device;
    const leaked = await newKey();
    expect((await leaked.client.get('/workspaces')).status).toBe(200); // its answer is now cached

    expect((await admin.delete(`/workspaces/${ws}/api-keys/${leaked.id}`)).status).toBe(200);
    const read = await leaked.client.get('/workspaces');
    const key = await leaked.client.post(`/workspaces/${ws}/api-keys`, { name: 'persistence' });
    const identity = await leaked.client.post(`/workspaces/${ws}/devices/${device.id}/identities`);

    // The remaining delay, documented: reads and other writes until the cache lets go.
    expect(read.status).toBe(200);
    expect([key.status, key.body.error.code, key.body.error.message]).toEqual([401, 'unauthorized', 'The API key has been revoked.']);
    expect([identity.status, identity.body.error.code]).toEqual([401, 'unauthorized']);
    const keys = (await admin.get(`/workspaces/${ws}/api-keys`)).body.api_keys as Array<{ name: string }>;
    expect(keys.filter((k) => k.name === 'persistence')).toEqual([]);
    expect((await admin.get(`/workspaces/${ws}/devices/${device.id}/identities`)).body.identities).toEqual([]);
  });

  it('stops working at its expires_at, whatever the cache TTL', async () => {
    const short = await newKey({ expires_at: new Date(Date.now() + 3000).toISOString() });
    expect((await short.client.get('/workspaces')).status).toBe(200);

    await until(async () => (await short.client.get('/workspaces')).status === 401, 'the expired key refused', 30_000);
  });
});
