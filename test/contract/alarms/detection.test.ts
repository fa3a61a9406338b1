/**
 * The alarms' detection on DynamoDB Local: the registry stream's device changes (records built as
 * the stream writes them) start and end timers in the sweep index; the sweep, with its clock ahead,
 * reads only the due timers and opens, moves or closes by kind; a workspace without rules costs
 * the stream consumer no request.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { sweepAlarmTimers } from '../../../lambdas/domain/alarms/alarm-sweep';
import type { DetectedRule, DetectionDeps } from '../../../lambdas/domain/alarms/detection';
import { followDeviceAlarms } from '../../../lambdas/domain/alarms/device-changes';
import { followConditionAlarms } from '../../../lambdas/domain/alarms/condition-changes';
import { alarmRulesCache } from '../../../lambdas/domain/alarms/rule-cache';
import type { Db } from '../../../lambdas/shared/clients';
import { markDeviceSeen } from '../../../lambdas/stores/device-health-store';
import { setDeviceConnection } from '../../../lambdas/stores/device-mqtt-store';
import { alarmTimerKey, conditionKey, deviceKey, REGISTRY_SWEEP_INDEX, shardOfDevice } from '../../../lambdas/stores/keys';
import { freshTable } from '../../helpers/db';
import { workspaceWithFleets } from '../../helpers/fleets';

let db: Db;
let sequence = 0;
const MINUTE = 60_000;

/** The stream record of a device item's change, as DynamoDB writes it (NEW_AND_OLD_IMAGES). */
const recordOf = (after: Record<string, unknown>, before: Record<string, unknown>): DynamoDBRecord => {
  sequence += 1;
  return {
    eventID: `e${sequence}`,
    eventName: 'MODIFY',
    dynamodb: {
      Keys: marshall({ pk: after.pk, sk: after.sk }) as never,
      NewImage: marshall(after, { removeUndefinedValues: true }) as never,
      OldImage: marshall(before, { removeUndefinedValues: true }) as never,
      SequenceNumber: String(sequence).padStart(21, '0'),
    },
  };
};
const itemOf = async (workspaceId: string, deviceId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId), ConsistentRead: true }))).Item!;
const timerOf = async (deviceId: string, ruleId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmTimerKey(deviceId, ruleId), ConsistentRead: true }))).Item;

/** A device item's change made by `write`, as its stream record. */
const changed = async (workspaceId: string, deviceId: string, write: () => Promise<unknown>) => {
  const before = await itemOf(workspaceId, deviceId);
  await write();
  return recordOf(await itemOf(workspaceId, deviceId), before);
};
const connection = (workspaceId: string, deviceId: string, connected: boolean, at: number) =>
  changed(workspaceId, deviceId, () => setDeviceConnection(db, workspaceId, deviceId, connected, new Date(at).toISOString(), at));

/** The transitions the detection asked for, in order. */
interface Told {
  event: 'open' | 'close';
  ruleId: string;
  deviceId: string;
  transitionId: string;
  details?: Record<string, unknown>;
}

/** Detection deps over a fixed list of rules, recording the transitions asked (each once per transition ID, as the alarms' store writes them). */
const detection = (rules: DetectedRule[], client: Db = db) => {
  const told: Told[] = [];
  const ids = new Set<string>();
  const tell = async (t: Told) => {
    if (ids.has(t.transitionId)) return;
    ids.add(t.transitionId);
    told.push(t);
  };
  const deps: DetectionDeps & { concurrency: number } = {
    db: client,
    concurrency: 4,
    rules: async ({ workspace_id }) => rules.filter((r) => r.workspace_id === workspace_id),
    open: (rule, place, { transitionId, details }) => tell({ event: 'open', ruleId: rule.id, deviceId: place.device_id, transitionId, details }),
    close: (ruleId, deviceId, { transitionId, details }) => tell({ event: 'close', ruleId, deviceId, transitionId, details }),
  };
  return { deps, told };
};

/** One run of the sweep with its clock `ahead` ms in the future. */
const sweep = (deps: DetectionDeps, ahead: number) => {
  const now = Date.now() + ahead;
  return sweepAlarmTimers({ ...deps, now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });
};

const ruleOf = (setup: { account_id: string; workspace_id: string }, id: string, kind: DetectedRule['kind'], target: Partial<DetectedRule['target']> = {}) => ({
  id,
  kind,
  for_seconds: 60,
  enabled: true,
  tag: null,
  target: { fleets: [], group: null, q: null, ...target },
  workspace_id: setup.workspace_id,
  account_id: setup.account_id,
});

/** A wrapped client counting each command it sends, by name. */
const counting = (inner: Db) => {
  const counts: Record<string, number> = {};
  const doc = {
    send: (command: { constructor: { name: string } }) => {
      counts[command.constructor.name] = (counts[command.constructor.name] ?? 0) + 1;
      return inner.doc.send(command as never);
    },
  };
  return { db: { ...inner, doc } as unknown as Db, counts };
};

