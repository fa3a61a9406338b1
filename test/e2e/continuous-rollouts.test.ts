/**
 * Targets (group=, q=) and continuous rollouts end to end, on one runtime whose sweep runs every
 * 5 seconds (a rate-limited release waits for its minute within the sweep's RELEASE_LOOKAHEAD_MS,
 * so the release is on time; a run a second cost CPU for nothing over the file's minutes): devices that match a continuous rollout later (created in its fleet, moved in, re-tagged)
 * get its job from the registry stream, once each, counted; cancel stops that; a rate-limited one
 * queues them for the sweep. Every wait is for a condition, with a bound.
 */
import { isDeepStrictEqual } from 'node:util';
import type { LocalRuntime } from '../../local/runtime';
import { until } from '../../local/ports';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startRuntime } from '../helpers/runtime';

let runtime: LocalRuntime;
let api: ApiClient;
let ws: string;

const newFleet = async (name: string) => (await api.post(`/workspaces/${ws}/fleets`, { name })).body.fleet.id as string;
const newDevice = async (fleet: string, name: string, tags?: Record<string, string>) => {
  const answer = await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: fleet, ...(tags ? { tags } : {}) });
  expect(answer.status).toBe(200);
  return answer.body.device.id as string;
};
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
const jobOf = async (device: string, name: string) => {
  const answer = await api.get(`/devices/${device}/jobs/${name}`);
  return answer.status === 200 ? answer.body.job : undefined;
};
/** Waits for a device to hold the job of `rolloutId` (the registry stream gives it within seconds). */
const jobWhen = async (device: string, name: string, rolloutId: string, timeout = 30_000) => {
  let job: any;
  await until(async () => (job = await jobOf(device, name))?.rollout_id === rolloutId, `${device} holds ${name} of ${rolloutId}`, timeout);
  return job;
};
const rollouts = async () => (await api.get(`/workspaces/${ws}/rollouts`)).body.rollouts.length as number;
const schedule = (name: string, query: string, body: unknown = { value: {} }) => api.post(`/workspaces/${ws}/jobs/${name}?${query}`, body);

beforeAll(async () => {
  runtime = await startRuntime({ sweepIntervalSeconds: 5 });
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
}, 180_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('targets: q= on fleet-wide jobs and FOTA, and their dry runs', () => {
  let fleet: string;
  let milan: string[];
  beforeAll(async () => {
    fleet = await newFleet('targets');
    milan = [await newDevice(fleet, 't0', { site: 'milan' }), await newDevice(fleet, 't1', { site: 'milan', model: 'v2' })];
    await newDevice(fleet, 't2', { site: 'rome' });
  });

  it('schedules a job only on the devices of the fleet that match q, and records the target', async () => {
    const answer = await schedule('ping', `fleet=${fleet}&q=${encodeURIComponent('tags.site = "milan"')}`);

    expect(answer.status).toBe(200);
    expect([...answer.body.job.devices].sort()).toEqual(milan);
    const counted = await rolloutWhen(answer.body.job.rollout_id, (r) => r.total === 2, 'two counted');
    expect(counted).toMatchObject({ q: 'tags.site = "milan"', group_id: null, settings: { continuous: false } });
  });

  it('counts the same devices on a dry run, and none (200, total 0) when nothing matches', async () => {
    const dry = await schedule('ping', `fleet=${fleet}&dry_run=true&q=${encodeURIComponent('tags.model = "v2"')}`);
    expect(dry.body).toEqual({ dry_run: true, targets: 1, fleet_ids: [fleet] });

    const none = await schedule('ping', `fleet=${fleet}&q=${encodeURIComponent('tags.site = "oslo"')}`);
    expect(none.status).toBe(200);
    expect(none.body.job.devices).toEqual([]);
    expect(await rolloutWhen(none.body.job.rollout_id, (r) => r.status === 'completed', 'the empty rollout completed')).toMatchObject({ total: 0 });
  });

  it('targets a FOTA by q= (every fleet when none is named)', async () => {
    const answer = await api.post(`/workspaces/${ws}/fota/fw/versions/2.0?q=${encodeURIComponent('tags.model = "v2"')}`);

    expect(answer.status).toBe(200);
    expect(answer.body.fota.devices).toEqual([milan[1]]);
    expect((await api.get(`/devices/${milan[1]}/fota`)).body.fota).toMatchObject({ status: 'pending', rollout_id: answer.body.fota.rollout_id });
    expect((await api.get(`/devices/${milan[0]}/fota`)).status).toBe(404);
  });

  it('refuses q and group together, a malformed q and an unknown group, writing nothing', async () => {
    const before = await rollouts();
    const both = await schedule('ping', `group=grp-x&q=${encodeURIComponent('name = "a"')}`);
    const malformed = await schedule('ping', `q=${encodeURIComponent('tags.site = ')}`);
    const malformedDry = await schedule('ping', `dry_run=true&q=${encodeURIComponent('name ==')}`);
    const unknown = await schedule('ping', 'group=grp-unknown', { value: {}, rollout: { continuous: true } });
    const unknownFota = await api.post(`/workspaces/${ws}/fota/fw/versions/2.0?group=grp-unknown`);

    expect(both.status).toBe(400);
    expect(both.body.error.details).toEqual([expect.objectContaining({ field: 'query.group' })]);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].field).toBe('query.q');
    expect(malformedDry.status).toBe(400);
    expect(unknown.status).toBe(404);
    expect(unknownFota.status).toBe(404);
    expect(await rollouts()).toBe(before);
  });
});

