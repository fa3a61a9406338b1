import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiClient } from '../helpers/api-client';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';

// What a handler's container counted and had not written yet is written when the container ends:
// on the assembly, the bundles register the shutdown extension and the runtime ends each container
// with SIGTERM as Lambda does; on the sources, `npm start` ends its handlers so as it stops. The
// stack is stopped and started again on the same data folder, and the usage read back.

const stacks: LocalStack[] = [];
afterAll(async () => {
  for (const stack of stacks) await stack.stop();
});

const start = async (dataDir: string) => {
  // Every container writes its first count at once and keeps the rest for an hour: only its end writes them.
  const stack = await startLocalStack({ FLEETSTREAM_DATA_DIR: dataDir, USAGE_FLUSH_SECONDS: '3600' }, [], { readyTimeoutMs: 170_000 });
  stacks.push(stack);
  return stack;
};

const today = () => new Date().toISOString().slice(0, 10);

it('writes the API requests a container kept when it ends, and loses none across a restart', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-'));
  const first = await start(dataDir);
  const api = apiClient(first.base_url, first.api_key);
  const usageOf = async (client: typeof api) => (await client.get(`/workspaces/${first.workspace_id}/usage?start=${today()}&end=${today()}`)).body.usage.totals;

  for (let i = 0; i < 5; i++) expect((await api.get(`/workspaces/${first.workspace_id}/fleets`)).status).toBe(200);
  // The lists' container wrote its first request and keeps four; the usage read is counted after its answer.
  const kept = await usageOf(api);
  const code = await first.stop();
  const again = await start(dataDir);
  const after = await usageOf(apiClient(again.base_url, again.api_key));

  expect(kept.api_requests).toBe(1);
  expect(code).toBe(0);
  expect(after.api_requests).toBe(5 + 1);
}, 400_000);