beforeAll(async () => {
  db = await freshTable(undefined, { indexes: [REGISTRY_SWEEP_INDEX] });
});

describe('an offline rule', () => {
  it('opens for_seconds after a disconnection, once however often the sweep or the batch runs, and closes at the reconnection', async () => {
    const setup = await workspaceWithFleets(db, 2);
    const [device, other] = setup.inNorth;
    const rule = ruleOf(setup, 'alr-off', 'offline', { fleets: [setup.north.id] });
    const { deps, told } = detection([rule]);
    const t0 = Date.now();
    const batch = [
      await connection(setup.workspace_id, device.id, true, t0 - 5000),
      await connection(setup.workspace_id, device.id, false, t0),
      // Another fleet's device is not targeted.
      await connection(setup.workspace_id, setup.inSouth.id, true, t0 - 5000),
      await connection(setup.workspace_id, setup.inSouth.id, false, t0),
    ];
    expect(await followDeviceAlarms(deps, batch)).toBeUndefined();
    expect(await followDeviceAlarms(deps, batch)).toBeUndefined();
    expect(await timerOf(device.id, rule.id)).toMatchObject({
      kind: 'offline',
      since: new Date(t0).toISOString(),
      due_at: new Date(t0 + MINUTE).toISOString(),
    });
    expect(await timerOf(setup.inSouth.id, rule.id)).toBeUndefined();
    expect(await timerOf(other.id, rule.id)).toBeUndefined();

    // Not due yet.
    expect((await sweep(deps, 0)).opened).toBe(0);
    expect(told).toEqual([]);
    // Due: two overlapping runs, then another.
    await Promise.all([sweep(deps, MINUTE + 1000), sweep(deps, MINUTE + 1000)]);
    await sweep(deps, MINUTE + 2000);
    const since = new Date(t0).toISOString();
    expect(told).toEqual([
      { event: 'open', ruleId: rule.id, deviceId: device.id, transitionId: `offline:${rule.id}:${device.id}:${since}`, details: { disconnected_at: since } },
    ]);
    expect(await timerOf(device.id, rule.id)).toBeUndefined();

    const back = await connection(setup.workspace_id, device.id, true, t0 + 2 * MINUTE);
    expect(await followDeviceAlarms(deps, [back, back])).toBeUndefined();
    expect(told.slice(1)).toEqual([expect.objectContaining({ event: 'close', ruleId: rule.id, deviceId: device.id })]);
  });

  it('handles in the same run a timer that came due while the run handled others, and ends when nothing new is due', async () => {
    const setup = await workspaceWithFleets(db, 2);
    const [early, late] = setup.inNorth;
    const rule = ruleOf(setup, 'alr-burst', 'offline', { fleets: [setup.north.id] });
    const { deps, told } = detection([rule]);
    const t0 = Date.now();
    for (const [device, at] of [
      [early, t0],
      [late, t0 + 30_000],
    ] as const) {
      await connection(setup.workspace_id, device.id, true, t0 - 5000);
      await followDeviceAlarms(deps, [await connection(setup.workspace_id, device.id, false, at)]);
    }
    // The run starts when only the early timer is due; its clock passes the late one's due time as it opens the early alarm.
    let ahead = MINUTE + 1000;
    const now = Date.now() + ahead;
    const opening = { ...deps, open: async (...args: Parameters<DetectionDeps['open']>) => ((ahead = MINUTE + 35_000), deps.open(...args)) };
    const summary = await sweepAlarmTimers({ ...opening, now: () => Date.now() + ahead }, { now, deadline: now + 40_000 });

    expect(summary).toMatchObject({ due: 2, opened: 2 });
    expect(told.map((t) => t.deviceId)).toEqual([early.id, late.id]);
    expect([await timerOf(early.id, rule.id), await timerOf(late.id, rule.id)]).toEqual([undefined, undefined]);
  });

  it('leaves a device that reconnects within for_seconds alone: its timer is deleted', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const [device] = setup.inNorth;
    const rule = ruleOf(setup, 'alr-off2', 'offline');
    const { deps, told } = detection([rule]);
    const t0 = Date.now();
    await connection(setup.workspace_id, device.id, true, t0 - 5000);
    const batch = [await connection(setup.workspace_id, device.id, false, t0), await connection(setup.workspace_id, device.id, true, t0 + 10_000)];
    expect(await followDeviceAlarms(deps, batch)).toBeUndefined();
    expect(await timerOf(device.id, rule.id)).toBeUndefined();
    await sweep(deps, 2 * MINUTE);
    expect(told.filter((t) => t.event === 'open')).toEqual([]);
  });
});

