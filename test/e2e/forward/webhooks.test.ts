import { until } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { startRuntime } from '../../helpers/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { depthOf } from '../../helpers/sqs';
import { verifySignature, webhookReceivers, type WebhookReceiver } from '../../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
const receivers = webhookReceivers();

beforeAll(async () => {
  // Second-long retries keep the test short; 20 receives make it all but impossible for a message
  // to fail every one of its attempts at a 50% failure rate plus an outage. The forwarder keeps 10 s
  // (the stack's is 30 s): on a loaded machine an invocation of 4 s timed out before it ended its
  // batch, again and again, and the messages waited out their visibility each time.
  runtime = await startRuntime({
    queues: {
      forward: { visibilityTimeoutSeconds: 12, maxReceiveCount: 20, consumerTimeoutSeconds: 10, retry: { baseSeconds: 1, maxSeconds: 1 } },
    },
    webhookTimeoutMs: 1000,
  });
  api = apiClient(runtime.base_url, runtime.api_key);
}, 120_000);
afterAll(async () => {
  await receivers.stopAll();
  await runtime?.stop();
});

const receiver = receivers.start;

/** A new workspace of the runtime's account with `n` devices in its default fleet. */
const workspaceWithDevices = async (n: number) => {
  const { body } = await api.post('/workspaces', { name: `ws-${Date.now()}` });
  const workspaceId: string = body.workspace.id;
  const devices: Array<{ id: string; fleet_id: string }> = [];
  for (let i = 0; i < n; i++) devices.push((await api.post(`/workspaces/${workspaceId}/devices`, { name: `d${i}` })).body.device);
  return { workspaceId, devices };
};

/** Distinct job events the receiver accepted: device and job name. */
const distinctJobs = (hook: WebhookReceiver) => new Set(hook.accepted().map((e) => `${e.device_id} ${(e.payload as { name: string }).name}`));

