/**
 * Issue 33's guards and webhook health on the local runtime: a fleet-wide scheduling's dry run
 * counts its targets and writes nothing; a failing webhook's status says since when and how many
 * times it failed, its delivery log holds each POST, and both recover after a success.
 */
import { until } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { startRuntime } from '../helpers/runtime';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  // Quick retries: a failing receiver is POSTed to about once a second.
  runtime = await startRuntime({
    queues: { forward: { visibilityTimeoutSeconds: 5, maxReceiveCount: 3, consumerTimeoutSeconds: 4, retry: { baseSeconds: 1, maxSeconds: 1 } } },
    webhookTimeoutMs: 1000,
  });
  api = apiClient(runtime.base_url, runtime.api_key);
}, 120_000);
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await runtime?.stop();
});

const newWorkspace = async (name: string) => (await api.post('/workspaces', { name })).body.workspace.id as string;
const newFleet = async (ws: string, name: string) => (await api.post(`/workspaces/${ws}/fleets`, { name })).body.fleet.id as string;
const newDevices = async (ws: string, fleet: string | undefined, count: number) => {
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await api.post(`/workspaces/${ws}/devices`, { name: `d${i}`, ...(fleet ? { fleet_id: fleet } : {}) })).body.device.id);
  return ids;
};

describe('the dry run of a fleet-wide scheduling', () => {
  it('counts the devices of the chosen fleets (every fleet when none) and writes no rollout, job or FOTA', async () => {
    const ws = await newWorkspace('dry run');
    const [a, b] = [await newFleet(ws, 'a'), await newFleet(ws, 'b')];
    const inA = await newDevices(ws, a, 2);
    await newDevices(ws, b, 3);
    await newDevices(ws, undefined, 1); // the default fleet

    const one = await api.post(`/workspaces/${ws}/jobs/reboot?fleet=${a}&dry_run=true`, { value: { now: true } });
    const two = await api.post(`/workspace/${ws}/jobs/reboot?fleet=${a}&fleet=${b}&dry_run=true`, { value: {} });
    const every = await api.post(`/workspaces/${ws}/jobs/reboot?dry_run=true`, { value: {} });
    const fota = await api.post(`/workspaces/${ws}/fota/fw/versions/1.0.0?fleet=${b}&dry_run=true`, {});

    expect(one).toMatchObject({ status: 200, body: { dry_run: true, targets: 2, fleet_ids: [a] } });
    expect(two.body).toEqual({ dry_run: true, targets: 5, fleet_ids: [a, b] });
    expect(every.body).toEqual({ dry_run: true, targets: 6, fleet_ids: null });
    expect(fota.body).toEqual({ dry_run: true, targets: 3, fleet_ids: [b] });
    expect((await api.get(`/workspaces/${ws}/rollouts`)).body.rollouts).toEqual([]);
    expect((await api.get(`/devices/${inA[0]}/jobs`)).body.jobs).toEqual([]);
    expect((await api.get(`/devices/${inA[0]}/fota`)).status).toBe(404);
  });

  it('refuses what the scheduling would refuse, and dry_run=false schedules', async () => {
    const ws = await newWorkspace('dry run refusals');
    const fleet = await newFleet(ws, 'f');
    await newDevices(ws, fleet, 1);
    await api.post(`/workspaces/${ws}/firmwares/fw/versions/2.0.0`, { size: 10, sha256: 'a'.repeat(64) });

    const unknownFleet = await api.post(`/workspaces/${ws}/jobs/j?fleet=flt-00000000000000000000&dry_run=true`, { value: {} });
    const notReady = await api.post(`/workspaces/${ws}/fota/fw/versions/2.0.0?dry_run=true`, {});
    const badFlag = await api.post(`/workspaces/${ws}/jobs/j?dry_run=yes`, { value: {} });
    const scheduled = await api.post(`/workspaces/${ws}/jobs/j?fleet=${fleet}&dry_run=false`, { value: {} });

    expect(unknownFleet.status).toBe(404);
    expect(notReady.status).toBe(409);
    expect(badFlag.status).toBe(400);
    expect(badFlag.body.error.details).toEqual([expect.objectContaining({ field: 'query.dry_run' })]);
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.job.rollout_id).toEqual(expect.any(String));
    expect((await api.get(`/workspaces/${ws}/rollouts`)).body.rollouts).toHaveLength(1);
  });
});

