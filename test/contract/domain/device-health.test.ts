/**
 * Issue 33 (fleet-state.md §1): a device answers `last_seen_at` and `firmware_version` beside every
 * v3 field; the ingest keeps `last_seen_at` with at most one write a device a minute; events land in
 * the device's event log (never a data point's), a FOTA that ended `done` sets the firmware; the
 * overview counts a workspace's devices. On DynamoDB Local.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { seenRecorder } from '../../../lambdas/domain/data/last-seen';
import { listDeviceEvents, recordDeviceEvents } from '../../../lambdas/domain/registry/device-events';
import { createDevice, getDevice, listDevices } from '../../../lambdas/domain/registry/devices';
import { createFleet } from '../../../lambdas/domain/registry/fleets';
import { acknowledgeAlarm, closeAlarm, openAlarm, type AlarmDeps } from '../../../lambdas/domain/alarms/alarms';
import { createAlarmRule } from '../../../lambdas/domain/alarms/rules';
import { getOverview } from '../../../lambdas/domain/registry/overview';
import { alarmCountKey, INDEX_SHARDS, shardOfDevice } from '../../../lambdas/stores/keys';
import type { AlarmRuleRecord } from '../../../lambdas/stores/alarm-rule-store';
import { eventMessage } from '../../../lambdas/domain/webhooks/events';
import { DeviceSchema } from '../../../lambdas/schemas/device';
import type { ForwardMessage } from '../../../lambdas/schemas/forward';
import type { Db } from '../../../lambdas/shared/clients';
import { NotFoundError } from '../../../lambdas/shared/errors';
import { deviceKey } from '../../../lambdas/stores/keys';
import { putAll } from '../../../lambdas/stores/items';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

/** Every field of a v3 device answer (interface-v3.md), which an answer must keep whatever it adds. */
const V3_DEVICE_FIELDS = ['id', 'name', 'account_id', 'fleet_id', 'fleet_name', 'workspace_id', 'workspace_name', 'created_at', 'phys_id', 'identities'];

const storedDevice = async (workspaceId: string, deviceId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }))).Item!;

describe('device answers', () => {
  it('keep every v3 field and add last_seen_at and firmware_version, null until known', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const created = await createDevice(db, caller, workspace_id, { name: 'v3', phys_id: 'p-1' });
    const [one, listed] = [await getDevice(db, caller, workspace_id, created.id), await itemsOf(listDevices(db, caller, workspace_id))];

    for (const answer of [created, one, listed[0]]) {
      for (const field of V3_DEVICE_FIELDS) expect(answer).toHaveProperty(field);
      expect(answer).toMatchObject({ name: 'v3', phys_id: 'p-1', identities: null, last_seen_at: null, firmware_version: null });
      expect(DeviceSchema.safeParse(answer).success).toBe(true);
    }
  });
});

describe('last_seen_at from the ingest', () => {
  it('is written once for a burst of hundreds of points within a minute, and again a minute later', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'busy', phys_id: '' });
    // Two containers of the ingest, each with its own memory.
    const [a, b] = [seenRecorder(db), seenRecorder(db)];
    const t0 = Date.parse('2026-11-29T10:00:00.000Z');
    const at = (ms: number) => new Date(t0 + ms).toISOString();

    for (let i = 0; i < 300; i++) await (i % 2 ? a : b)(workspace_id, device.id, at(i * 100)); // 30 s of points
    expect((await storedDevice(workspace_id, device.id)).last_seen_at).toBe(at(0));
    expect((await getDevice(db, caller, workspace_id, device.id)).last_seen_at).toBe(at(0));

    await a(workspace_id, device.id, at(61_000));
    await b(workspace_id, device.id, at(62_000)); // within a minute of what is stored: not written
    expect((await storedDevice(workspace_id, device.id)).last_seen_at).toBe(at(61_000));
  });

  it('never recreates a device that is gone', async () => {
    const { workspace_id } = await newAccount(db);
    await seenRecorder(db)(workspace_id, 'dev-gone000000000000000', new Date().toISOString());
    expect(
      (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspace_id, 'dev-gone000000000000000'), ConsistentRead: true }))).Item,
    ).toBeUndefined();
  });
});

