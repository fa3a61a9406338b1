/**
 * The world the fuzz suite runs in: the caller's account with two workspaces, each with a fleet,
 * a device, an identity, a spare API key, an integration, a group, an alarm rule with an open alarm, a job, a FOTA, a rollout (a
 * rate-limited fleet-wide job, so that it stays open) and an export, plus a device with its own
 * token for the device API; and a second account with one of each, whose IDs must stay invisible
 * (404); and resources of the caller's own for the deleting operations to delete. Built through the API and the create-account command, as a user would.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { promisify } from 'node:util';
import { openAlarmOnStack } from '../alarms';
import { apiClient, type ApiClient } from '../api-client';
import { fleetstreamArgs } from '../cli';
import { deviceToken } from '../device-token';
import type { LocalStack } from '../local-stack';
import type { Context, Fixture } from './requests';

const run = promisify(execFile);

export interface FuzzWorld extends Fixture {
  /** The key the fuzzer calls with: never in a pool, so no fuzzed request revokes it. */
  apiKey: string;
  /** A fresh device token of the caller's token device (identity not in a pool either). */
  token: () => Promise<string>;
  stop: () => Promise<void>;
}

const must = async <T>(what: string, call: Promise<{ status: number; body: any }>, pick: (body: any) => T): Promise<T> => {
  const { status, body } = await call;
  if (status >= 300) throw new Error(`fixture: ${what} answered ${status}: ${JSON.stringify(body)}`);
  return pick(body);
};

