import { synthesize } from '../../local/cloud-assembly/synth';
import { startCloudAssemblyRuntime, type CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { readAssembly, resourcesOfType } from '../../local/cloud-assembly/template';
import { apiClient } from '../helpers/api-client';
import { sharedAssemblyEngine } from '../helpers/runtime';

/**
 * The `timestream` backend synthesizes, and its assembly runs here as far as an engine exists:
 * every bundle loads, and the routes that do not touch Timestream answer. Timestream has no local
 * engine (its query language has no emulator), so its calls are not run here; its requests are
 * checked with the SDK mocked in test/unit/timeseries.
 */
let dir: string;
let runtime: CloudAssemblyRuntime;

beforeAll(async () => {
  dir = await synthesize({ context: { timeseries: 'timestream' } });
  runtime = await startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), assemblyDir: dir });
}, 300_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('the timestream assembly', () => {
  it('declares the Timestream database and table and no time-series DynamoDB table', () => {
    const { template } = readAssembly(dir);

    expect(resourcesOfType(template, 'AWS::Timestream::Database')).toHaveLength(1);
    expect(resourcesOfType(template, 'AWS::Timestream::Table')).toHaveLength(1);
    expect(resourcesOfType(template, 'AWS::DynamoDB::Table')).toHaveLength(1);
  });

  it('loads every bundle and serves the management API', async () => {
    const api = apiClient(runtime.base_url, runtime.api_key);

    const { status } = await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'ts' });

    const { template } = readAssembly(dir);
    // Every function runs but BucketDeployment's, which only copies the console's files at deploy time.
    const deployOnly = [...new Set(resourcesOfType(template, 'Custom::CDKBucketDeployment').map(([, r]) => JSON.stringify(r.Properties?.ServiceToken)))];
    const served = resourcesOfType(template, 'AWS::Lambda::Function').filter(([id]) => !deployOnly.some((token) => token.includes(`"${id}"`)));
    expect(runtime.report().initErrors).toEqual([]);
    expect(deployOnly).toHaveLength(1);
    expect(runtime.report().functions.sort()).toEqual(served.map(([id]) => id).sort());
    expect(status).toBe(200);
  });
});
