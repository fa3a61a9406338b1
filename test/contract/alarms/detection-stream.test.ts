/**
 * The alarms' detection end to end on DynamoDB Local, with the registry stream's consumer running on
 * the table's stream (its handler, as deployed) and the minute sweep called with its clock ahead:
 * alarm rules made by the API's domain function, alarms opened and closed by the real transitions,
 * told on a notifications queue (fauxqs).
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { until } from '../../../local/ports';

// The consumer reads REGISTRY_TABLE once, when lambdas/shared/env.ts loads: set it first.
Object.assign(process.env, { REGISTRY_TABLE: `test-${randomUUID()}`, FORWARD_QUEUE_URL: '' });
const { freshQueue, sqsClient } = await import('../../helpers/sqs');
const queue = await freshQueue();
// Read at each send.
process.env.ALARM_NOTIFICATIONS_QUEUE_URL = queue.url;
const { freshTable } = await import('../../helpers/db');
const { REGISTRY_SWEEP_INDEX, alarmTimerKey } = await import('../../../lambdas/stores/keys');
const db = await freshTable(process.env.REGISTRY_TABLE, { stream: true, indexes: [REGISTRY_SWEEP_INDEX] });
const { createAlarmRule } = await import('../../../lambdas/domain/alarms/rules');
const { sweepAlarmTimers } = await import('../../../lambdas/domain/alarms/alarm-sweep');
const { detectionDeps } = await import('../../../lambdas/domain/alarms/detection');
const { getAlarmOfWorkspace, getOpenAlarmGuard, readAlarmsOfWorkspace } = await import('../../../lambdas/stores/alarm-store');
const { putTimerIfAbsent } = await import('../../../lambdas/stores/alarm-timer-store');
const { setDeviceConnection } = await import('../../../lambdas/stores/device-mqtt-store');
const { markDeviceSeen } = await import('../../../lambdas/stores/device-health-store');
const { workspaceWithFleets } = await import('../../helpers/fleets');
const { runRegistryStream } = await import('../../helpers/registry-stream');
await runRegistryStream(db);

const MINUTE = 60_000;
type Setup = Awaited<ReturnType<typeof workspaceWithFleets>>;

/** One run of the minute sweep's alarm part with its clock `ahead` ms in the future. */
const sweep = (ahead: number) => {
  const now = Date.now() + ahead;
  return sweepAlarmTimers({ ...detectionDeps(db), now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });
};
const timerOf = async (deviceId: string, ruleId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmTimerKey(deviceId, ruleId), ConsistentRead: true }))).Item;
const alarmsOf = async (workspaceId: string) => {
  const alarms = [];
  for await (const { value } of readAlarmsOfWorkspace(db, workspaceId, {}, {})) alarms.push(value);
  return alarms;
};
const ruleOf = (setup: Setup, body: { kind: 'offline' | 'silent'; fleets?: string[] }) =>
  createAlarmRule(db, setup.caller, setup.workspace_id, {
    name: `${body.kind} for a minute`,
    kind: body.kind,
    severity: 'major',
    for_seconds: 60,
    enabled: true,
    ...(body.fleets ? { target: { fleets: body.fleets } } : {}),
  });

/** Every transition told so far (received and deleted from the queue), accumulated. */
const told: Array<{ id: string; event: string; alarm: { id: string; device_id: string; status: string } }> = [];
const drain = async () => {
  for (;;) {
    const { Messages = [] } = await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    if (!Messages.length) return told;
    told.push(...Messages.map((m) => JSON.parse(m.Body!)));
    await sqsClient().send(
      new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }),
    );
  }
};