describe('the device event log', () => {
  it('keeps connections, jobs and FOTA newest first, pages by `before`, never a data point, and sets the firmware of a FOTA done', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'logged', phys_id: '' });
    const place = { workspace_id, fleet_id: default_fleet_id, device_id: device.id };
    const fota = (status: string, extra = {}) => ({
      scheduled_at: '2026-11-29T10:00:00.000Z',
      status,
      value: { firmware_id: 'app', firmware_version: '2.0' },
      ...extra,
    });
    const messages: ForwardMessage[] = [
      eventMessage(place, 'connection', 'd2c', { device_ip: '10.0.0.1' }, '2026-11-29T10:00:01.000001Z'),
      eventMessage(place, 'data', 'd2c', { tag: 't', size: 2 }, '2026-11-29T10:00:02.000000Z'),
      eventMessage(place, 'fota', 'c2d', fota('pending'), '2026-11-29T10:00:03.000000Z'),
      eventMessage(place, 'fota', 'd2c', fota('done'), '2026-11-29T10:00:04.000000Z'),
      eventMessage(place, 'authentication', 'd2c', { result: 'granted' }, '2026-11-29T10:00:05.000000Z'),
      eventMessage(place, 'status', 'd2c', { big: 'x'.repeat(10_000) }, '2026-11-29T10:00:06.000Z'),
    ];

    await recordDeviceEvents(db, messages);
    await recordDeviceEvents(db, messages); // a retried batch adds nothing

    const all = await listDeviceEvents(db, caller, workspace_id, device.id, {});
    expect(all.events.map((e) => `${e.type} ${e.direction}`)).toEqual(['status d2c', 'fota d2c', 'fota c2d', 'connection d2c']);
    expect(all.events[0].payload).toEqual({ truncated: true, size: expect.any(Number) });
    expect(all.next).toBeNull();
    const first = await listDeviceEvents(db, caller, workspace_id, device.id, { limit: 2 });
    expect(first.events.map((e) => e.ts)).toEqual([all.events[0].ts, all.events[1].ts]);
    const second = await listDeviceEvents(db, caller, workspace_id, device.id, { limit: 2, before: first.next! });
    expect(second.events.map((e) => e.ts)).toEqual([all.events[2].ts, all.events[3].ts]);
    expect((await getDevice(db, caller, workspace_id, device.id)).firmware_version).toBe('2.0');

    // A late outcome of a FOTA that ended otherwise names no firmware the device runs.
    await recordDeviceEvents(db, [
      eventMessage(place, 'fota', 'd2c', { ...fota('done'), value: { firmware_id: 'app', firmware_version: '3.0' }, late_outcome: {} }),
    ]);
    expect((await getDevice(db, caller, workspace_id, device.id)).firmware_version).toBe('2.0');
  });

  it('keeps a payload as deep as a device may send (32 levels), with an empty key, as it was', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const device = await createDevice(db, caller, workspace_id, { name: 'deep', phys_id: '' });
    const place = { workspace_id, fleet_id: default_fleet_id, device_id: device.id };
    let deep: unknown = { '': '😀\uffff', n: 1e300 };
    for (let i = 1; i < 32; i++) deep = { [`l${i}`]: deep };
    const result = { scheduled_at: '2026-11-29T10:00:00.000Z', status: 'done', value: { step: 1 }, result: deep };

    await recordDeviceEvents(db, [eventMessage(place, 'job', 'd2c', result, '2026-11-29T10:00:01.000000Z')]);

    const { events } = await listDeviceEvents(db, caller, workspace_id, device.id, {});
    expect(events.map((e) => e.payload)).toEqual([result]);
  });

  it('is 404 for another account’s device', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    const device = await createDevice(db, mine.caller, mine.workspace_id, { name: 'mine', phys_id: '' });
    await expect(listDeviceEvents(db, theirs.caller, mine.workspace_id, device.id, {})).rejects.toThrow(NotFoundError);
    await expect(listDeviceEvents(db, theirs.caller, theirs.workspace_id, device.id, {})).rejects.toThrow(NotFoundError);
  });
});

