import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { until } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { itOnTheSources, startRuntime } from '../../helpers/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { fleetstreamArgs } from '../../helpers/cli';
// Not domain/events.ts: a module that reads the environment must not load before the runtime sets it.
import { FORWARD_PACK_MAX_BYTES, packForward } from '../../../lambdas/domain/webhooks/forward-pack';
import type { DataMessage } from '../../../lambdas/schemas/forward';
import { depthOf, receiveAll, releaseAll, sendRaw } from '../../helpers/sqs';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver';

const run = promisify(execFile);

let runtime: LocalRuntime;
let api: ApiClient;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  // Three quick receives, a second apart (the retry backoff), before a message goes to the DLQ.
  // Timeouts stay generous: a forwarder cut short on a loaded machine, or a healthy receiver's
  // answer timed out, would retry a delivery that succeeded (at least once, but not what is tested).
  runtime = await startRuntime({
    queues: { forward: { visibilityTimeoutSeconds: 60, maxReceiveCount: 3, consumerTimeoutSeconds: 30, retry: { baseSeconds: 1, maxSeconds: 1 } } },
  });
  api = apiClient(runtime.base_url, runtime.api_key);
}, 120_000);
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await runtime?.stop();
});

describe('the forward DLQ and its replay command', () => {
  it('parks what a receiver that never recovers missed in the DLQ, and the replay delivers it once the receiver is back', async () => {
    const devices: string[] = [];
    for (let i = 0; i < 10; i++) devices.push((await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: `d${i}` })).body.device.id);
    const [healthy, broken] = await Promise.all([startWebhookReceiver(), startWebhookReceiver(() => 503)]);
    receivers.push(healthy, broken);
    await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { url: healthy.url });
    await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { url: broken.url });

    // A value only the queues' ASCII encoding carries through fauxqs (and SQS), through the replay too.
    const value = { to: 3, note: 'v3 😀 \uFFFF' };
    await api.post(`/workspaces/${runtime.workspace_id}/jobs/update`, { value });
    // The 10 events travel packed (a message or two): all of them are in the DLQ once the healthy
    // receiver has them and the forward queue is empty.
    await until(async () => {
      const [forward, dlq] = await Promise.all([depthOf(runtime.queue_urls.forward), depthOf(runtime.queue_urls['forward-dlq'])]);
      return healthy.accepted().length >= 10 && forward.visible + forward.inFlight + forward.delayed === 0 && dlq.visible > 0;
    }, 'all 10 events in the DLQ');
    const parked = (await depthOf(runtime.queue_urls['forward-dlq'])).visible;
    broken.behave(() => 200);

    const { stdout, stderr } = await run(process.execPath, fleetstreamArgs('replay-dlq', ['--queue', runtime.queue_urls.forward]), { env: process.env });
    await until(() => broken.accepted().length >= 10, 'the replayed events delivered');

    expect(JSON.parse(stdout)).toEqual(
      expect.objectContaining({ moved: parked, left: 0, queue: runtime.queue_urls.forward, dlq: runtime.queue_urls['forward-dlq'] }),
    );
    expect(stderr).toMatch(new RegExp(`moved ${parked}`));
    expect(broken.accepted()).toHaveLength(10);
    expect(new Set(broken.accepted().map((e) => e.device_id))).toEqual(new Set(devices));
    expect(broken.accepted().map((e) => (e.payload as { value: unknown }).value)).toEqual(broken.accepted().map(() => value));
    // the healthy receiver got each event on the first attempt, and neither the retries nor the replay sent it again
    expect(
      healthy
        .accepted()
        .map((e) => e.device_id)
        .sort(),
    ).toEqual([...devices].sort());
    await until(async () => {
      const depth = await depthOf(runtime.queue_urls.forward);
      return depth.visible + depth.inFlight === 0;
    }, 'the forward queue drained');
    expect((await depthOf(runtime.queue_urls['forward-dlq'])).visible).toBe(0);
  });

  itOnTheSources(
    'replays full packs, ten of which are more than one SendMessageBatch call takes',
    async () => {
      const hook = await startWebhookReceiver();
      receivers.push(hook);
      // A workspace of its own: the forwarder relies on what it read of a workspace's integrations for
      // FORWARDER_CACHE_SECONDS, so one created just now in the busy workspace above could miss the replay.
      const workspaceId = (await api.post('/workspaces', { name: 'replayed packs' })).body.workspace.id as string;
      await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url, events: false, tags: ['replayed'] });
      const points = Array.from(
        { length: 1000 },
        (_, i): DataMessage => ({
          kind: 'data',
          workspace_id: workspaceId,
          fleet_id: '',
          device_id: 'dev-replayed',
          device_name: 'replayed',
          timestamp_device: new Date(1_700_000_000_000 + i).toISOString(),
          timestamp_in: new Date().toISOString(),
          tag: 'replayed',
          payload: { i, text: 'x'.repeat(2500) },
        }),
      );
      const packs = packForward(points);
      expect(packs.length).toBeGreaterThanOrEqual(10);
      expect(packs.slice(0, -1).every((p) => p.length > FORWARD_PACK_MAX_BYTES - 4096)).toBe(true);
      for (const pack of packs) await sendRaw(runtime.queue_urls['forward-dlq'], [pack]);

      const { stdout } = await run(process.execPath, fleetstreamArgs('replay-dlq', ['--queue', runtime.queue_urls.forward]), { env: process.env });
      await until(() => hook.accepted().length >= points.length, 'the replayed packs delivered');

      expect(JSON.parse(stdout)).toEqual(expect.objectContaining({ moved: packs.length, left: 0 }));
      expect(
        hook
          .accepted()
          .map((e) => (e.payload as { i: number }).i)
          .sort((a, b) => a - b),
      ).toEqual(points.map((_, i) => i));
      // A command started in a process of its own, then a thousand points delivered: a bound a loaded machine meets.
    },
    180_000,
  );

  it('replays from the API only what the webhook missed in its workspace, and puts another workspace’s messages back untouched', async () => {
    const hook = await startWebhookReceiver();
    receivers.push(hook);
    const workspaceId = (await api.post('/workspaces', { name: 'replayed by the API' })).body.workspace.id as string;
    const integration = (await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url, events: false })).body.integration;
    const point = (workspace: string, i: number): DataMessage => ({
      kind: 'data',
      workspace_id: workspace,
      fleet_id: '',
      device_id: 'dev-replayed',
      device_name: 'replayed',
      timestamp_device: new Date(1_700_000_000_000 + i).toISOString(),
      timestamp_in: new Date().toISOString(),
      tag: 'api',
      payload: { i },
    });
    // Another account's workspace (an ID no account here holds): its pack must stay in the DLQ as it is.
    const foreign = packForward([point('wks-000000000000foreign1', 99)]);
    const ours = packForward([0, 1, 2].map((i) => point(workspaceId, i)));
    await sendRaw(runtime.queue_urls['forward-dlq'], [...foreign, ...ours]);

    const answer = await api.post(`/workspaces/${workspaceId}/integrations/${integration.id}/replay`);
    await until(() => hook.accepted().length >= 3, 'the replayed points delivered');

    expect(answer.status).toBe(200);
    expect(answer.body.replay).toEqual({ moved: ours.length, examined: expect.any(Number), complete: true });
    expect(answer.body.replay.examined).toBeGreaterThanOrEqual(ours.length + foreign.length);
    expect(hook.accepted().map((e) => (e.payload as { i: number }).i)).toEqual([0, 1, 2]);
    // the foreign pack is back in the DLQ, visible at once and unchanged
    const left = await receiveAll(runtime.queue_urls['forward-dlq']);
    expect(left.map((m) => m.Body)).toContain(foreign[0]);
    await releaseAll(runtime.queue_urls['forward-dlq'], left);
    // the delivery log holds the replayed POST
    const log = await api.get(`/workspaces/${workspaceId}/integrations/${integration.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.deliveries[0]).toEqual(expect.objectContaining({ ok: true, status: 200, entries: 3, kind: 'data', test: false }));
  });

  itOnTheSources('refuses to replay for a disabled webhook, or another account’s, and moves nothing', async () => {
    const workspaceId = (await api.post('/workspaces', { name: 'disabled replay' })).body.workspace.id as string;
    const integration = (await api.post(`/workspaces/${workspaceId}/integrations`, { url: 'http://127.0.0.1:9/hook', enabled: false })).body.integration;
    const pack = packForward([
      {
        kind: 'data',
        workspace_id: workspaceId,
        fleet_id: '',
        device_id: 'dev-x',
        device_name: 'x',
        timestamp_device: new Date().toISOString(),
        timestamp_in: new Date().toISOString(),
        tag: 't',
        payload: 1,
      },
    ]);
    await sendRaw(runtime.queue_urls['forward-dlq'], pack);

    const refused = await api.post(`/workspaces/${workspaceId}/integrations/${integration.id}/replay`);
    const unknown = await api.post(`/workspaces/${workspaceId}/integrations/int-00000000000000000000/replay`);

    expect(refused.status).toBe(409);
    expect(unknown.status).toBe(404);
    const left = await receiveAll(runtime.queue_urls['forward-dlq']);
    expect(left.map((m) => m.Body)).toContain(pack[0]);
    await releaseAll(runtime.queue_urls['forward-dlq'], left);
  });
});
