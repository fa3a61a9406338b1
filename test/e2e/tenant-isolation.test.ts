import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ROUTES } from '../../lambdas/routes';
import type { LocalRuntime } from '../../local/runtime';
import { openAlarmOn } from '../helpers/alarms';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { startRuntime } from '../helpers/runtime';

// Isolation is what the runtime answers, not `npm start`: it runs in this process, on the worker's
// shared DynamoDB Local (test/helpers/runtime.ts). `create-account --local` against npm start is
// test/e2e/local-runtime.test.ts's.
let stack: LocalRuntime;
let mine: ApiClient;
let theirs: ApiClient;
/** Account B's resources, by the path parameter that names them. */
let theirIds: Record<string, string>;

beforeAll(async () => {
  stack = await startRuntime();
  mine = apiClient(stack.base_url, stack.api_key);
  // Lambda modules are imported once the runtime has set the environment they read once (lambdas/shared/env.ts).
  const { documentClient } = await import('../../lambdas/shared/clients');
  const { createAccount } = await import('../../lambdas/domain/tenancy/accounts');
  const db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
  // Account B as `fleetstream create-account` makes it (bin/cli/create-account.ts): createAccount on the registry.
  const other = await createAccount(db, { name: 'other' });
  theirs = apiClient(stack.base_url, other.api_key);
  const device = (await theirs.post(`/workspaces/${other.workspace_id}/devices`, { name: 'secret-device' })).body.device;
  await theirs.post(`/devices/${device.id}/jobs/reboot`, { value: { original: true } });
  await theirs.post(`/devices/${device.id}/fota/fw/versions/1.0`);
  // A firmware version of theirs, at the path parameters below (registered, awaiting its upload).
  await theirs.post(`/workspaces/${other.workspace_id}/firmwares/fw/versions/2.0`, { size: 1, sha256: 'a'.repeat(64) });
  const identity = (await theirs.post(`/workspaces/${other.workspace_id}/devices/${device.id}/identities`)).body.identity;
  const integration = (await theirs.post(`/workspaces/${other.workspace_id}/integrations`, { url: 'https://hooks.example.com/b' })).body.integration;
  const rollout = (await theirs.post(`/workspaces/${other.workspace_id}/jobs/secret-rollout`, { value: { original: true }, rollout: { max_per_minute: 1 } }))
    .body.job.rollout_id;
  const exported = (await theirs.post(`/timeseries/${other.workspace_id}/exports`, { format: 'csv' })).body.export;
  const group = (await theirs.post(`/workspaces/${other.workspace_id}/groups`, { name: 'secret-group', query: 'name = "secret-device"' })).body.group;
  await theirs.call('PATCH', `/workspaces/${other.workspace_id}/devices/${device.id}/state`, { desired: { secret: 1 } });
  const rule = (
    await theirs.post(`/workspaces/${other.workspace_id}/alarm-rules`, { name: 'secret-rule', kind: 'offline', severity: 'critical', for_seconds: 60 })
  ).body.alarm_rule;
  // The API opens no alarm: one is opened as the detection opens them, on the runtime's registry.
  const alarm = await openAlarmOn(db, { workspace_id: other.workspace_id, fleet_id: other.default_fleet_id, device_id: device.id }, rule.id);
  db.doc.destroy();
  theirIds = {
    workspaceId: other.workspace_id,
    fleetId: other.default_fleet_id,
    deviceId: device.id,
    jobName: 'reboot',
    firmwareId: 'fw',
    firmwareVersion: '2.0',
    keyId: other.api_key_id,
    identityId: identity.id,
    integrationId: integration.id,
    rolloutId: rollout,
    exportId: exported.id,
    groupId: group.id,
    alarmRuleId: rule.id,
    alarmId: alarm,
  };
});

afterAll(async () => {
  await stack?.stop();
});

/** A valid body for each operation that takes one, so that only ownership can refuse it. */
const bodyFor = (operationId: string): unknown =>
  ({
    createFleet: { name: 'intruder' },
    createDevice: { name: 'intruder' },
    updateDevice: { name: 'intruder', fleet_id: theirIds.fleetId },
    scheduleJob: { value: { hijacked: true } },
    scheduleFleetJob: { value: { hijacked: true } },
    scheduleFleetJobSingular: { value: { hijacked: true } },
    createApiKey: { name: 'intruder' },
    createIntegration: { url: 'https://intruder.example.com/hook' },
    updateIntegration: { url: 'https://intruder.example.com/hook' },
    updateWorkspace: { name: 'intruder', data_retention_days: 1 },
    registerFirmware: { size: 1, sha256: 'b'.repeat(64) },
    createExport: { format: 'csv' },
    createGroup: { name: 'intruder', query: 'name = "secret-device"' },
    updateGroup: { query: 'name != "x"' },
    createAlarmRule: { name: 'intruder', kind: 'offline', severity: 'minor', for_seconds: 60 },
    updateAlarmRule: { enabled: false },
    acknowledgeAlarm: { note: 'intruder' },
    patchDeviceState: { desired: { hijacked: true } },
    changeFleetState: { desired: { hijacked: true } },
  })[operationId];