describe('an offline rule, through the registry stream and the sweep', () => {
  it('opens once for_seconds after a disconnection, however often the sweep is retried, and closes at the reconnection', async () => {
    const setup = await workspaceWithFleets(db, 2);
    const rule = await ruleOf(setup, { kind: 'offline', fleets: [setup.north.id] });
    const [device, connectedOne] = setup.inNorth;
    const t0 = Date.now();
    for (const d of [device, connectedOne, setup.inSouth])
      await setDeviceConnection(db, setup.workspace_id, d.id, true, new Date(t0 - 5000).toISOString(), t0 - 5000);
    await setDeviceConnection(db, setup.workspace_id, device.id, false, new Date(t0).toISOString(), t0);
    // Not targeted: another fleet.
    await setDeviceConnection(db, setup.workspace_id, setup.inSouth.id, false, new Date(t0).toISOString(), t0);
    await until(async () => (await timerOf(device.id, rule.id)) !== undefined, 'the disconnection’s timer', 30_000);

    expect((await sweep(0)).opened).toBe(0);
    expect(await getOpenAlarmGuard(db, rule.id, device.id)).toBeUndefined();
    expect((await sweep(MINUTE + 1000)).opened).toBe(1);
    const guard = await getOpenAlarmGuard(db, rule.id, device.id);
    expect(await getAlarmOfWorkspace(db, setup.workspace_id, guard!.alarm_id)).toMatchObject({
      rule_id: rule.id,
      kind: 'offline',
      device_id: device.id,
      fleet_id: setup.north.id,
      status: 'open',
      details: { disconnected_at: new Date(t0).toISOString() },
    });
    // A sweep that died after opening, before ending its timer: the retry opens nothing more.
    await putTimerIfAbsent(
      db,
      {
        workspace_id: setup.workspace_id,
        account_id: setup.account_id,
        device_id: device.id,
        rule_id: rule.id,
        kind: 'offline',
        since: new Date(t0).toISOString(),
      },
      t0 + MINUTE,
    );
    await sweep(MINUTE + 2000);
    await sweep(MINUTE + 3000);
    expect(await alarmsOf(setup.workspace_id)).toHaveLength(1);
    expect(await timerOf(setup.inSouth.id, rule.id)).toBeUndefined();

    await setDeviceConnection(db, setup.workspace_id, device.id, true, new Date(t0 + 2 * MINUTE).toISOString(), t0 + 2 * MINUTE);
    await until(async () => (await getOpenAlarmGuard(db, rule.id, device.id)) === undefined, 'the alarm closed by the reconnection', 30_000);
    const [closed] = await alarmsOf(setup.workspace_id);
    expect(closed).toMatchObject({ id: guard!.alarm_id, status: 'closed', details: { connected_at: new Date(t0 + 2 * MINUTE).toISOString() } });

    // Told once per transition ID (the retry told its opening again: the notifier is idempotent by ID).
    const ofAlarm = (await drain()).filter((t) => t.alarm.id === guard!.alarm_id);
    expect([...new Set(ofAlarm.map((t) => `${t.id} ${t.event}`))].sort()).toEqual([`${guard!.alarm_id}:closed closed`, `${guard!.alarm_id}:opened opened`]);
  });
});

describe('a silent rule, through the registry stream and the sweep', () => {
  it('moves its timer while the device publishes, without opening', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const rule = await ruleOf(setup, { kind: 'silent' });
    const [device] = setup.inNorth;
    const t0 = Date.now();
    await markDeviceSeen(db, setup.workspace_id, device.id, new Date(t0).toISOString());
    await until(async () => (await timerOf(device.id, rule.id)) !== undefined, 'the first point’s timer', 30_000);
    // Points a minute later: last_seen_at moves (ingest writes it once a minute at most).
    await markDeviceSeen(db, setup.workspace_id, device.id, new Date(t0 + 61_000).toISOString());

    expect(await sweep(MINUTE + 1000)).toMatchObject({ opened: 0, moved: 1 });
    expect(await timerOf(device.id, rule.id)).toMatchObject({ since: new Date(t0 + 61_000).toISOString(), due_at: new Date(t0 + 121_000).toISOString() });
    expect(await alarmsOf(setup.workspace_id)).toEqual([]);
    // Then silent: it opens.
    expect(await sweep(2 * MINUTE + 2000)).toMatchObject({ opened: 1 });
    expect(await alarmsOf(setup.workspace_id)).toEqual([
      expect.objectContaining({ kind: 'silent', status: 'open', details: { last_seen_at: new Date(t0 + 61_000).toISOString() } }),
    ]);
  });
});