describe('the overview', () => {
  it('counts devices online, offline, silent and never seen, their firmware, per fleet and in total, and those not yet compliant', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const lab = await createFleet(db, caller, workspace_id, { name: 'lab', description: '' });
    const empty = await createFleet(db, caller, workspace_id, { name: 'empty', description: '' });
    const now = Date.now();
    const ago = (minutes: number) => new Date(now - minutes * 60_000).toISOString();
    const seed = (i: number, fleet: string, fields: Record<string, unknown>) => ({
      ...deviceKey(workspace_id, `dev-seed${String(i).padStart(15, '0')}`),
      id: `dev-seed${String(i).padStart(15, '0')}`,
      name: `d${i}`,
      account_id: caller.accountId,
      workspace_id,
      fleet_id: fleet,
      phys_id: '',
      created_at: ago(100),
      ...fields,
    });
    await putAll(
      db,
      [
        // Its state applied but for `mode`, which it reports otherwise.
        seed(1, default_fleet_id, {
          connected: true,
          last_seen_at: ago(1),
          firmware_version: '1.0',
          state: { desired: { interval: 60, mode: 'eco' }, reported: { interval: 60, mode: 'full' }, version: 1, desired_at: {}, reported_at: {} },
        }),
        seed(2, default_fleet_id, { connected: true, last_seen_at: ago(30), firmware_version: '1.0' }), // silent though connected
        // Nothing reported yet: both keys not applied.
        seed(3, default_fleet_id, {
          connected: false,
          last_seen_at: ago(60),
          state: { desired: { interval: 60, mode: 'eco' }, reported: {}, version: 1, desired_at: {}, reported_at: {} },
        }),
        seed(4, lab.id, { connected: false }), // never seen
        // Compliant: reports what it is told, and more.
        seed(5, lab.id, {
          connected: true,
          last_seen_at: ago(2),
          firmware_version: '2.0',
          state: { desired: { interval: 30 }, reported: { interval: 30, fw_version: '2.0' }, version: 1, desired_at: {}, reported_at: {} },
        }),
      ],
      4,
    );

    const o = await getOverview(db, caller, workspace_id);

    expect(o.silent_after).toBe(900);
    expect(o.totals).toEqual({
      devices: 5,
      online: 3,
      offline: 2,
      silent: 2,
      never_seen: 1,
      firmware: [
        { version: '1.0', devices: 2 },
        { version: 'unknown', devices: 2 },
        { version: '2.0', devices: 1 },
      ],
    });
    const byName = Object.fromEntries(o.fleets.map((f) => [f.fleet_name, f]));
    expect(byName.default).toMatchObject({ devices: 3, online: 2, offline: 1, silent: 2, never_seen: 0 });
    expect(byName.lab).toMatchObject({ devices: 2, online: 1, offline: 1, silent: 0, never_seen: 1 });
    expect(byName.empty).toMatchObject({ fleet_id: empty.id, devices: 0, firmware: [] });
    expect(o).toMatchObject({ rollouts: [], webhooks: [], open_alarms: { critical: 0, major: 0, minor: 0, warning: 0, total: 0 } });
    expect(o.non_compliant).toEqual({
      devices: 2,
      keys: [
        { key: 'mode', devices: 2 },
        { key: 'interval', devices: 1 },
      ],
    });
    // A longer threshold: nobody is silent for two hours.
    expect((await getOverview(db, caller, workspace_id, { silentAfterSeconds: 7200 })).totals.silent).toBe(0);
  });

  it('counts the alarms not closed by severity, each transition once, whatever its retries', async () => {
    const { caller, workspace_id, default_fleet_id } = await newAccount(db);
    const deps: AlarmDeps = { db, notify: async () => undefined };
    const rule = (severity: 'critical' | 'warning') =>
      createAlarmRule(db, caller, workspace_id, {
        name: severity,
        kind: 'offline',
        severity,
        for_seconds: 60,
        enabled: true,
      }) as Promise<unknown> as Promise<AlarmRuleRecord>;
    const [critical, warning] = [
      { ...(await rule('critical')), workspace_id },
      { ...(await rule('warning')), workspace_id },
    ];
    const place = (i: number) => ({ workspace_id, fleet_id: default_fleet_id, device_id: `dev-counted${i}` });
    const opened = [];
    for (let i = 0; i < 3; i++) opened.push(await openAlarm(deps, critical, place(i), { details: {}, transitionId: `t-open-c-${i}` }));
    // Opened again under the same transition (a retried batch): counted once.
    await openAlarm(deps, critical, place(0), { details: {}, transitionId: 't-open-c-0' });
    const warned = await openAlarm(deps, warning, place(0), { details: {}, transitionId: 't-open-w-0' });
    // Acknowledged: still not closed. Closed (twice, as a retry would): one fewer.
    await acknowledgeAlarm(deps, caller, workspace_id, opened[1]!.id, {});
    await closeAlarm(deps, critical.id, place(2).device_id, { transitionId: 't-close-c-2' });
    await closeAlarm(deps, critical.id, place(2).device_id, { transitionId: 't-close-c-2' });

    const o = await getOverview(db, caller, workspace_id);
    expect(o.open_alarms).toEqual({ critical: 2, major: 0, minor: 0, warning: 1, total: 3 });
    // A shard below zero (an alarm opened before the counts, closed since) counts nothing: the shard
    // next to the warning alarm's own, which holds its +1 and must stay counted.
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: alarmCountKey(workspace_id, (shardOfDevice(warned!.id) + 1) % INDEX_SHARDS),
        UpdateExpression: 'ADD warning :m',
        ExpressionAttributeValues: { ':m': -5 },
      }),
    );
    expect((await getOverview(db, caller, workspace_id)).open_alarms).toMatchObject({ warning: 1, total: 3 });
  });

  it('is 404 for another account’s workspace', async () => {
    const mine = await newAccount(db);
    const theirs = await newAccount(db);
    await expect(getOverview(db, theirs.caller, mine.workspace_id)).rejects.toThrow(NotFoundError);
  });
});
