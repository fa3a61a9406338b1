/**
 * `threshold` rules at ingest, on DynamoDB Local with the real alarms' transitions (their
 * notifications recorded): crossings open and close, hysteresis between clear_value and value,
 * for_seconds's timer cancelled by a point back on the good side or opened by the sweep, a
 * retried batch writing nothing twice, and the requests it costs (local/request-counter.ts).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { sweepAlarmTimers } from '../../../lambdas/domain/alarms/alarm-sweep';
import { closeAlarm, openAlarm, type AlarmDeps } from '../../../lambdas/domain/alarms/alarms';
import { targetReader, type DetectionDeps } from '../../../lambdas/domain/alarms/detection';
import { alarmRulesCache } from '../../../lambdas/domain/alarms/rule-cache';
import { createAlarmRule } from '../../../lambdas/domain/alarms/rules';
import { thresholdSides, type ThresholdRule } from '../../../lambdas/domain/alarms/threshold';
import { detectThresholds, type ThresholdDetection, type ThresholdMessage } from '../../../lambdas/domain/alarms/threshold-ingest';
import { workspaceSettings } from '../../../lambdas/domain/registry/device-places';
import type { Db } from '../../../lambdas/shared/clients';
import type { AlarmTransition } from '../../../lambdas/schemas/alarm-transitions';
import { CreateAlarmRuleBodySchema } from '../../../lambdas/schemas/alarms';
import { readAlarmsOfWorkspace } from '../../../lambdas/stores/alarm-store';
import { getDeviceOfWorkspace } from '../../../lambdas/stores/device-store';
import { alarmTimerKey, REGISTRY_SWEEP_INDEX } from '../../../lambdas/stores/keys';
import { asCaller, instrumentAwsSdk, requestCounter } from '../../../local/request-counter';
import { workspaceWithFleets } from '../../helpers/fleets';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable(undefined, { indexes: [REGISTRY_SWEEP_INDEX] });
  instrumentAwsSdk();
});

type Setup = Awaited<ReturnType<typeof workspaceWithFleets>>;

/** A threshold rule on `env`'s temp > 8 (clear at 7) of the north fleet's devices. */
const ruleIn = async (setup: Setup, overrides: Record<string, unknown> = {}) =>
  createAlarmRule(
    db,
    setup.caller,
    setup.workspace_id,
    CreateAlarmRuleBodySchema.parse({
      name: 'cold room too warm',
      kind: 'threshold',
      severity: 'critical',
      target: { fleets: [setup.north.id] },
      tag: 'env',
      field: 'env.temp',
      op: '>',
      value: 8,
      clear_value: 7,
      ...overrides,
    }),
  );

/** An ingest container's threshold evaluation, its alarms' transitions recorded in order. */
const container = () => {
  const told: AlarmTransition[] = [];
  const alarms: AlarmDeps = { db, notify: async (t) => void told.push(t) };
  const deps: DetectionDeps<ThresholdRule> = {
    db,
    rules: alarmRulesCache(db, { ttlMs: 60_000 }),
    open: (rule, place, transition) => openAlarm(alarms, rule, place, transition),
    close: (ruleId, deviceId, transition) => closeAlarm(alarms, ruleId, deviceId, transition),
  };
  const detection: ThresholdDetection = {
    deps,
    settings: workspaceSettings(db, { ttlMs: 60_000, max: 100 }),
    device: (workspaceId, deviceId) => getDeviceOfWorkspace(db, workspaceId, deviceId) as Promise<Record<string, unknown> | undefined>,
    sides: thresholdSides(),
    targets: () => targetReader(db),
    concurrency: 4,
  };
  return { detection, told, deps };
};

const iso = (ms: number) => new Date(ms).toISOString();

/** A data message of one device arrived at `arrived` (ms), its points' payloads on `tag` (default `env`). */
const message = (setup: Setup, device: { id: string; fleet_id: string; name: string }, arrived: number, temps: number[], tag = 'env'): ThresholdMessage => ({
  account_id: setup.account_id,
  workspace_id: setup.workspace_id,
  fleet_id: device.fleet_id,
  device_id: device.id,
  device_name: device.name,
  timestamp_in: iso(arrived),
  points: temps.map((temp, i) => ({ tag, timestamp_device: iso(arrived - 1000 + i), payload: { env: { temp }, other: 1 } })),
});

