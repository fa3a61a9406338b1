import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { apiClient } from '../helpers/api-client';
import { fleetstreamArgs } from '../helpers/cli';
import { registryReader } from '../helpers/fuzz/registry-snapshot';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';

// The quotas that keep one account from taking what it likes by making more of it (issue 32,
// finding 7): an account's workspaces, and a workspace's device identities, firmware versions,
// exports and rollouts. Each is checked in the transaction that creates what it counts: creates
// at once never take an account or a workspace past its limit, and a refused one writes nothing.

const run = promisify(execFile);

let stack: LocalStack;
let registry: ReturnType<typeof registryReader>;

beforeAll(async () => {
  stack = await startLocalStack({ LIMITS_CACHE_SECONDS: '0' }, undefined, { readyTimeoutMs: 170_000 });
  registry = registryReader(stack.dataDir);
}, 180_000);
afterAll(async () => {
  registry?.close();
  await stack?.stop();
});

/** `fleetstream` against this stack, as an operator runs it. */
const fleetstream = async (command: string, ...args: string[]) => {
  try {
    const { stdout } = await run(process.execPath, fleetstreamArgs(command, ['--local', '--data-dir', stack.dataDir, ...args]));
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
};

/** A new account of its own, as the operator makes it, and a client with its first key. */
const newAccount = async (name: string) => {
  const made = JSON.parse((await fleetstream('create-account', '--name', name)).stdout) as { account_id: string; workspace_id: string; api_key: string };
  return { ...made, api: apiClient(stack.base_url, made.api_key) };
};

/** The registry's keys in `partition` whose sort keys start with `prefix`, read from the table itself. */
const storedKeys = async (partition: string, prefix: string) =>
  [...(await registry.snapshot()).keys()].filter((key) => key.startsWith(`${partition}|${prefix}`));

const refusal = (limit: string, value: number) => ({
  code: 'quota_exceeded',
  message: expect.stringContaining(`(limits.${limit} = ${value})`),
  details: [{ field: `limits.${limit}`, message: expect.any(String), value }],
});

const secondsToMidnight = () => (Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`) + 86_400_000 - Date.now()) / 1000;

describe('an account’s workspaces', () => {
  it('lets exactly the free places of 20 workspace creates at once through, refuses the rest 429 naming workspaces_per_account, and stores nothing for them', async () => {
    const { account_id, workspace_id, api } = await newAccount('many-workspaces');
    const set = await fleetstream('limits', '--account', account_id, '--set', 'workspaces_per_account=5', '--json');

    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api.post('/workspaces', { name: `w${i}` })));

    const made = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    // The first workspace was there already: four more fit.
    expect([made.length, refused.length]).toEqual([4, 16]);
    for (const { body } of refused) expect(body.error).toEqual(refusal('workspaces_per_account', 5));
    expect(refused[0].body.error.message).toBe('The account is at its limit of 5 workspaces (limits.workspaces_per_account = 5).');
    expect(await storedKeys(`ACC#${account_id}`, 'WKS#')).toHaveLength(5);
    expect((await api.get('/workspaces')).body.workspaces).toHaveLength(5);
    expect(JSON.parse(set.stdout)).toEqual({
      account_id,
      limits: { workspaces_per_account: 5 },
      own: { workspaces_per_account: 5 },
      counts: { workspaces_per_account: 1 },
    });
    expect((await api.get(`/workspaces/${workspace_id}/limits`)).body.limits.workspaces_per_account).toBe(5);
    const shown = await fleetstream('limits', '--workspace', workspace_id);
    expect(shown.stdout).toMatch(/^workspaces_per_account\s+5\s+account\s+5$/m);
  });

  it('sets an account’s limit only on the account, and a workspace’s only on a workspace, saying where (exit 2)', async () => {
    const { account_id, workspace_id } = await newAccount('misplaced');

    const onWorkspace = await fleetstream('limits', '--workspace', workspace_id, '--set', 'workspaces_per_account=3');
    const onAccount = await fleetstream('limits', '--account', account_id, '--set', 'devices=3');
    const both = await fleetstream('limits', '--account', account_id, '--workspace', workspace_id);
    const unknown = await fleetstream('limits', '--account', 'acc-doesnotexist00000000');

    expect([onWorkspace.code, onWorkspace.stderr]).toEqual([2, expect.stringMatching(/^limits: .*workspaces_per_account is the account’s limit/)]);
    expect([onAccount.code, onAccount.stderr]).toEqual([2, expect.stringMatching(/^limits: .*devices is a workspace’s limit/)]);
    expect(both.code).toBe(2);
    expect([unknown.code, unknown.stderr]).toEqual([1, 'limits: Account acc-doesnotexist00000000 not found.\n']);
  });
});