describe('a continuous rollout', () => {
  let fleet: string;
  let other: string;
  let id: string;
  let first: string;
  beforeAll(async () => {
    fleet = await newFleet('continuous');
    other = await newFleet('elsewhere');
    first = await newDevice(fleet, 'c0');
    const answer = await schedule('sync', `fleet=${fleet}`, { value: { v: 1 }, rollout: { continuous: true } });
    expect(answer.status).toBe(200);
    expect(answer.body.job.devices).toEqual([first]);
    id = answer.body.job.rollout_id;
  });

  it('shows continuous: true and stays in progress once its devices answered (where a snapshot rollout completes)', async () => {
    const control = (await schedule('once', `fleet=${fleet}`)).body.job.rollout_id as string;
    const credentials = (await api.post(`/workspaces/${ws}/devices/${first}/identities`)).body.credentials;
    const me = deviceClient(runtime.base_url, await deviceToken(credentials));
    expect((await me.post('/jobs/sync/result', { result: { ok: true } })).status).toBe(200);
    expect((await me.post('/jobs/once/result', { result: { ok: true } })).status).toBe(200);

    await rolloutWhen(control, (r) => r.status === 'completed', 'the snapshot rollout completed');
    const answered = await rolloutWhen(id, (r) => r.counts.done === 1, 'its device counted done');
    expect(answered).toMatchObject({ status: 'in_progress', total: 1, settings: { continuous: true }, fleets: [fleet] });
  });

  it('gives its job to a device created in its fleet and to one moved into it, once each, and its total grows', async () => {
    const created = await newDevice(fleet, 'c1');
    const moved = await newDevice(other, 'c2');
    await api.put(`/workspaces/${ws}/devices/${moved}`, { name: 'c2', fleet_id: fleet });

    expect(await jobWhen(created, 'sync', id)).toMatchObject({ status: 'pending', value: { v: 1 } });
    const job = await jobWhen(moved, 'sync', id);
    const grown = await rolloutWhen(id, (r) => r.total === 3, 'three counted');
    expect(grown.counts).toMatchObject({ done: 1, pending: 2 });

    // Changed again (renamed, re-tagged), it is not given the job a second time.
    await api.put(`/workspaces/${ws}/devices/${moved}`, { name: 'c2-renamed', fleet_id: fleet, tags: { k: 'v' } });
    const marker = await newDevice(fleet, 'c3');
    await jobWhen(marker, 'sync', id);
    expect(await jobOf(moved, 'sync')).toEqual(job);
    expect((await rolloutWhen(id, (r) => r.total === 4, 'four counted')).counts).toMatchObject({ done: 1, pending: 3 });
  });

  it('gives a q-targeted continuous job to a device re-tagged to match', async () => {
    const q = encodeURIComponent('tags.role = "gateway"');
    const answer = await schedule('gw', `fleet=${other}&q=${q}`, { value: {}, rollout: { continuous: true } });
    const gw = answer.body.job.rollout_id as string;
    const device = await newDevice(other, 'g0');
    const matching = await newDevice(other, 'g1', { role: 'gateway' });
    await jobWhen(matching, 'gw', gw);

    await api.put(`/workspaces/${ws}/devices/${device}`, { name: 'g0', fleet_id: other, tags: { role: 'gateway' } });
    await jobWhen(device, 'gw', gw);
    expect(await rolloutWhen(gw, (r) => r.total === 2, 'two counted')).toMatchObject({ q: 'tags.role = "gateway"', status: 'in_progress' });
  });

  it('adds no device once canceled', async () => {
    const canceled = await api.post(`/workspaces/${ws}/rollouts/${id}/cancel`);
    expect(canceled.status).toBe(200);
    const before = (await rolloutWhen(id, (r) => r.counts.pending === 0, 'its pending devices canceled')).total;
    // A second continuous rollout on the fleet tells when the stream has seen the new device.
    const witness = (await schedule('witness', `fleet=${fleet}`, { value: {}, rollout: { continuous: true } })).body.job.rollout_id;

    const late = await newDevice(fleet, 'c4');
    await jobWhen(late, 'witness', witness);

    expect(await jobOf(late, 'sync')).toBeUndefined();
    expect((await rollout(id)).total).toBe(before);
    await api.post(`/workspaces/${ws}/rollouts/${witness}/cancel`);
  });

  it('aborts on a late device’s failure (its abort rule counts late devices), and adds nobody after', async () => {
    const strict = await newFleet('strict');
    const answer = await schedule('risky', `fleet=${strict}`, { value: {}, rollout: { continuous: true, abort: { failure_percentage: 50, min_finished: 1 } } });
    const risky = answer.body.job.rollout_id as string;
    expect(answer.body.job.devices).toEqual([]);
    const device = await newDevice(strict, 'r0');
    await jobWhen(device, 'risky', risky);

    const credentials = (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials;
    const me = deviceClient(runtime.base_url, await deviceToken(credentials));
    expect((await me.post('/jobs/risky/result', { result: { error: 'bricked' } })).status).toBe(200);
    const aborted = await rolloutWhen(risky, (r) => r.status === 'aborted', 'aborted by the late device’s failure');
    expect(aborted).toMatchObject({ total: 1, counts: expect.objectContaining({ failed: 1 }) });

    const witness = (await schedule('witness2', `fleet=${strict}`, { value: {}, rollout: { continuous: true } })).body.job.rollout_id;
    const after = await newDevice(strict, 'r1');
    await jobWhen(after, 'witness2', witness);
    expect(await jobOf(after, 'risky')).toBeUndefined();
    expect((await rollout(risky)).total).toBe(1);
    await api.post(`/workspaces/${ws}/rollouts/${witness}/cancel`);
  });

  it('queues late devices of a rate-limited one and releases them at its rate', async () => {
    const staged = await newFleet('staged');
    await newDevice(staged, 's0');
    const answer = await schedule('slow', `fleet=${staged}`, { value: {}, rollout: { continuous: true, max_per_minute: 1 } });
    const slow = answer.body.job.rollout_id as string;
    const late = [await newDevice(staged, 's1'), await newDevice(staged, 's2')];

    // The counts follow the total through the registry stream: waited for, not read at once. The
    // first minute releases s0 (or, when the scheduling's snapshot ran before s0's item could be
    // read, the stream adds s0 as a late device, queued like the others): at most one pending.
    const queued = await rolloutWhen(
      slow,
      (r) => r.total === 3 && r.counts.queued + r.counts.pending === 3 && r.counts.pending <= 1,
      'the late devices counted, queued',
    );
    const first = queued.counts.pending;
    for (const device of late) expect((await jobWhen(device, 'slow', slow)).status).toBe('queued');
    // The next minute releases one of the queued (its rate), not more.
    const released = await rolloutWhen(slow, (r) => r.counts.pending === first + 1, 'one late device released', 100_000);
    expect(released.counts).toMatchObject({ queued: 2 - first });
    expect(released.status).toBe('in_progress');
    await api.post(`/workspaces/${ws}/rollouts/${slow}/cancel`);
  }, 150_000);
});

describe('group= targets', () => {
  it('counts a group’s devices on a dry run, holds the group while a continuous rollout uses it, and refuses it once deleted', async () => {
    const fleet = await newFleet('grouped');
    const member = await newDevice(fleet, 'm0', { model: 'v3' });
    await newDevice(fleet, 'm1', { model: 'v1' });
    const group = (await api.post(`/workspaces/${ws}/groups`, { name: 'v3 boards', query: 'tags.model = "v3"' })).body.group.id as string;

    const dry = await schedule('flash', `dry_run=true&fleet=${fleet}&group=${group}`);
    expect(dry.body).toEqual({ dry_run: true, targets: 1, fleet_ids: [fleet] });

    const answer = await schedule('flash', `fleet=${fleet}&group=${group}`, { value: {}, rollout: { continuous: true } });
    expect(answer.body.job.devices).toEqual([member]);
    const id = answer.body.job.rollout_id as string;
    expect((await api.get(`/workspaces/${ws}/groups/${group}`)).body.group.used_by).toEqual([id]);
    expect((await api.delete(`/workspaces/${ws}/groups/${group}`)).status).toBe(409);
    // A device re-tagged into the group joins the rollout.
    const joining = await newDevice(fleet, 'm2');
    await api.put(`/workspaces/${ws}/devices/${joining}`, { name: 'm2', fleet_id: fleet, tags: { model: 'v3' } });
    await jobWhen(joining, 'flash', id);
    expect(await rolloutWhen(id, (r) => r.total === 2, 'two counted')).toMatchObject({ group_id: group, q: null });

    await api.post(`/workspaces/${ws}/rollouts/${id}/cancel`);
    expect((await api.get(`/workspaces/${ws}/groups/${group}`)).body.group.used_by).toEqual([]);
    expect((await api.delete(`/workspaces/${ws}/groups/${group}`)).status).toBe(200);

    const before = await rollouts();
    const refused = await schedule('flash', `fleet=${fleet}&group=${group}`, { value: {}, rollout: { continuous: true } });
    expect(refused.status).toBe(404);
    expect(await rollouts()).toBe(before);
  });
});

describe('fleet-wide desired state: PATCH /workspaces/{ws}/state as a rollout of kind state', () => {
  const change = (query: string, body: unknown) => api.call('PATCH', `/workspaces/${ws}/state?${query}`, body);
  const desiredOf = async (device: string) => (await api.get(`/workspaces/${ws}/devices/${device}/state`)).body.state.desired;
  const devicesIn = async (id: string, status: string) =>
    ((await api.get(`/workspaces/${ws}/rollouts/${id}/devices?status=${status}`)).body.devices as Array<{ device_id: string }>).map((d) => d.device_id).sort();
  const reporter = async (device: string) => {
    const credentials = (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials;
    const me = deviceClient(runtime.base_url, await deviceToken(credentials));
    return (reported: Record<string, unknown>) => me.post('/state', { reported });
  };

  it('sets its keys on every device; those that report them are done, and the one that refuses stays pending, listed so', async () => {
    const fleet = await newFleet('state');
    const devices = [await newDevice(fleet, 's0'), await newDevice(fleet, 's1'), await newDevice(fleet, 's2')];
    const [applies, refuses, silent] = devices;
    const dry = await change(`fleet=${fleet}&dry_run=true`, { desired: { interval: 60 } });
    expect(dry.body).toEqual({ dry_run: true, targets: 3, fleet_ids: [fleet] });
    const answer = await change(`fleet=${fleet}`, { desired: { interval: 60, mode: 'eco' }, rollout: { timeout_seconds: 3600 } });

    expect(answer.status).toBe(200);
    expect([...answer.body.state_change.devices].sort()).toEqual([...devices].sort());
    const id = answer.body.state_change.rollout_id as string;
    for (const device of devices) expect(await desiredOf(device)).toEqual({ interval: 60, mode: 'eco' });
    expect((await (await reporter(applies))({ interval: 60, mode: 'eco', fw_version: '1.2.0' })).status).toBe(200);
    expect((await (await reporter(refuses))({ interval: 30, mode: 'eco' })).status).toBe(200);

    const counted = await rolloutWhen(id, (r) => r.counts.done === 1 && r.counts.pending === 2, 'the device that applied it counted done');
    expect(counted).toMatchObject({ kind: 'state', desired: { interval: 60, mode: 'eco' }, status: 'in_progress', total: 3 });
    expect(await devicesIn(id, 'pending')).toEqual([refuses, silent].sort());
    expect(await devicesIn(id, 'done')).toEqual([applies]);
  });

  it('refuses a bad document or target with a clear 400 or 404, writing nothing', async () => {
    const before = await rollouts();
    const bad = await change('', { desired: { '@x': 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'body.desired.@x' })]);
    expect((await change('', { desired: {} })).status).toBe(400);
    expect((await change('dry_run=true', { desired: { _x: 1 } })).body.error.details).toEqual([expect.objectContaining({ field: 'body.desired._x' })]);
    expect((await change('', { desired: { a: 1 }, rollout: { max_per_minute: 0 } })).status).toBe(400);
    expect((await api.call('PATCH', '/workspaces/wks-123456789/state', { desired: { a: 1 } })).status).toBe(404);
    expect(await rollouts()).toBe(before);
  });

  it('aborts by its rule when a released device times out, canceling the queued one, whose desired state is left alone', async () => {
    const fleet = await newFleet('state-abort');
    const devices = [await newDevice(fleet, 'a0'), await newDevice(fleet, 'a1')].sort();
    const settings = { max_per_minute: 1, timeout_seconds: 1, abort: { failure_percentage: 50, min_finished: 1 } };
    const id = (await change(`fleet=${fleet}`, { desired: { level: 3 }, rollout: settings })).body.state_change.rollout_id as string;

    const aborted = await rolloutWhen(id, (r) => r.status === 'aborted' && r.counts.canceled === 1, 'aborted, its queued device canceled');
    expect(aborted.counts).toMatchObject({ timed_out: 1, canceled: 1, queued: 0, pending: 0 });
    expect(await desiredOf(devices[0])).toEqual({ level: 3 });
    expect(await desiredOf(devices[1])).toEqual({});
  });

  it('cancels the queued devices of a rate-limited one; the released one keeps its desired state and is still followed', async () => {
    const fleet = await newFleet('state-cancel');
    const devices = [await newDevice(fleet, 'c0'), await newDevice(fleet, 'c1'), await newDevice(fleet, 'c2')].sort();
    const id = (await change(`fleet=${fleet}`, { desired: { color: 'red' }, rollout: { max_per_minute: 1 } })).body.state_change.rollout_id as string;
    expect((await api.post(`/workspaces/${ws}/rollouts/${id}/cancel`)).status).toBe(200);

    await rolloutWhen(id, (r) => r.counts.canceled === 2 && r.counts.pending === 1, 'the queued ones canceled');
    expect(await devicesIn(id, 'canceled')).toEqual(devices.slice(1));
    expect(await desiredOf(devices[0])).toEqual({ color: 'red' });
    await (await reporter(devices[0]))({ color: 'red' });
    expect(await rolloutWhen(id, (r) => r.counts.done === 1, 'the released one applied it')).toMatchObject({ status: 'canceled' });
  });

  it('gives a continuous one’s keys to a device created later, and counts its report', async () => {
    const fleet = await newFleet('state-continuous');
    const answer = await change(`fleet=${fleet}`, { desired: { sampling: { every: 10 } }, rollout: { continuous: true } });
    expect(answer.body.state_change.devices).toEqual([]);
    const id = answer.body.state_change.rollout_id as string;

    const late = await newDevice(fleet, 'late');
    await rolloutWhen(id, (r) => r.total === 1 && r.counts.pending === 1, 'the late device joined');
    // Its item is counted as it is written; its keys are set right after (the release): waited for.
    await until(async () => isDeepStrictEqual(await desiredOf(late), { sampling: { every: 10 } }), 'the late device given the keys');
    await (await reporter(late))({ sampling: { every: 10 } });
    expect(await rolloutWhen(id, (r) => r.counts.done === 1, 'the late device applied it')).toMatchObject({
      status: 'in_progress',
      settings: { continuous: true },
    });
    await api.post(`/workspaces/${ws}/rollouts/${id}/cancel`);
  });
});