describe('a silent rule', () => {
  it('moves its timer while points come, opens when they stop, and closes at the next point', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const [device] = setup.inNorth;
    const rule = ruleOf(setup, 'alr-sil', 'silent');
    const { deps, told } = detection([rule]);
    const t0 = Date.now();
    const seen = (at: number) => changed(setup.workspace_id, device.id, () => markDeviceSeen(db, setup.workspace_id, device.id, new Date(at).toISOString()));
    expect(await followDeviceAlarms(deps, [await seen(t0)])).toBeUndefined();
    expect(await timerOf(device.id, rule.id)).toMatchObject({ kind: 'silent', due_at: new Date(t0 + MINUTE).toISOString() });

    // A later point moves last_seen_at (its record starts nothing); the due timer moves, no alarm.
    expect(await followDeviceAlarms(deps, [await seen(t0 + 61_000)])).toBeUndefined();
    expect((await sweep(deps, MINUTE + 1000)).moved).toBe(1);
    expect(told).toEqual([]);
    expect(await timerOf(device.id, rule.id)).toMatchObject({ since: new Date(t0 + 61_000).toISOString(), due_at: new Date(t0 + 121_000).toISOString() });

    // No point since: it opens, and watches.
    await sweep(deps, 2 * MINUTE + 2000);
    expect(told).toEqual([expect.objectContaining({ event: 'open', transitionId: `silent:${rule.id}:${device.id}:${new Date(t0 + 61_000).toISOString()}` })]);
    expect(await timerOf(device.id, rule.id)).toMatchObject({ watching: 'close' });
    // Still silent: it stays open.
    await sweep(deps, 4 * MINUTE);
    expect(told).toHaveLength(1);
    // A point: the next look closes it, and the timer waits again from that point (due a minute
    // later, after this run's clock).
    await seen(t0 + 5 * MINUTE);
    await sweep(deps, 5 * MINUTE + 30_000);
    expect(told.slice(1)).toEqual([expect.objectContaining({ event: 'close', ruleId: rule.id, deviceId: device.id })]);
    expect(await timerOf(device.id, rule.id)).toMatchObject({ since: new Date(t0 + 5 * MINUTE).toISOString() });
    expect((await timerOf(device.id, rule.id))!.watching).toBeUndefined();
  });
});

describe('cost', () => {
  it('the sweep reads the due timers, not the devices: one batch read per 50 due timers', async () => {
    const setup = await workspaceWithFleets(db, 60);
    const rule = ruleOf(setup, 'alr-cost', 'offline');
    const { deps } = detection([rule]);
    const t0 = Date.now();
    const offline = setup.inNorth.slice(0, 3);
    for (const device of offline) {
      await connection(setup.workspace_id, device.id, true, t0 - 5000);
      await followDeviceAlarms(deps, [await connection(setup.workspace_id, device.id, false, t0)]);
    }
    // Connected devices cost nothing, whatever their number.
    for (const device of setup.inNorth.slice(3)) await setDeviceConnection(db, setup.workspace_id, device.id, true, new Date(t0).toISOString(), t0);
    // Other tests' timers are due too: this sweep reads them first.
    await sweep(deps, 10 * MINUTE);
    const counted = counting(db);
    for (const device of offline) {
      await connection(setup.workspace_id, device.id, true, t0 + 10 * MINUTE);
      await followDeviceAlarms(deps, [await connection(setup.workspace_id, device.id, false, t0 + 11 * MINUTE)]);
    }
    const summary = await sweep({ ...deps, db: counted.db }, 13 * MINUTE);
    expect(summary).toMatchObject({ due: 3, opened: 3 });
    // 16 partitions queried once each a pass, one batch read per partition holding due timers (up to
    // 50 each), one delete each; a second pass (timers come due as a run handles others) finds nothing new.
    const partitions = new Set(offline.map((device) => shardOfDevice(device.id))).size;
    expect(counted.counts).toEqual({ QueryCommand: 32, BatchGetCommand: partitions, DeleteCommand: 3 });
  });

  it('a workspace without rules: device changes add no request to the stream consumer but the cached read of its rules version', async () => {
    const setup = await workspaceWithFleets(db, 2);
    const counted = counting(db);
    // The production rules: the container's cache (one read of the workspace item per 10 s).
    const cache = alarmRulesCache(counted.db);
    const { deps } = detection([], counted.db);
    const withCache = { ...deps, rules: cache };
    const t0 = Date.now();
    const [a, b] = setup.inNorth;
    const batch = [
      await connection(setup.workspace_id, a.id, true, t0),
      await connection(setup.workspace_id, a.id, false, t0 + 1000),
      await connection(setup.workspace_id, a.id, true, t0 + 2000),
      await changed(setup.workspace_id, b.id, () => markDeviceSeen(db, setup.workspace_id, b.id, new Date(t0).toISOString())),
      // A point's last_seen_at a minute later, a rename: no alarm change at all.
      await changed(setup.workspace_id, b.id, () => markDeviceSeen(db, setup.workspace_id, b.id, new Date(t0 + 61_000).toISOString())),
    ];
    expect(await followDeviceAlarms(withCache, batch)).toBeUndefined();
    expect(counted.counts).toEqual({ GetCommand: 1 });
    expect(await followDeviceAlarms(withCache, batch)).toBeUndefined();
    expect(await followDeviceAlarms(withCache, batch.slice(4))).toBeUndefined();
    expect(counted.counts).toEqual({ GetCommand: 1 });
  });
});