/** A receiver that accepts every webhook POST, so deliveries neither fail nor retry. */
const startReceiver = () =>
  new Promise<{ server: Server; url: string }>((resolve) => {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook` }));
  });

/** One workspace's worth of resources that belong together. */
const populate = async (api: ApiClient, workspaceId: string, receiverUrl: string, tag: string, dataDir: string): Promise<Context> => {
  const fleets = await must('list fleets', api.get(`/workspaces/${workspaceId}/fleets`), (b) => b.fleets.map((f: { id: string }) => f.id) as string[]);
  const fleet = await must(
    'create fleet',
    api.post(`/workspaces/${workspaceId}/fleets`, { name: `${tag}-fleet`, description: 'fuzz' }),
    (b) => b.fleet.id as string,
  );
  const device = await must(
    'create device',
    api.post(`/workspaces/${workspaceId}/devices`, { name: `${tag}-device`, fleet_id: fleet }),
    (b) => b.device.id as string,
  );
  const identity = await must('create identity', api.post(`/workspaces/${workspaceId}/devices/${device}/identities`), (b) => b.identity.id as string);
  const key = await must('create key', api.post(`/workspaces/${workspaceId}/api-keys`, { name: `${tag}-spare` }), (b) => b.api_key.id as string);
  const integration = await must(
    'create integration',
    api.post(`/workspaces/${workspaceId}/integrations`, { name: `${tag}-hook`, url: receiverUrl }),
    (b) => b.integration.id as string,
  );
  const group = await must(
    'create group',
    api.post(`/workspaces/${workspaceId}/groups`, { name: `${tag}-group`, query: `name = "${tag}-device"` }),
    (b) => b.group.id as string,
  );
  const rule = await must(
    'create alarm rule',
    api.post(`/workspaces/${workspaceId}/alarm-rules`, { name: `${tag}-offline`, kind: 'offline', severity: 'major', for_seconds: 60 }),
    (b) => b.alarm_rule.id as string,
  );
  const alarm = await openAlarmOnStack(dataDir, { workspace_id: workspaceId, fleet_id: fleet, device_id: device }, rule);
  await must('schedule job', api.post(`/devices/${device}/jobs/reboot`, { value: { delay: 1 } }), () => undefined);
  await must('schedule FOTA', api.post(`/devices/${device}/fota/fw-${tag}/versions/1.0`), () => undefined);
  const rollout = await must(
    'schedule on fleets',
    api.post(`/workspaces/${workspaceId}/jobs/staged?fleet=${fleet}`, { value: {}, rollout: { max_per_minute: 1 } }),
    (b) => b.job.rollout_id as string,
  );
  const exported = await must('start export', api.post(`/timeseries/${workspaceId}/exports`, { format: 'ndjson' }), (b) => b.export.id as string);
  return {
    ids: {
      wks: [workspaceId],
      flt: [fleet, ...fleets],
      dev: [device],
      idn: [identity],
      key: [key],
      int: [integration],
      rol: [rollout],
      exp: [exported],
      grp: [group],
      alr: [rule],
      alm: [alarm],
    },
    jobNames: ['reboot'],
  };
};

/** A device with an identity whose token the fuzzer uses; jobs and a FOTA for it to answer. */
const tokenDevice = async (api: ApiClient, workspaceId: string, jobs: string[]) => {
  const device = await must('create device', api.post(`/workspaces/${workspaceId}/devices`, { name: 'token-device' }), (b) => b.device.id as string);
  const credentials = await must('create identity', api.post(`/workspaces/${workspaceId}/devices/${device}/identities`), (b) => b.credentials);
  for (const job of jobs) await must('schedule job', api.post(`/devices/${device}/jobs/${job}`, { value: { step: job } }), () => undefined);
  await must('schedule FOTA', api.post(`/devices/${device}/fota/fw-token/versions/2.0`), () => undefined);
  let cached: { token: string; at: number } | undefined;
  // Tokens live at most an hour: a long `npm run fuzz` signs a new one every half hour.
  const token = async () => {
    if (!cached || Date.now() - cached.at > 30 * 60_000) cached = { token: await deviceToken(credentials, { expiresIn: 3600 }), at: Date.now() };
    return cached.token;
  };
  return { device, token };
};

/**
 * What the deleting operations are fuzzed on: a workspace of its own with an empty fleet and a
 * fleet of three devices (one with an identity, a job and a FOTA), and an empty workspace, so that
 * valid deletes meet both their 200 and their 409 (a fleet or workspace that holds devices, the
 * default fleet).
 */
const doomedContexts = async (api: ApiClient): Promise<Context[]> => {
  const workspace = await must('create workspace', api.post('/workspaces', { name: 'fuzz-doomed' }), (b) => b.workspace.id as string);
  const fleets = await must('list fleets', api.get(`/workspaces/${workspace}/fleets`), (b) => b.fleets.map((f: { id: string }) => f.id) as string[]);
  const empty = await must('create fleet', api.post(`/workspaces/${workspace}/fleets`, { name: 'doomed-empty' }), (b) => b.fleet.id as string);
  const full = await must('create fleet', api.post(`/workspaces/${workspace}/fleets`, { name: 'doomed-full' }), (b) => b.fleet.id as string);
  const devices: string[] = [];
  for (let i = 0; i < 3; i++) {
    devices.push(
      await must('create device', api.post(`/workspaces/${workspace}/devices`, { name: `doomed-${i}`, fleet_id: full }), (b) => b.device.id as string),
    );
  }
  await must('create identity', api.post(`/workspaces/${workspace}/devices/${devices[0]}/identities`), () => undefined);
  await must('schedule job', api.post(`/devices/${devices[0]}/jobs/reboot`, { value: {} }), () => undefined);
  await must('schedule FOTA', api.post(`/devices/${devices[0]}/fota/fw-doomed/versions/1.0`), () => undefined);
  const bare = await must('create workspace', api.post('/workspaces', { name: 'fuzz-doomed-empty' }), (b) => b.workspace.id as string);
  // One context: a delete of the empty workspace answers 200 once, of the other 409 while it holds devices.
  return [{ ids: { wks: [workspace, bare], flt: [empty, full, ...fleets], dev: devices }, jobNames: [] }];
};

/** Builds both accounts on a running local stack. */
export const buildWorld = async (stack: LocalStack): Promise<FuzzWorld> => {
  const receiver = await startReceiver();
  // The fuzzer sends its requests one after another as fast as they are answered, with one key:
  // its workspace's rate is raised by the operator's command, as for any client that needs more,
  // so that every request meets the rule under test rather than the key's rate.
  await run(
    process.execPath,
    fleetstreamArgs('limits', ['--workspace', stack.workspace_id, '--set', 'requests_per_second_per_key=100000', '--local', '--data-dir', stack.dataDir]),
  );
  const api = apiClient(stack.base_url, stack.api_key);
  const second = await must('create workspace', api.post('/workspaces', { name: 'fuzz-second' }), (b) => b.workspace.id as string);
  const own = [await populate(api, stack.workspace_id, receiver.url, 'a1', stack.dataDir), await populate(api, second, receiver.url, 'a2', stack.dataDir)];
  const doomed = await doomedContexts(api);
  const deviceJobs = ['reboot', 'update', 'calibrate'];
  const mine = await tokenDevice(api, stack.workspace_id, deviceJobs);
  own[0].ids.dev.push(mine.device);
  own[0].jobNames.push(...deviceJobs);

  const { stdout } = await run(process.execPath, fleetstreamArgs('create-account', ['--name', 'other', '--local', '--data-dir', stack.dataDir]));
  const other = JSON.parse(stdout) as { workspace_id: string; api_key: string; api_key_id: string; default_fleet_id: string };
  const theirApi = apiClient(stack.base_url, other.api_key);
  const theirs = await populate(theirApi, other.workspace_id, receiver.url, 'b', stack.dataDir);
  theirs.ids.key.push(other.api_key_id);
  const theirDevice = await tokenDevice(theirApi, other.workspace_id, ['secret-b-job']);
  theirs.ids.dev.push(theirDevice.device);
  theirs.jobNames.push('secret-b-job');

  return {
    own,
    doomed,
    foreign: theirs,
    receiverUrl: receiver.url,
    apiKey: stack.api_key,
    token: mine.token,
    stop: () => new Promise<void>((resolve) => receiver.server.close(() => resolve())),
  };
};
