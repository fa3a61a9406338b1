/**
 * Rollouts and job/FOTA states end to end, over HTTPS and MQTT, on one runtime whose sweep runs
 * every second (in the e2e-cloud project: the template's bundles, wiring and IAM). A staged
 * rollout is started first and checked last, so that its minute between releases passes while the
 * other tests run.
 */
import type { LocalRuntime } from '../../local/runtime';
import { until } from '../../local/ports';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceToken } from '../helpers/device-token';
import { connectDevice, type Credentials, type MqttDevice } from '../helpers/mqtt-device';
import { itOnTheSources, startRuntime } from '../helpers/runtime';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

let runtime: LocalRuntime;
let api: ApiClient;
let ws: string;
let hook: WebhookReceiver;
const connections: MqttDevice[] = [];

/** The staged rollout: 25 devices, 10 a minute. */
let staged: { id: string; fleet: string; devices: string[]; answeredAt: number };

const newFleet = async (name: string) => (await api.post(`/workspaces/${ws}/fleets`, { name })).body.fleet.id as string;
const newDevices = async (fleet: string, count: number) => {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await api.post(`/workspaces/${ws}/devices`, { name: `d${i}`, fleet_id: fleet })).body.device.id);
  return ids.sort();
};
const credentialsOf = async (device: string) => (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials as Credentials;
const rollout = async (id: string) => (await api.get(`/workspaces/${ws}/rollouts/${id}`)).body.rollout;
const rolloutWhen = async (id: string, check: (r: any) => boolean, what: string, timeout = 30_000) => {
  let last: any;
  try {
    await until(async () => check((last = await rollout(id))), what, timeout);
  } catch (error) {
    throw new Error(`${(error as Error).message}; the rollout: ${JSON.stringify(last)}`);
  }
  return last;
};
const devicesIn = async (id: string, status: string) =>
  (await api.get(`/workspaces/${ws}/rollouts/${id}/devices?status=${status}`)).body.devices as Array<{
    device_id: string;
    status: string;
    updated_at: string;
    result?: any;
    message?: string;
  }>;

beforeAll(async () => {
  runtime = await startRuntime({ sweepIntervalSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
  hook = await startWebhookReceiver();
  expect((await api.post(`/workspaces/${ws}/integrations`, { name: 'events', url: hook.url, data: false, events: true })).status).toBe(200);

  const fleet = await newFleet('staged');
  const devices = await newDevices(fleet, 25);
  const answer = await api.post(`/workspaces/${ws}/jobs/stage?fleet=${fleet}`, { value: { to: '2.0' }, rollout: { max_per_minute: 10 } });
  expect(answer.status).toBe(200);
  staged = { id: answer.body.job.rollout_id, fleet, devices, answeredAt: Date.now() };
}, 180_000);
afterAll(async () => {
  for (const c of connections) c.client.end(true);
  await hook?.stop();
  await runtime?.stop();
});

describe('a staged rollout (max_per_minute)', () => {
  it('answers the v3 shape plus rollout_id, and counts 10 pending and 15 queued, adding up to the total from the first read', async () => {
    const first = await rollout(staged.id);
    expect(Object.values(first.counts).reduce((a: number, b) => a + (b as number), 0)).toBe(first.total);

    const counted = await rolloutWhen(staged.id, (r) => r.total === 25, 'all 25 counted');
    expect(counted).toMatchObject({
      kind: 'job',
      job_name: 'stage',
      value: { to: '2.0' },
      fleets: [staged.fleet],
      status: 'in_progress',
      settings: { max_per_minute: 10, timeout_seconds: null, abort: null },
    });
    expect(counted.counts).toEqual({ queued: 15, pending: 10, in_progress: 0, done: 0, failed: 0, timed_out: 0, canceled: 0 });
    // The next minute's release (additive fields): a minute after the first; no abort.
    expect(Date.parse(counted.next_release_at) - Date.parse(counted.created_at)).toBe(60_000);
    expect(counted.abort_reason).toBeNull();
    expect((await devicesIn(staged.id, 'pending')).map((d) => d.device_id).sort()).toEqual(staged.devices.slice(0, 10));
  });

  itOnTheSources('keeps a queued device’s job out of its status (not delivered) and out of its pending jobs', async () => {
    const queued = staged.devices[24];
    const token = await deviceToken(await credentialsOf(queued));
    const status = await fetch(`${runtime.base_url}/device/status`, { headers: { authorization: `Bearer ${token}` } });

    expect(((await status.json()) as { jobs: unknown[] }).jobs).toEqual([]);
    expect((await api.get(`/devices/${queued}/jobs?status=queued`)).body.jobs).toEqual([
      expect.objectContaining({ name: 'stage', status: 'queued', rollout_id: staged.id }),
    ]);
    expect((await api.get(`/devices/${queued}/jobs?status=pending`)).body.jobs).toEqual([]);
  });
});

describe('a rollout that aborts on failures, over MQTT', () => {
  it('publishes the first minute’s jobs to the connected devices, counts their answers (an error is failed), aborts at the threshold and cancels the rest', async () => {
    const fleet = await newFleet('abort');
    const devices = await newDevices(fleet, 6);
    const first = devices.slice(0, 3);
    for (const id of first) connections.push(await connectDevice(await credentialsOf(id)));
    await until(
      async () => {
        for (const id of first) if (!(await api.get(`/workspaces/${ws}/devices/${id}`)).body.device.connected) return false;
        return true;
      },
      'the devices connected',
      30_000,
    );

    const answer = await api.post(`/workspaces/${ws}/jobs/flash?fleet=${fleet}`, {
      value: { image: 'v2' },
      rollout: { max_per_minute: 3, abort: { failure_percentage: 50, min_finished: 3 } },
    });
    const id = answer.body.job.rollout_id as string;
    for (const c of connections.slice(-3)) await c.next('@flash');
    const [a, b, c] = connections.slice(-3);
    await a.up('@flash', { error: 'flash write failed' });
    await b.up('@flash', { error: 'flash write failed' });
    await c.up('@flash', { written: true });

    const aborted = await rolloutWhen(id, (r) => r.status === 'aborted' && r.counts.canceled === 3, 'aborted, the queued ones canceled');
    expect(aborted.counts).toMatchObject({ failed: 2, done: 1, canceled: 3, queued: 0, pending: 0 });
    expect(aborted.total).toBe(6);
    const failed = await devicesIn(id, 'failed');
    expect(failed.map((d) => d.result)).toEqual([{ error: 'flash write failed' }, { error: 'flash write failed' }]);
    // Why it aborted: the rule and the counts it fired on.
    expect(aborted.abort_reason).toEqual({
      rule: { failure_percentage: 50, min_finished: 3 },
      finished: 3,
      failed: 2,
      timed_out: 0,
      failure_percentage: 66.67,
      message:
        "2 of the 3 devices that had ended failed or timed out (2 failed, 0 timed out: 66.67 %), reaching the abort rule's 50 % once at least 3 have ended.",
      at: expect.any(String),
    });
    expect(aborted.next_release_at).toBeNull();
    // The devices that ended badly, state by state in the order asked, by name, a page at a time.
    const names = new Map<string, string>();
    for (const d of devices) names.set(d, (await api.get(`/workspaces/${ws}/devices/${d}`)).body.device.name);
    const page = await api.get(`/workspaces/${ws}/rollouts/${id}/devices?status=failed&status=canceled&limit=4`);
    const rest = await api.get(`/workspaces/${ws}/rollouts/${id}/devices?status=failed&status=canceled&limit=4&cursor=${page.body.next}`);
    const bad = [...page.body.devices, ...rest.body.devices] as Array<{ device_id: string; device_name: string; status: string }>;
    expect(rest.body.next).toBeNull();
    expect(bad.map((d) => d.status)).toEqual(['failed', 'failed', 'canceled', 'canceled', 'canceled']);
    expect(bad.map((d) => d.device_name)).toEqual(bad.map((d) => names.get(d.device_id)));
    expect(
      bad
        .slice(2)
        .map((d) => d.device_id)
        .sort(),
    ).toEqual(devices.slice(3));
    // A state the API does not know is a 400 naming it, as before.
    const refused = await api.get(`/workspaces/${ws}/rollouts/${id}/devices?status=failed&status=lost`);
    expect([refused.status, refused.body.error.details[0].field]).toEqual([400, expect.stringMatching(/^query\.status/)]);
    expect((await api.get(`/devices/${devices[5]}/jobs/flash`)).body.job).toMatchObject({ status: 'canceled', rollout_id: id });

    // A late answer on MQTT is recorded as a job event; the job stays as it ended.
    await a.up('@flash', { written: true });
    await until(
      () => hook.accepted().some((e) => e.device_id === first[0] && e.type === 'job' && (e.payload as any).late_result?.written === true),
      'the late result’s event',
      30_000,
    );
    expect((await api.get(`/devices/${first[0]}/jobs/flash`)).body.job.status).toBe('failed');
    await until(() => hook.accepted().filter((e) => e.device_id === devices[5] && e.type === 'job').length >= 2, 'queued and canceled events', 30_000);
    expect(
      hook
        .accepted()
        .filter((e) => e.device_id === devices[5] && e.type === 'job')
        .map((e) => [(e.payload as any).status, e.direction]),
    ).toEqual([
      ['queued', 'c2d'],
      ['canceled', 'c2d'],
    ]);
  }, 150_000); // its waits' own bounds (30 s each) add up past the suite's 60 s on a loaded machine

  itOnTheSources('takes a full agent’s FOTA progress and outcome on @fota', async () => {
    const [device] = await newDevices(await newFleet('fota-mqtt'), 1);
    const agent = await connectDevice(await credentialsOf(device));
    connections.push(agent);
    expect((await api.post(`/devices/${device}/fota/fw/versions/3.1`)).status).toBe(200);

    await agent.up('@fota', { fw_version: '3.1', result: 'in_progress', msg: 'downloading 40%' });
    await until(async () => (await api.get(`/devices/${device}/fota`)).body.fota.status === 'in_progress', 'in progress', 30_000);
    expect((await api.get(`/devices/${device}/fota`)).body.fota).toMatchObject({ status: 'in_progress', message: 'downloading 40%' });
    await agent.up('@fota', { fw_version: '3.1', result: 'fail', msg: 'bad signature' });
    await until(async () => (await api.get(`/devices/${device}/fota`)).body.fota.status === 'failed', 'failed', 30_000);
    expect((await api.get(`/devices/${device}/fota`)).body.fota).toMatchObject({
      status: 'failed',
      message: 'bad signature',
      completed_at: expect.any(String),
    });
  });
});

describe('pause, resume and cancel over HTTPS', () => {
  it('pauses (twice is fine), resumes, cancels (the sweep cancels its queued and pending devices), then answers 409', async () => {
    const fleet = await newFleet('control');
    await newDevices(fleet, 5);
    const id = (await api.post(`/workspaces/${ws}/jobs/control?fleet=${fleet}`, { value: {}, rollout: { max_per_minute: 2 } })).body.job.rollout_id as string;
    const path = `/workspaces/${ws}/rollouts/${id}`;

    expect((await rollout(id)).next_release_at).toEqual(expect.any(String));
    const paused = (await api.post(`${path}/pause`)).body.rollout;
    // Paused, nothing is released: no next release.
    expect([paused.status, paused.next_release_at]).toEqual(['paused', null]);
    expect((await api.post(`${path}/pause`)).body.rollout.status).toBe('paused');
    expect((await api.post(`${path}/resume`)).body.rollout.status).toBe('in_progress');
    const canceled = await api.post(`${path}/cancel`);
    expect([canceled.status, canceled.body.rollout.status]).toEqual([200, 'canceled']);

    const ended = await rolloutWhen(id, (r) => r.counts.canceled === 5, 'every device canceled');
    expect(ended.counts).toMatchObject({ queued: 0, pending: 0, canceled: 5 });
    for (const action of ['pause', 'resume', 'cancel']) {
      const refused = await api.post(`${path}/${action}`);
      expect([refused.status, refused.body.error.code]).toEqual([409, 'conflict']);
    }
  });

  itOnTheSources('lists the workspace’s rollouts newest first, paged', async () => {
    const page = await api.get(`/workspaces/${ws}/rollouts?limit=2`);
    const rest = await api.get(`/workspaces/${ws}/rollouts?limit=100&cursor=${page.body.next}`);
    const all = [...page.body.rollouts, ...rest.body.rollouts];

    expect(all.map((r: { created_at: string }) => r.created_at)).toEqual(
      all
        .map((r: { created_at: string }) => r.created_at)
        .sort()
        .reverse(),
    );
    expect(all.map((r: { id: string }) => r.id)).toContain(staged.id);
    expect(rest.body.next).toBeNull();
  });
});

describe('a later scheduling of the same job', () => {
  itOnTheSources('replaces a rollout’s jobs: the earlier rollout counts them canceled, completes, and still lists them', async () => {
    const fleet = await newFleet('replaced');
    const devices = await newDevices(fleet, 3);
    const first = (await api.post(`/workspaces/${ws}/jobs/again?fleet=${fleet}`, { value: { n: 1 } })).body.job.rollout_id as string;
    const second = (await api.post(`/workspaces/${ws}/jobs/again?fleet=${fleet}`, { value: { n: 2 } })).body.job.rollout_id as string;

    const replaced = await rolloutWhen(first, (r) => r.status === 'completed', 'the first rollout completed');
    expect([replaced.total, replaced.counts]).toEqual([3, { queued: 0, pending: 0, in_progress: 0, done: 0, failed: 0, timed_out: 0, canceled: 3 }]);
    await until(async () => (await devicesIn(first, 'canceled')).length === 3, 'the replaced jobs listed', 30_000);
    expect((await devicesIn(first, 'canceled')).map((d) => d.device_id).sort()).toEqual(devices);
    expect((await rollout(second)).counts).toMatchObject({ pending: 3, canceled: 0 });
    expect((await api.get(`/devices/${devices[0]}/jobs/again`)).body.job).toMatchObject({ status: 'pending', value: { n: 2 }, rollout_id: second });
  });
});

describe('one device’s job and FOTA', () => {
  itOnTheSources('times out a job and a FOTA with timeout_seconds within seconds (the sweep runs every second here)', async () => {
    const [device] = await newDevices(await newFleet('slow'), 1);
    expect((await api.post(`/devices/${device}/jobs/slow`, { value: {}, timeout_seconds: 1 })).body.job).toMatchObject({
      status: 'pending',
      timeout_seconds: 1,
    });
    expect((await api.post(`/devices/${device}/fota/fw/versions/9`, { timeout_seconds: 1 })).body.fota).toMatchObject({
      status: 'pending',
      timeout_seconds: 1,
    });

    await until(async () => (await api.get(`/devices/${device}/jobs/slow`)).body.job.status === 'timed_out', 'the job timed out', 30_000);
    await until(async () => (await api.get(`/devices/${device}/fota`)).body.fota.status === 'timed_out', 'the FOTA timed out', 30_000);
    const token = await deviceToken(await credentialsOf(device));
    const late = await fetch(`${runtime.base_url}/device/jobs/slow/result`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"result":{}}',
    });
    expect(late.status).toBe(409);
  });

  itOnTheSources('cancels a job and a FOTA (they leave the device’s status), then answers 409; unknown ones are 404', async () => {
    const [device] = await newDevices(await newFleet('cancel'), 1);
    await api.post(`/devices/${device}/jobs/reboot`, { value: {} });
    await api.post(`/devices/${device}/fota/fw/versions/2`);
    const token = await deviceToken(await credentialsOf(device));
    const status = async () =>
      (await (await fetch(`${runtime.base_url}/device/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        jobs: unknown[];
        fota: unknown;
      };
    expect((await status()).jobs).toHaveLength(1);

    expect((await api.delete(`/devices/${device}/jobs/reboot`)).body.job).toMatchObject({ status: 'canceled' });
    expect((await api.delete(`/devices/${device}/fota`)).body.fota).toMatchObject({ status: 'canceled' });
    expect(await status()).toEqual({ jobs: [], fota: null, state: { desired: {}, version: 0 } });
    expect((await api.delete(`/devices/${device}/jobs/reboot`)).status).toBe(409);
    expect((await api.delete(`/devices/${device}/fota`)).status).toBe(409);
    expect((await api.delete(`/devices/${device}/jobs/never`)).status).toBe(404);
    expect((await api.get(`/devices/${device}/jobs?status=canceled`)).body.jobs.map((j: { name: string }) => j.name)).toEqual(['reboot']);
  });

  itOnTheSources('takes FOTA progress and a failed job over HTTPS', async () => {
    const [device] = await newDevices(await newFleet('https'), 1);
    await api.post(`/devices/${device}/jobs/check`, { value: {} });
    await api.post(`/devices/${device}/fota/fw/versions/5`);
    const token = await deviceToken(await credentialsOf(device));
    const post = (path: string, body: unknown) =>
      fetch(`${runtime.base_url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

    expect((await post('/device/fota/result', { status: 'in_progress', message: 'installing' })).body.fota).toMatchObject({
      status: 'in_progress',
      message: 'installing',
    });
    expect((await post('/device/jobs/check/result', { result: { error: 'sensor offline' } })).body.job).toMatchObject({
      status: 'failed',
      result: { error: 'sensor offline' },
    });
    expect((await post('/device/jobs/check/result', { result: { ok: true } })).status).toBe(409);
  });
});

describe('bad settings', () => {
  itOnTheSources.each([
    ['a rate of 0', { max_per_minute: 0 }, 'body.rollout.max_per_minute'],
    ['a rate over 100,000', { max_per_minute: 100_001 }, 'body.rollout.max_per_minute'],
    ['a percentage over 100', { abort: { failure_percentage: 101, min_finished: 1 } }, 'body.rollout.abort.failure_percentage'],
    ['a percentage of 0', { abort: { failure_percentage: 0, min_finished: 1 } }, 'body.rollout.abort.failure_percentage'],
    ['min_finished of 0', { abort: { failure_percentage: 10, min_finished: 0 } }, 'body.rollout.abort.min_finished'],
    ['a timeout over a week', { timeout_seconds: 604_801 }, 'body.rollout.timeout_seconds'],
    ['an unknown setting', { max_per_mnute: 5 }, 'body.rollout.max_per_mnute'],
  ])('refuses %s with 400 naming it, and writes nothing', async (_what, settings, field) => {
    const before = (await api.get(`/workspaces/${ws}/rollouts`)).body.rollouts.length;

    const job = await api.post(`/workspaces/${ws}/jobs/refused?fleet=${staged.fleet}`, { value: {}, rollout: settings });
    const fota = await api.post(`/workspaces/${ws}/fota/fw/versions/refused?fleet=${staged.fleet}`, { rollout: settings });

    for (const answer of [job, fota]) {
      expect(answer.status).toBe(400);
      expect(answer.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
    }
    expect((await api.get(`/workspaces/${ws}/rollouts`)).body.rollouts.length).toBe(before);
    expect((await api.get(`/devices/${staged.devices[0]}/jobs/refused`)).status).toBe(404);
  });

  itOnTheSources('refuses a single-device timeout of 0 with 400', async () => {
    const answer = await api.post(`/devices/${staged.devices[0]}/jobs/refused`, { value: {}, timeout_seconds: 0 });

    expect([answer.status, answer.body.error.details[0].field]).toEqual([400, 'body.timeout_seconds']);
  });
});

describe('the staged rollout, a minute later', () => {
  it('has released the next 10 devices in snapshot order, by the sweep, no sooner than 60 s after the first 10', async () => {
    // The file's other tests take their time on a loaded machine: by now the third release (the
    // last 5, two minutes in) may have come too. Each release is checked against its minute.
    const released = await rolloutWhen(staged.id, (r) => r.counts.pending >= 20, '20 released', 120_000);
    expect(released.counts.pending + released.counts.queued).toBe(25);
    expect([20, 25]).toContain(released.counts.pending);

    const pending = await devicesIn(staged.id, 'pending');
    const created = Date.parse(released.created_at);
    const batch = (from: number, to: number) => pending.filter((d) => staged.devices.slice(from, to).includes(d.device_id));
    const second = batch(10, 20);
    expect(second.map((d) => d.device_id).sort()).toEqual(staged.devices.slice(10, 20));
    for (const d of second) expect(Date.parse(d.updated_at) - created).toBeGreaterThanOrEqual(60_000);
    // the third release, if it came: the last 5 of the snapshot, two minutes in
    const third = batch(20, 25);
    expect(third.length).toBe(released.counts.pending - 20);
    for (const d of third) expect(Date.parse(d.updated_at) - created).toBeGreaterThanOrEqual(120_000);
    expect(Date.now() - staged.answeredAt).toBeGreaterThanOrEqual(59_000);
  }, 150_000);
});
