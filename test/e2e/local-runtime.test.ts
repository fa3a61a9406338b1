import { execFileSync } from 'node:child_process';
import { apiClient } from '../helpers/api-client';
import { startLocalStack } from '../helpers/local-stack';

/** PIDs of processes whose command line mentions `text` (DynamoDB Local runs with -dbPath <data dir>). */
const processesMentioning = (text: string) => {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
};

describe('npm start', () => {
  it('uses FLEETSTREAM_DEV_API_KEY, keeps data across restarts, and leaves no Java process behind', async () => {
    const devKey = `fsk_dev_${Date.now()}`;
    const first = await startLocalStack({ FLEETSTREAM_DEV_API_KEY: devKey }, []);
    const created = await apiClient(first.base_url, devKey).post(`/workspaces/${first.workspace_id}/devices`, { name: 'persisted' });
    expect(processesMentioning(first.dataDir).length).toBeGreaterThan(0);

    const exitCode = await first.stop();

    expect(exitCode).toBe(0);
    expect(processesMentioning(first.dataDir)).toEqual([]);

    const second = await startLocalStack({ FLEETSTREAM_DEV_API_KEY: devKey, FLEETSTREAM_DATA_DIR: first.dataDir }, []);
    try {
      const { body } = await apiClient(second.base_url, devKey).get(`/workspaces/${second.workspace_id}/devices/${created.body.device.id}`);

      expect(first.api_key).toBe(devKey);
      expect([second.account_id, second.workspace_id]).toEqual([first.account_id, first.workspace_id]);
      expect(body.device.name).toBe('persisted');
    } finally {
      await second.stop();
    }
  });

  it('prints READY with every field a client needs', async () => {
    const stack = await startLocalStack();
    try {
      expect(stack.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v3$/);
      expect(stack.storage_url).toMatch(/\/v3$/);
      expect(stack.account_id).toMatch(/^acc-/);
      expect(stack.workspace_id).toMatch(/^wks-/);
      expect((await apiClient(stack.base_url, stack.api_key).get('/workspaces')).status).toBe(200);
    } finally {
      await stack.stop();
    }
  });
});