const alarmsOf = async (workspaceId: string) => {
  const alarms = [];
  for await (const { value } of readAlarmsOfWorkspace(db, workspaceId, {}, {})) alarms.push(value);
  return alarms;
};
const timerOf = async (deviceId: string, ruleId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmTimerKey(deviceId, ruleId), ConsistentRead: true }))).Item;

/** The DynamoDB requests `fn` makes, by operation. */
let runs = 0;
const requestsOf = async (fn: () => Promise<unknown>) => {
  const caller = `threshold-test-${++runs}`;
  await asCaller(caller, fn);
  const counts: Record<string, number> = {};
  for (const row of requestCounter().rows()) if (row.caller === caller) counts[row.operation] = (counts[row.operation] ?? 0) + row.requests;
  return counts;
};

describe('a threshold rule with for_seconds 0', () => {
  it('opens at the first breaching point, holds between clear_value and value, closes past clear_value; a retried batch writes nothing twice', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const rule = await ruleIn(setup);
    const [device] = setup.inNorth;
    const { detection, told } = container();
    const t = Date.now();
    const warm = [
      message(setup, device, t, [5]),
      message(setup, device, t + 1000, [9, 7.5]),
      // Another tag, and a point without the field: not evaluated.
      message(setup, device, t + 2000, [1], 'hum'),
      { ...message(setup, device, t + 3000, []), points: [{ tag: 'env', timestamp_device: iso(t + 2500), payload: { env: {} } }] },
      message(setup, device, t + 4000, [9.5]),
      // Another fleet's device is not targeted.
      message(setup, setup.inSouth, t, [20]),
    ];
    expect(await detectThresholds(detection, warm)).toEqual(new Set());
    expect(told.map((x) => x.event)).toEqual(['opened']);
    expect(told[0].alarm).toMatchObject({
      kind: 'threshold',
      device_id: device.id,
      status: 'open',
      details: { field: 'env.temp', value: 9, tag: 'env', timestamp: iso(t), arrived_at: iso(t + 1000) },
    });
    // 7.5 is between clear_value and value: still open. 7 is not above clear_value: closed.
    const cool = [message(setup, device, t + 5000, [7.2, 7]), message(setup, device, t + 6000, [7.9])];
    expect(await detectThresholds(detection, cool)).toEqual(new Set());
    expect(told.map((x) => x.event)).toEqual(['opened', 'closed']);
    expect(told[1].alarm.details).toMatchObject({ value: 9, closed_value: 7 });

    // Retried in the same container: nothing (the points are behind the newest evaluated).
    expect(await requestsOf(() => detectThresholds(detection, [...warm, ...cool]))).toEqual({});
    // Retried in another container (it reads the stored state): the same transitions, told again, written once.
    const other = container();
    expect(await detectThresholds(other.detection, warm)).toEqual(new Set());
    expect(await detectThresholds(other.detection, cool)).toEqual(new Set());
    expect(other.told.map((x) => x.id)).toEqual(told.map((x) => x.id));
    const alarms = await alarmsOf(setup.workspace_id);
    expect(alarms.map((a) => [a.rule_id, a.status])).toEqual([[rule.id, 'closed']]);
  });
});