const scopedRoutes = ROUTES.filter((r) => r.auth === 'api-key' && r.path.includes('{'));

describe('tenant isolation', () => {
  it.each(scopedRoutes.map((r) => [`${r.method} ${r.path}`, r] as const))('answers 404 to %s with another account’s IDs', async (_name, route) => {
    const path = route.path.replace(/\{(\w+)\}/g, (_m, param: string) => {
      if (!theirIds[param]) throw new Error(`the isolation test has no resource of account B for {${param}}: add one in beforeAll`);
      return encodeURIComponent(theirIds[param]);
    });

    const { status, body } = await mine.call(route.method, path, bodyFor(route.operationId));

    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
    expect(JSON.stringify(body)).not.toContain('secret-device');
  });

  it('never lists another account’s workspaces', async () => {
    const { body } = await mine.get('/workspaces');

    expect(body.workspaces.map((w: { id: string }) => w.id)).not.toContain(theirIds.workspaceId);
    expect(body.workspaces.every((w: { account_id: string }) => w.account_id === stack.account_id)).toBe(true);
  });

  it('leaves the other account exactly as it was', async () => {
    const devices = await theirs.get(`/workspaces/${theirIds.workspaceId}/devices`);
    const job = await theirs.get(`/devices/${theirIds.deviceId}/jobs/reboot`);
    const fota = await theirs.get(`/devices/${theirIds.deviceId}/fota`);
    const keys = await theirs.get(`/workspaces/${theirIds.workspaceId}/api-keys`);
    const fleets = await theirs.get(`/workspaces/${theirIds.workspaceId}/fleets`);
    const identities = await theirs.get(`/workspaces/${theirIds.workspaceId}/devices/${theirIds.deviceId}/identities`);
    const integrations = await theirs.get(`/workspaces/${theirIds.workspaceId}/integrations`);
    const workspace = await theirs.get(`/workspaces/${theirIds.workspaceId}`);
    const rollout = await theirs.get(`/workspaces/${theirIds.workspaceId}/rollouts/${theirIds.rolloutId}`);
    const exports = await theirs.get(`/timeseries/${theirIds.workspaceId}/exports`);
    const group = await theirs.get(`/workspaces/${theirIds.workspaceId}/groups/${theirIds.groupId}`);
    const state = await theirs.get(`/workspaces/${theirIds.workspaceId}/devices/${theirIds.deviceId}/state`);
    const rule = await theirs.get(`/workspaces/${theirIds.workspaceId}/alarm-rules/${theirIds.alarmRuleId}`);
    const alarms = await theirs.get(`/workspaces/${theirIds.workspaceId}/alarms`);

    expect(devices.body.devices.map((d: { name: string }) => d.name)).toEqual(['secret-device']);
    expect(job.body.job.value).toEqual({ original: true });
    expect(fota.body.fota.value.firmware_version).toBe('1.0');
    expect(keys.body.api_keys).toHaveLength(1);
    expect(keys.body.api_keys[0].revoked_at).toBeNull();
    expect(fleets.body.fleets.map((f: { name: string }) => f.name)).toEqual(['default']);
    expect(identities.body.identities.map((i: { revoked_at: string | null }) => i.revoked_at)).toEqual([null]);
    expect(integrations.body.integrations.map((i: { url: string }) => i.url)).toEqual(['https://hooks.example.com/b']);
    expect(workspace.body.workspace).toMatchObject({ name: 'default' });
    expect(workspace.body.workspace).not.toHaveProperty('data_retention_days');
    expect(rollout.body.rollout).toMatchObject({ status: 'in_progress', job_name: 'secret-rollout' });
    expect(job.body.job.status).toBe('pending');
    expect(exports.body.exports.map((e: { id: string }) => e.id)).toEqual([theirIds.exportId]);
    expect(group.body.group).toMatchObject({ name: 'secret-group', query: 'name = "secret-device"', device_count: 1 });
    expect(state.body.state).toMatchObject({ desired: { secret: 1 }, version: 1 });
    expect(rule.body.alarm_rule).toMatchObject({ name: 'secret-rule', enabled: true });
    expect(alarms.body.alarms.map((a: { id: string; status: string }) => [a.id, a.status])).toEqual([[theirIds.alarmId, 'open']]);
  });
});