describe('a condition rule', () => {
  /** The stream record of a condition record (stores/condition-store.ts's shape) inserted open, or changed to closed. */
  const conditionRecord = (workspaceId: string, deviceId: string, uuid: string, start: string, closed = false) => {
    const open = {
      pk: `WKS#${workspaceId}`,
      sk: `COND#${start}#${deviceId}#${uuid}`,
      uuid,
      workspace_id: workspaceId,
      device_id: deviceId,
      tag: 'door',
      status: 'open',
      start,
    };
    const record = recordOf(closed ? { ...open, status: 'closed', finish: start } : open, open);
    return closed ? record : { ...record, eventName: 'INSERT' as const, dynamodb: { ...record.dynamodb, OldImage: undefined } };
  };

  it('opens when its condition stays open for_seconds, at once for 0, and closes with it', async () => {
    const setup = await workspaceWithFleets(db, 2);
    const [device, other] = setup.inNorth;
    const held = { ...ruleOf(setup, 'alr-cond', 'condition', { fleets: [setup.north.id] }), tag: 'door' };
    const atOnce = { ...ruleOf(setup, 'alr-cond0', 'condition', { fleets: [setup.south.id] }), for_seconds: 0 };
    const otherTag = { ...ruleOf(setup, 'alr-cond-t', 'condition'), tag: 'power' };
    const { deps, told } = detection([held, atOnce, otherTag]);
    const start = new Date().toISOString();
    // The device's pointer by uuid says it is open (what the sweep checks).
    const pointer = (deviceId: string, uuid: string) =>
      db.doc.send(
        new PutCommand({ TableName: db.table, Item: { ...conditionKey(deviceId, uuid), uuid, tag: 'door', start, workspace_id: setup.workspace_id } }),
      );
    await pointer(device.id, 'u1');
    await pointer(setup.inSouth.id, 'u2');
    const opened = [conditionRecord(setup.workspace_id, device.id, 'u1', start), conditionRecord(setup.workspace_id, setup.inSouth.id, 'u2', start)];
    expect(await followConditionAlarms(deps, opened)).toBeUndefined();
    expect(await followConditionAlarms(deps, opened)).toBeUndefined();
    expect(told).toEqual([expect.objectContaining({ event: 'open', ruleId: atOnce.id, deviceId: setup.inSouth.id })]);
    expect(await timerOf(device.id, held.id)).toMatchObject({ kind: 'condition', condition_uuid: 'u1', since: start });
    expect(await timerOf(device.id, otherTag.id)).toBeUndefined();
    expect(await timerOf(other.id, held.id)).toBeUndefined();

    await sweep(deps, MINUTE + 1000);
    expect(told.slice(1)).toEqual([
      expect.objectContaining({ event: 'open', ruleId: held.id, deviceId: device.id, transitionId: `condition:${held.id}:${device.id}:u1:${start}` }),
    ]);
    const closed = conditionRecord(setup.workspace_id, device.id, 'u1', start, true);
    expect(await followConditionAlarms(deps, [closed, closed])).toBeUndefined();
    expect(told.slice(2)).toEqual([expect.objectContaining({ event: 'close', ruleId: held.id, deviceId: device.id })]);
  });

  it('does not open when its condition closed before for_seconds', async () => {
    const setup = await workspaceWithFleets(db, 1);
    const [device] = setup.inNorth;
    const rule = ruleOf(setup, 'alr-cond2', 'condition');
    const { deps, told } = detection([rule]);
    const start = new Date().toISOString();
    expect(await followConditionAlarms(deps, [conditionRecord(setup.workspace_id, device.id, 'u3', start)])).toBeUndefined();
    expect(await timerOf(device.id, rule.id)).toBeDefined();
    expect(await followConditionAlarms(deps, [conditionRecord(setup.workspace_id, device.id, 'u3', start, true)])).toBeUndefined();
    expect(await timerOf(device.id, rule.id)).toBeUndefined();
    await sweep(deps, 2 * MINUTE);
    expect(told.filter((t) => t.event === 'open')).toEqual([]);
  });
});