describe('a webhook’s health and delivery log', () => {
  it('counts consecutive failures since the first, logs each POST, and resets both after a success', async () => {
    const ws = await newWorkspace('dead webhook');
    const fleet = await newFleet(ws, 'f');
    await newDevices(ws, fleet, 2);
    const dead = await startWebhookReceiver(() => 503);
    receivers.push(dead);
    const id = (await api.post(`/workspaces/${ws}/integrations`, { name: 'dead', url: dead.url, data: false })).body.integration.id as string;
    const status = async () => (await api.get(`/workspaces/${ws}/integrations/${id}`)).body.integration.status;

    // two job events (a pack, or two): retried until they reach the DLQ, each retry a failed POST
    const scheduledAt = Date.now();
    await api.post(`/workspaces/${ws}/jobs/ping?fleet=${fleet}`, { value: {} });
    await until(async () => (await status()).consecutive_failures >= 2, 'two failed deliveries');
    const failing = await status();
    const listed = (await api.get(`/workspaces/${ws}/integrations`)).body.integrations[0].status;
    const log = (await api.get(`/workspaces/${ws}/integrations/${id}/deliveries?limit=2`)).body.deliveries;

    expect(failing.failing_since).toEqual(expect.any(String));
    // (concurrent batches may record their failures in either order: the first one written starts the run)
    expect(Date.parse(failing.failing_since)).toBeGreaterThanOrEqual(scheduledAt);
    expect(Date.parse(failing.failing_since)).toBeLessThanOrEqual(Date.now());
    expect(failing.last_error).toMatch(/503/);
    expect(listed.failing_since).toBe(failing.failing_since);
    expect(log).toHaveLength(2);
    for (const entry of log) {
      expect(entry).toEqual({
        at: expect.any(String),
        ok: false,
        status: 503,
        error: expect.stringMatching(/503/),
        duration_ms: expect.any(Number),
        entries: expect.any(Number),
        kind: 'events',
        batch_id: expect.any(String),
        test: false,
      });
    }
    expect(log.every((entry: { entries: number }) => entry.entries >= 1 && entry.entries <= 2)).toBe(true);
    expect(log[0].at >= log[1].at).toBe(true); // newest first

    dead.behave(() => 200);
    await api.post(`/workspaces/${ws}/jobs/pong?fleet=${fleet}`, { value: {} });
    await until(async () => (await status()).consecutive_failures === 0, 'a success after the failures');
    const healthy = await status();
    const after = (await api.get(`/workspaces/${ws}/integrations/${id}/deliveries`)).body.deliveries;

    expect(healthy.failing_since).toBeNull();
    expect(healthy.last_delivery_at).toEqual(expect.any(String));
    expect(after.some((d: { ok: boolean; status: number }) => d.ok && d.status === 200)).toBe(true);
    expect(after.filter((d: { ok: boolean }) => !d.ok).length).toBeGreaterThanOrEqual(2);
  });

  it('logs a test delivery as a test, and refuses a bad limit or another workspace’s webhook', async () => {
    const ws = await newWorkspace('test delivery log');
    const other = await newWorkspace('other');
    const hook = await startWebhookReceiver();
    receivers.push(hook);
    const id = (await api.post(`/workspaces/${ws}/integrations`, { url: hook.url })).body.integration.id as string;
    await api.post(`/workspaces/${ws}/integrations/${id}/test`);

    const log = await api.get(`/workspaces/${ws}/integrations/${id}/deliveries`);
    const tooMany = await api.get(`/workspaces/${ws}/integrations/${id}/deliveries?limit=101`);
    const elsewhere = await api.get(`/workspaces/${other}/integrations/${id}/deliveries`);

    expect(log.body.deliveries).toEqual([expect.objectContaining({ ok: true, status: 200, test: true, entries: 1, kind: 'data' })]);
    expect(tooMany.status).toBe(400);
    expect(elsewhere.status).toBe(404);
  });
});