describe('a threshold rule with for_seconds', () => {
  it('starts a timer at the first breaching point, cancels it at a point back below value, and the sweep opens one that held', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const rule = await ruleIn(setup, { for_seconds: 300 });
    const [device] = setup.inNorth;
    const { detection, told, deps } = container();
    const t = Date.now();
    await detectThresholds(detection, [message(setup, device, t, [9])]);
    expect(await timerOf(device.id, rule.id)).toMatchObject({ kind: 'threshold', since: iso(t), due_at: iso(t + 300_000) });
    // Back at 7.5 (below value, above clear_value) before for_seconds: cancelled, nothing opens.
    await detectThresholds(detection, [message(setup, device, t + 10_000, [8.5, 7.5])]);
    expect(await timerOf(device.id, rule.id)).toBeUndefined();
    await detectThresholds(detection, [message(setup, device, t + 20_000, [9.1]), message(setup, device, t + 30_000, [12])]);
    expect(await timerOf(device.id, rule.id)).toMatchObject({ since: iso(t + 20_000), due_at: iso(t + 320_000) });
    expect(told).toEqual([]);

    // The sweep, 321 s on: every point since the timer's start breached, the alarm opens.
    const ahead = 321_000 - (Date.now() - t);
    const now = Date.now() + ahead;
    const summary = await sweepAlarmTimers({ ...deps, now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });
    expect(summary).toMatchObject({ opened: 1 });
    expect(await timerOf(device.id, rule.id)).toBeUndefined();
    expect(told.map((x) => [x.event, x.alarm.details])).toEqual([['opened', expect.objectContaining({ value: 9.1, arrived_at: iso(t + 20_000) })]]);

    // The ingest's next point after for_seconds finds it opened (the same transition), 7.5 holds it, 6.9 closes it.
    await detectThresholds(detection, [message(setup, device, t + 330_000, [7.5])]);
    expect(new Set(told.map((x) => x.id)).size).toBe(1);
    await detectThresholds(detection, [message(setup, device, t + 340_000, [6.9])]);
    expect(told.map((x) => x.event).at(-1)).toBe('closed');
    expect((await alarmsOf(setup.workspace_id)).map((a) => a.status)).toEqual(['closed']);
  });

  it('a timer cancelled before the sweep runs opens nothing', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const rule = await ruleIn(setup, { for_seconds: 60 });
    const [device] = setup.inNorth;
    const { detection, told, deps } = container();
    const t = Date.now();
    await detectThresholds(detection, [message(setup, device, t, [9])]);
    await detectThresholds(detection, [message(setup, device, t + 5_000, [8])]);
    const now = Date.now() + 120_000;
    await sweepAlarmTimers({ ...deps, now: () => Date.now() + 120_000 }, { now, deadline: now + 40_000 });
    expect(await timerOf(device.id, rule.id)).toBeUndefined();
    expect(told).toEqual([]);
    expect(await alarmsOf(setup.workspace_id)).toEqual([]);
  });
});

describe('cost', () => {
  it('a workspace without rules: no request; with a rule: one read of what the container does not know, then none per point but at crossings', async () => {
    const bare = await workspaceWithFleets(db, 1);
    const { detection } = container();
    const points = (setup: Setup, device: Setup['inSouth'], from: number, temps: number[]) =>
      temps.map((temp, i) => message(setup, device, from + i * 10, [temp]));
    // The ingest reads the workspace's settings for its retention anyway: warm, as the batch leaves them.
    await detection.settings(bare.account_id, bare.workspace_id);
    const t = Date.now();
    expect(await requestsOf(() => detectThresholds(detection, points(bare, bare.inNorth[0], t, Array(100).fill(20))))).toEqual({});

    const setup = await workspaceWithFleets(db, 3);
    await ruleIn(setup);
    await detection.settings(setup.account_id, setup.workspace_id);
    const batch = (from: number, temps: (i: number) => number) =>
      setup.inNorth.flatMap((device) =>
        points(
          setup,
          device,
          from,
          Array.from({ length: 100 }, (_, i) => temps(i)),
        ),
      );
    // The first batch: the rules (their version's read, the rules' query), and the three devices' states in one read.
    expect(
      await requestsOf(() =>
        detectThresholds(
          detection,
          batch(t, () => 5),
        ),
      ),
    ).toEqual({ GetItem: 1, Query: 1, BatchGetItem: 1 });
    // 300 points more: nothing.
    expect(
      await requestsOf(() =>
        detectThresholds(
          detection,
          batch(t + 2000, () => 6),
        ),
      ),
    ).toEqual({});
    // A crossing on each device (up at the 50th point): one transaction each, no read back of the alarm.
    expect(
      await requestsOf(() =>
        detectThresholds(
          detection,
          batch(t + 4000, (i) => (i >= 50 ? 9 : 6)),
        ),
      ),
    ).toEqual({ TransactWriteItems: 3 });
  });
});