describe('webhooks on the local runtime', () => {
  it('delivers scheduled jobs and FOTA as signed c2d events in the documented format', async () => {
    const { workspaceId, devices } = await workspaceWithDevices(5);
    const hook = await receiver();
    const { body: created } = await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url, data: false });

    await api.post(`/workspaces/${workspaceId}/jobs/reboot`, { value: { delay: 1 } });
    await api.post(`/devices/${devices[0].id}/fota/fw/versions/2.0`);
    await until(() => hook.accepted().length >= 6, 'five job events and one fota event');

    const entries = hook.accepted();
    expect(hook.posts.every((p) => verifySignature(created.secret, p.headers, p.raw))).toBe(true);
    expect(hook.posts.every((p) => p.body.result.every((e, i) => e.id === String(i)))).toBe(true);
    const jobs = entries.filter((e) => e.type === 'job');
    expect(jobs.map((e) => e.device_id).sort()).toEqual(devices.map((d) => d.id).sort());
    expect(jobs[0]).toEqual({
      id: expect.any(String),
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/),
      workspace_id: workspaceId,
      fleet_id: devices[0].fleet_id,
      device_id: expect.any(String),
      type: 'job',
      direction: 'c2d',
      payload: { name: 'reboot', status: 'pending', scheduled_at: expect.any(String), value: { delay: 1 }, rollout_id: expect.stringMatching(/^rol-/) },
    });
    expect(entries.filter((e) => e.type === 'fota')).toEqual([
      expect.objectContaining({
        device_id: devices[0].id,
        direction: 'c2d',
        payload: expect.objectContaining({ value: { firmware_id: 'fw', firmware_version: '2.0' } }),
      }),
    ]);
    // The status is written once the batch's POSTs are answered: one packed POST may be all there is.
    const statusOf = async () => (await api.get(`/workspaces/${workspaceId}/integrations/${created.integration.id}`)).body.integration.status;
    await until(async () => (await statusOf()).last_delivery_at !== null, 'the delivery recorded in the status');
    expect(await statusOf()).toEqual(expect.objectContaining({ last_delivery_at: expect.any(String), consecutive_failures: 0 }));
  });

  it('delivers what a device does over the device API as signed d2c events: its token checks, status requests and job results', async () => {
    const { workspaceId, devices } = await workspaceWithDevices(1);
    const [device] = devices;
    const hook = await receiver();
    const { body: created } = await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url, data: false });
    const { credentials } = (await api.post(`/workspaces/${workspaceId}/devices/${device.id}/identities`)).body;
    await api.post(`/devices/${device.id}/jobs/reboot`, { value: { delay: 1 } });
    const client = deviceClient(runtime.base_url, await deviceToken(credentials));

    await client.get('/status');
    await client.post('/jobs/reboot/result', { result: { rebooted: true } });
    await deviceClient(runtime.base_url, await deviceToken(credentials, { expiresIn: -600 })).get('/status');
    await until(() => hook.accepted().filter((e) => e.direction === 'd2c').length >= 4, 'granted, status, job result and denied events');

    const d2c = hook.accepted().filter((e) => e.direction === 'd2c');
    expect(hook.posts.every((p) => verifySignature(created.secret, p.headers, p.raw))).toBe(true);
    expect(d2c.every((e) => e.device_id === device.id && e.workspace_id === workspaceId && e.fleet_id === device.fleet_id)).toBe(true);
    expect(d2c.filter((e) => e.type === 'authentication').map((e) => e.payload)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ verified: 'true', result: 'granted' }),
        expect.objectContaining({ verified: 'false', result: 'denied', error: 'token expired' }),
      ]),
    );
    expect(d2c.find((e) => e.type === 'status')?.payload).toEqual(expect.objectContaining({ pending_jobs: ['reboot'] }));
    expect(d2c.find((e) => e.type === 'job')?.payload).toEqual(expect.objectContaining({ name: 'reboot', status: 'done', result: { rebooted: true } }));
    expect(hook.accepted().find((e) => e.type === 'job' && e.direction === 'c2d')).toBeDefined();
  });

  it('delivers every data point and event a device publishes, in the documented format and signed', async () => {
    const { workspaceId, devices } = await workspaceWithDevices(1);
    const [device] = devices;
    const hook = await receiver();
    const { body: created } = await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url });
    const { credentials } = (await api.post(`/workspaces/${workspaceId}/devices/${device.id}/identities`)).body;
    const client = deviceClient(runtime.base_url, await deviceToken(credentials));
    const points = [
      { tag: 'weather', payload: { temp: 21.5 }, timestamp_device: '2026-02-01T10:00:00.000Z' },
      { tag: 'weather', payload: { temp: 21.4 }, timestamp_device: '2026-02-01T09:59:00.000Z' },
      { tag: 'power', payload: [1, 2, 3], timestamp_device: '2026-02-01T10:00:00.000Z' },
    ];

    const published = await client.post('/data', points);
    await client.post('/events', { type: 'os_info', payload: { version: '1.2.0' } });
    await until(
      () => hook.accepted().filter((e) => 'tag' in e).length >= 3 && hook.accepted().some((e) => e.type === 'os_info'),
      'three data points and the os_info event',
    );

    expect(published.status).toBe(202);
    expect(hook.posts.every((p) => verifySignature(created.secret, p.headers, p.raw))).toBe(true);
    const data = hook.posts.filter((p) => p.headers['x-fleetstream-kind'] === 'data').flatMap((p) => p.body.result);
    for (const post of hook.posts) expect(post.body.result.map((e) => e.id)).toEqual(post.body.result.map((_e, i) => String(i)));
    const byKey = (a: Record<string, unknown>, b: Record<string, unknown>) => `${a.tag} ${a.timestamp_device}`.localeCompare(`${b.tag} ${b.timestamp_device}`);
    expect(data.map(({ id: _id, timestamp_in: _in, ...entry }) => entry).sort(byKey)).toEqual(
      points.map((p) => ({ workspace_id: workspaceId, fleet_id: device.fleet_id, device_id: device.id, device_name: 'd0', ...p })).sort(byKey),
    );
    expect(Object.keys(data[0]).sort()).toEqual(
      ['id', 'workspace_id', 'fleet_id', 'device_id', 'device_name', 'timestamp_device', 'timestamp_in', 'tag', 'payload'].sort(),
    );
    expect(data.every((e) => e.timestamp_in === published.body.timestamp_in)).toBe(true);
    const events = hook.posts.filter((p) => p.headers['x-fleetstream-kind'] === 'events').flatMap((p) => p.body.result);
    expect(
      events
        .filter((e) => e.type === 'data')
        .map((e) => (e.payload as { tag: string }).tag)
        .sort(),
    ).toEqual(['power', 'weather', 'weather']);
    expect(events.find((e) => e.type === 'os_info')).toEqual({
      id: expect.any(String),
      ts: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$/),
      workspace_id: workspaceId,
      fleet_id: device.fleet_id,
      device_id: device.id,
      type: 'os_info',
      direction: 'd2c',
      payload: { version: '1.2.0' },
    });
  });

  it('gets every message at least once to a receiver that fails half the time and is down for a stretch', async () => {
    // 5 jobs on 12 devices: 60 events, several forward-queue messages (one or more per job).
    const jobs = ['a', 'b', 'c', 'd', 'e'];
    const { workspaceId, devices } = await workspaceWithDevices(12);
    const events = jobs.length * devices.length;
    let down = true;
    let answered = 0;
    // Down (connections reset), then 50% 500s at random; the first answer after the outage is a
    // 500 so that a failed POST is always exercised, however few POSTs the batching leaves.
    const hook = await receiver(() => (down ? 'reset' : answered++ === 0 || Math.random() < 0.5 ? 500 : 200));
    const { body: created } = await api.post(`/workspaces/${workspaceId}/integrations`, { url: hook.url });

    for (const name of jobs) await api.post(`/workspaces/${workspaceId}/jobs/${name}`, { value: {} });
    await until(() => hook.posts.length >= 3, 'a few attempts while the receiver is down');
    down = false;
    await until(() => distinctJobs(hook).size === events, `all ${events} job events accepted`);

    expect(distinctJobs(hook).size).toBe(events);
    expect(hook.accepted().length).toBeGreaterThanOrEqual(events);
    expect(hook.posts.some((p) => p.status === 500)).toBe(true);
    const { body } = await api.get(`/workspaces/${workspaceId}/integrations/${created.integration.id}`);
    expect(body.integration.status.last_error).not.toBeNull();
    await until(async () => {
      const depth = await depthOf(runtime.queue_urls.forward);
      return depth.visible + depth.inFlight === 0;
    }, 'the forward queue drained');
    expect((await depthOf(runtime.queue_urls['forward-dlq'])).visible).toBe(0);
  }, 240_000); // retries back off for real seconds: room for a loaded machine
});