describe('a workspace’s quotas', () => {
  /** A workspace of a new account, with its limits set by the operator's command. */
  const limitedWorkspace = async (name: string, ...limits: string[]) => {
    const account = await newAccount(name);
    await fleetstream('limits', '--workspace', account.workspace_id, ...limits.flatMap((l) => ['--set', l]));
    return account;
  };

  it('answers every limit, the new ones with their defaults beside the others', async () => {
    const { workspace_id, api } = await newAccount('defaults');

    expect((await api.get(`/workspaces/${workspace_id}/limits`)).body).toEqual({
      limits: {
        devices: 10_000,
        fleets: 1000,
        api_keys: 20,
        integrations: 10,
        identities: 20_000,
        firmware_versions: 1000,
        groups: 1000,
        alarm_rules: 100,
        exports_per_day: 100,
        rollouts_per_day: 1000,
        points_per_device_per_day: 100_000,
        events_per_device_per_day: 10_000,
        up_messages_per_device_per_day: 10_000,
        requests_per_second_per_key: 100,
        workspaces_per_account: 100,
      },
      // beside each quota, what it holds now (issue 33: "42 of 100"): the new account's workspace, its default fleet and its key
      used: expect.objectContaining({ workspaces_per_account: 1, fleets: 1, devices: 0, integrations: 0, rollouts_per_day: 0 }),
    });
    await api.post(`/workspaces/${workspace_id}/devices`, { name: 'counted' });
    expect((await api.get(`/workspaces/${workspace_id}/limits`)).body.used.devices).toBe(1);
  });

  it('lets exactly `identities` of 12 identity creates at once through, and a revoked identity frees its place once', async () => {
    const { workspace_id, api } = await limitedWorkspace('keys', 'identities=3');
    const devices = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => (await api.post(`/workspaces/${workspace_id}/devices`, { name: `d${i}` })).body.device.id as string),
    );

    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => api.post(`/workspaces/${workspace_id}/devices/${devices[i % 4]}/identities`)));

    const made = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect([made.length, refused.length]).toEqual([3, 9]);
    for (const { body } of refused) expect(body.error).toEqual(refusal('identities', 3));
    expect(await storedKeys(`WKS#${workspace_id}`, 'IDN#')).toHaveLength(3);

    const { identity } = made[0].body;
    const path = `/workspaces/${workspace_id}/devices/${identity.device_id}/identities/${identity.id}`;
    const revokes = await Promise.all([api.delete(path), api.delete(path)]);
    expect(revokes.map((r) => r.status)).toEqual([200, 200]);
    const again = await Promise.all([0, 1].map(() => api.post(`/workspaces/${workspace_id}/devices/${devices[0]}/identities`)));
    expect(again.map((a) => a.status).sort()).toEqual([200, 429]);
  });

  it('lets exactly `firmware_versions` new versions be registered; registering one again takes no place, and a delete frees one', async () => {
    const { workspace_id, api } = await limitedWorkspace('images', 'firmware_versions=2');
    const image = randomBytes(64);
    const body = { size: image.length, sha256: createHash('sha256').update(image).digest('hex') };
    const path = (version: string) => `/workspaces/${workspace_id}/firmwares/fw/versions/${version}`;

    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => api.post(path(`1.${i}`), body)));
    const made = answers.filter((a) => a.status === 201);
    const again = await api.post(path(made[0].body.firmware.version), body);

    expect([made.length, answers.filter((a) => a.status === 429).length]).toEqual([2, 6]);
    expect(answers.find((a) => a.status === 429)!.body.error).toEqual(refusal('firmware_versions', 2));
    expect(again.status).toBe(201);
    expect(await storedKeys(`WKS#${workspace_id}`, 'FW#')).toHaveLength(2);
    expect((await api.delete(path(made[0].body.firmware.version))).status).toBe(200);
    expect((await api.post(path('2.0'), body)).status).toBe(201);
    expect((await api.post(path('2.1'), body)).status).toBe(429);
  });

  it('lets exactly `exports_per_day` of 8 exports at once start today, then answers 429 with Retry-After until midnight UTC', async () => {
    const { workspace_id, api } = await limitedWorkspace('exporter', 'exports_per_day=2');

    const before = secondsToMidnight();
    const answers = await Promise.all(Array.from({ length: 8 }, () => api.post(`/timeseries/${workspace_id}/exports`, { format: 'csv' })));
    const after = secondsToMidnight();

    const refused = answers.filter((a) => a.status === 429);
    expect([answers.filter((a) => a.status === 202).length, refused.length]).toEqual([2, 6]);
    expect(refused[0].body.error).toEqual(refusal('exports_per_day', 2));
    // The seconds to midnight UTC from the request's arrival, which came between the two readings.
    expect(Number(refused[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(Math.floor(after));
    expect(Number(refused[0].headers.get('retry-after'))).toBeLessThanOrEqual(Math.ceil(before));
    expect(await storedKeys(`WKS#${workspace_id}`, 'EXPORT#')).toHaveLength(2);
    expect((await api.get(`/timeseries/${workspace_id}/exports`)).body.exports).toHaveLength(2);
  });

  it('lets exactly `rollouts_per_day` fleet-wide schedulings start today, and a refused one schedules nothing on any device', async () => {
    const { workspace_id, api } = await limitedWorkspace('roller', 'rollouts_per_day=2');
    const device = (await api.post(`/workspaces/${workspace_id}/devices`, { name: 'target' })).body.device.id as string;

    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => api.post(`/workspaces/${workspace_id}/jobs/job${i}`, { value: {} })));
    const fota = await api.post(`/workspaces/${workspace_id}/fota/fw/versions/1.0`, {});

    const refused = answers.filter((a) => a.status === 429);
    expect([answers.filter((a) => a.status === 200).length, refused.length]).toEqual([2, 4]);
    expect(refused[0].body.error).toEqual(refusal('rollouts_per_day', 2));
    expect(fota.status).toBe(429);
    expect((await api.get(`/workspaces/${workspace_id}/rollouts`)).body.rollouts).toHaveLength(2);
    expect((await api.get(`/devices/${device}/jobs`)).body.jobs).toHaveLength(2);
    expect((await api.get(`/devices/${device}/fota`)).status).toBe(404);
    const shown = await fleetstream('limits', '--workspace', workspace_id);
    expect(shown.stdout).toMatch(/^rollouts_per_day\s+2\s+workspace\s+2$/m);
  });
});
