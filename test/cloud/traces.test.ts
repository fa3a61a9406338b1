import { startCloudAssemblyRuntime, type CloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { until } from '../../local/ports';
import { apiClient } from '../helpers/api-client';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { cloudAssemblyDir, sharedAssemblyEngine } from '../helpers/runtime';
import { webhookReceivers } from '../helpers/webhook-receiver';

// The data path's traces (DESIGN §13): the template deploys the ingest and forwarder Lambdas with
// X-Ray active tracing, and their Powertools Tracer sends what they did to the daemon Lambda runs
// beside them (the runtime stands one in for each, and gives each invocation its trace header).

let runtime: CloudAssemblyRuntime;
const receivers = webhookReceivers();
beforeAll(async () => {
  runtime = await startCloudAssemblyRuntime({ ...sharedAssemblyEngine(), functionsOnFirstUse: true, assemblyDir: cloudAssemblyDir() });
}, 300_000);
afterAll(async () => {
  await receivers.stopAll();
  await runtime?.stop();
});

describe('traces of the data path', () => {
  it('has the ingest and forwarder Lambdas send their handler’s segment and their calls to X-Ray, and no other function', async () => {
    const api = apiClient(runtime.base_url, runtime.api_key);
    const receiver = await receivers.start();
    await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { url: receiver.url });
    const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'traced' })).body.device;
    const { credentials } = (await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`)).body;

    await deviceClient(runtime.base_url, await deviceToken(credentials)).post('/data', [{ tag: 't', payload: 1 }]);
    await until(() => receiver.accepted().length >= 2, 'the point and its data event at the receiver');

    const of = (prefix: string) => Object.entries(runtime.report().traces).find(([id]) => id.startsWith(prefix))?.[1];
    // Each subsegment is sent when it closes: the calls' during the invocation, the handler's as it
    // ends, so the handler's may come last on a loaded machine. Waited for, then checked below.
    const HANDLER = '## index.handler';
    await until(() => ['IngestHandler', 'ForwarderHandler'].every((fn) => of(fn)?.names.includes(HANDLER)), 'the handler segments of both');

    expect(
      Object.keys(runtime.report().traces)
        .map((id) => id.replace(/[0-9A-F]{8}$/, ''))
        .sort(),
    ).toEqual(['ForwarderHandler', 'IngestHandler']);
    // The handler's subsegment (Powertools' captureLambdaHandler) and the registry's calls (captureAWSv3Client).
    for (const fn of ['IngestHandler', 'ForwarderHandler']) expect(of(fn)!.names).toEqual(expect.arrayContaining([HANDLER, 'DynamoDB']));
  });
});
