import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCloudAssemblyRuntime, type CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { readAssembly, resourcesOfType, targetOf, type CfnTemplate } from '../../local/cloud-assembly/template';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { cloudAssemblyDir } from '../helpers/runtime';

/**
 * What the template forgets or gets wrong fails on the cloud-assembly runtime, as it would after a
 * deploy, while the routes it gets right keep working: a function without a variable its code
 * reads, a wrong handler string, a role without the table actions, a method without its invoke
 * permission, a streamed route deployed as buffered. One copy of the run's assembly carries all
 * five faults, each on another function.
 */
const byPath = (template: CfnTemplate, path: string) => {
  const found = Object.entries(template.Resources).find(([, r]) => r.Metadata?.['aws:cdk:path'] === path);
  if (!found) throw new Error(`no resource at ${path}`);
  return found;
};

/** The run's assembly, its template changed by `change`, in a new folder (assets linked, not copied). */
const faultyCopy = (dir: string, change: (template: CfnTemplate) => void) => {
  const { name, template } = readAssembly(dir);
  const copy = mkdtempSync(join(tmpdir(), 'fleetstream-faulty-'));
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith('asset.')) symlinkSync(join(dir, entry), join(copy, entry));
  }
  writeFileSync(join(copy, 'manifest.json'), readFileSync(join(dir, 'manifest.json')));
  change(template);
  writeFileSync(join(copy, `${name}.template.json`), JSON.stringify(template));
  return copy;
};

let runtime: CloudAssemblyRuntime;
let api: ApiClient;
const ids: Record<string, string> = {};

beforeAll(async () => {
  const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
    // 1. The workspaces function loses REGISTRY_TABLE (its code falls back to a table that does not exist).
    const [workspaces, workspacesFn] = byPath(template, 'Fleetstream/WorkspacesHandler/Resource');
    delete workspacesFn.Properties!.Environment.Variables.REGISTRY_TABLE;
    // 2. The FOTA function names a handler its bundle does not export.
    const [fota, fotaFn] = byPath(template, 'Fleetstream/FotaHandler/Resource');
    fotaFn.Properties!.Handler = 'index.fotaHandler';
    // 3. The fleets function's role loses its table statement.
    const [fleets, fleetsFn] = byPath(template, 'Fleetstream/FleetsHandler/Resource');
    for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
      if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(fleetsFn.Properties!.Role))) continue;
      policy.Properties!.PolicyDocument.Statement = policy.Properties!.PolicyDocument.Statement.filter((s: { Action: string[] }) => ![s.Action].flat().some((a) => a.startsWith('dynamodb:')));
    }
    // 4. GET /workspaces/{workspaceId}/devices loses its invoke permission.
    const [permission] = byPath(template, 'Fleetstream/Api/RestApi/Default/workspaces/{workspaceId}/devices/GET/ApiPermission.FleetstreamApiRestApiDC11F443.GET..workspaces.{workspaceId}.devices');
    delete template.Resources[permission];
    // 5. The storage query is deployed buffered although its handler streams.
    const [, query] = byPath(template, 'Fleetstream/Api/RestApi/Default/timeseries/{workspaceId}/data/GET/Resource');
    query.Properties!.Integration.ResponseTransferMode = 'BUFFERED';
    Object.assign(ids, { workspaces, fota, fleets });
  });
  runtime = (await startCloudAssemblyRuntime({ assemblyDir: dir })) as CloudAssemblyRuntime;
  api = apiClient(runtime.base_url, runtime.api_key);
});
afterAll(async () => {
  await runtime?.stop();
});

describe('a faulty template on the cloud-assembly runtime', () => {
  it('keeps serving the routes it gets right', async () => {
    expect((await api.get(`/workspaces/${runtime.workspace_id}/api-keys`)).status).toBe(200);
    expect((await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'ok' })).status).toBe(200);
  });

  it('fails a function whose variable is missing: its code reads another table', async () => {
    expect((await api.get('/workspaces')).status).toBe(500);
  });

  it('fails every call of a function whose handler string names nothing in its bundle', async () => {
    expect((await api.get('/devices/dev-00000000000000000000/fota')).status).toBe(502);
  });

  it('refuses, as AWS would, the table calls of a role without the table statement, and lists them', async () => {
    const { status } = await api.get(`/workspaces/${runtime.workspace_id}/fleets`);

    expect(status).toBe(500);
    expect(runtime.report().refused).toContainEqual(
      expect.objectContaining({ function: ids.fleets, action: 'dynamodb:GetItem', decision: 'implicit-deny', resource: expect.stringMatching(/:table\/Fleetstream-RegistryTable/) }),
    );
  });

  it('fails a method whose function API Gateway may not invoke', async () => {
    expect((await api.get(`/workspaces/${runtime.workspace_id}/devices`)).status).toBeGreaterThanOrEqual(500);
  });

  it('fails a streaming handler deployed behind a buffered integration', async () => {
    expect((await api.get(`/timeseries/${runtime.workspace_id}/data`)).status).toBeGreaterThanOrEqual(500);
  });
});

describe('a stream event source mapping whose role cannot read the stream', () => {
  it('fails the start, as CreateEventSourceMapping does, with the refused DynamoDB Streams call', async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      const [, consumer] = byPath(template, 'Fleetstream/RegistryStreamHandler/Resource');
      for (const [, policy] of resourcesOfType(template, 'AWS::IAM::Policy')) {
        if (!policy.Properties!.Roles.some((r: unknown) => targetOf(r) === targetOf(consumer.Properties!.Role))) continue;
        policy.Properties!.PolicyDocument.Statement = policy.Properties!.PolicyDocument.Statement.filter(
          (s: { Action: string | string[] }) => ![s.Action].flat().includes('dynamodb:DescribeStream'),
        );
      }
    });

    await expect(startCloudAssemblyRuntime({ assemblyDir: dir })).rejects.toThrow(
      /not authorized to perform: dynamodb:DescribeStream on resource: arn:aws:dynamodb:us-east-1:000000000000:table\/Fleetstream-RegistryTable\w+\/stream\//,
    );
  });

  it('refuses a filter operator the runtime cannot honour rather than passing every record', async () => {
    const dir = faultyCopy(cloudAssemblyDir()!, (template) => {
      const [, mapping] = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping').find(([, m]) => m.Properties!.FilterCriteria)!;
      mapping.Properties!.FilterCriteria.Filters[0].Pattern = JSON.stringify({ dynamodb: { Keys: { sk: { S: [{ cidr: '10.0.0.0/8' }] } } } });
    });

    await expect(startCloudAssemblyRuntime({ assemblyDir: dir })).rejects.toThrow(/cidr does not run here/);
  });
});
