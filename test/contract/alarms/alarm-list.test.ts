/**
 * The alarm list on DynamoDB Local: an `open` or `acknowledged` list reads only the alarms that
 * are not closed (their guards' entries in the sweep index, then the alarms by key), newest first,
 * paged with `next`, whatever the workspace's closed alarms; every other list reads the
 * workspace's alarms as before. A disabled or deleted rule's alarms are closed through the same
 * entries (closeAlarmsOfRule): a closed alarm, or another rule's, costs no read.
 */
import { acknowledgeAlarm, closeAlarm, closeAlarmsOfRule, listAlarms, openAlarm } from '../../../lambdas/domain/alarms/alarms';
import { createAlarmRule } from '../../../lambdas/domain/alarms/rules';
import { CreateAlarmRuleBodySchema, type AlarmListQuery } from '../../../lambdas/schemas/alarms';
import type { Db } from '../../../lambdas/shared/clients';
import { getAlarmRuleOfWorkspace } from '../../../lambdas/stores/alarm-rule-store';
import { REGISTRY_INDEXES, REGISTRY_SWEEP_INDEX } from '../../../lambdas/stores/keys';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';
import { itemsOf, pageOf } from '../../helpers/lists';

let db: Db;
beforeAll(async () => {
  db = await freshTable(undefined, { indexes: REGISTRY_INDEXES });
});

/** A request the list sent: its command, the index it queried, the keys it read by key (a GetItem's as `pk/sk`). */
interface Sent {
  command: string;
  index?: string;
  keys: string[];
}
/** `db` with every request recorded into `sent`. */
const recording = (sent: Sent[]): Db => {
  const send = db.doc.send.bind(db.doc);
  const doc = {
    send: (command: { constructor: { name: string }; input: Record<string, any> }) => {
      const batch = command.input.RequestItems?.[db.table]?.Keys as Array<{ sk: string }> | undefined;
      const key = command.constructor.name === 'GetCommand' ? [`${command.input.Key.pk}/${command.input.Key.sk}`] : undefined;
      sent.push({ command: command.constructor.name, index: command.input.IndexName, keys: key ?? batch?.map((k) => k.sk) ?? [] });
      return send(command as never);
    },
  };
  return { ...db, doc } as unknown as Db;
};

/** A workspace with an offline rule and `count` alarms on as many devices, opened a second apart (oldest first). */
const workspaceWithAlarms = async (count: number) => {
  const { caller, workspace_id } = await newAccount(db);
  const body = CreateAlarmRuleBodySchema.parse({ name: 'door offline', kind: 'offline', severity: 'major', for_seconds: 60 });
  const made = await createAlarmRule(db, caller, workspace_id, body);
  const rule = (await getAlarmRuleOfWorkspace(db, workspace_id, made.id))!;
  let clock = Date.parse('2026-11-01T00:00:00Z');
  const deps = { db, notify: async () => undefined, now: () => new Date((clock += 1000)).toISOString() };
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const place = { workspace_id, fleet_id: 'flt-doors', device_id: `dev-door${i}` };
    const alarm = await openAlarm(deps, rule, place, { details: {}, transitionId: `offline:${rule.id}:${place.device_id}:t` });
    ids.push(alarm!.id);
  }
  const close = (i: number) => closeAlarm(deps, rule.id, `dev-door${i}`, { transitionId: `offline-closed:${rule.id}:dev-door${i}:t` });
  const list = (query: AlarmListQuery, on = db) => listAlarms(on, caller, workspace_id, query);
  return { caller, workspaceId: workspace_id, rule, deps, ids, close, list };
};

describe('the alarm list of open and acknowledged alarms', () => {
  it('reads only the alarms that are not closed, newest first, however many are closed', async () => {
    const ws = await workspaceWithAlarms(10);
    for (const i of [0, 1, 2, 4, 5, 7, 8]) await ws.close(i);
    await acknowledgeAlarm(ws.deps, ws.caller, ws.workspaceId, ws.ids[6], { note: 'on it' });
    const sent: Sent[] = [];

    const open = await itemsOf(ws.list({ status: 'open' }, recording(sent)));
    const acknowledged = await itemsOf(ws.list({ status: 'acknowledged' }, recording(sent)));

    expect(open.map((a) => a.id)).toEqual([ws.ids[9], ws.ids[3]]);
    expect(acknowledged.map((a) => [a.id, a.status, a.note])).toEqual([[ws.ids[6], 'acknowledged', 'on it']]);
    // Each list: the workspace's check, one query of the sweep index, one BatchGetItem of the
    // three alarms not closed; no closed alarm is read, no query of the workspace's partition.
    const reads = sent.filter((s) => s.command !== 'GetCommand');
    expect(reads).toEqual([
      { command: 'QueryCommand', index: REGISTRY_SWEEP_INDEX.name, keys: [] },
      { command: 'BatchGetCommand', index: undefined, keys: [9, 6, 3].map((i) => `ALARM#${ws.ids[i]}`) },
      { command: 'QueryCommand', index: REGISTRY_SWEEP_INDEX.name, keys: [] },
      { command: 'BatchGetCommand', index: undefined, keys: [9, 6, 3].map((i) => `ALARM#${ws.ids[i]}`) },
    ]);
    expect(sent.filter((s) => s.command === 'GetCommand')).toHaveLength(2);

    // every other list reads the workspace's alarms, closed ones included
    expect((await itemsOf(ws.list({}))).map((a) => a.id)).toEqual([...ws.ids].reverse());
    expect((await itemsOf(ws.list({ status: 'closed' }))).map((a) => a.id)).toEqual([8, 7, 5, 4, 2, 1, 0].map((i) => ws.ids[i]));
  });

  it('pages with next, newest first, keeping the other filters, and a cursor of the whole list reads on', async () => {
    const ws = await workspaceWithAlarms(6);
    await ws.close(2);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await pageOf(ws.list({ status: 'open', limit: 2, ...(cursor ? { cursor } : {}) }));
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((a) => a.id));
      cursor = page.next ?? undefined;
    } while (cursor);

    expect(seen).toEqual([5, 4, 3, 1, 0].map((i) => ws.ids[i]));
    expect((await itemsOf(ws.list({ status: 'open', device: 'dev-door4' }))).map((a) => a.id)).toEqual([ws.ids[4]]);
    expect(await itemsOf(ws.list({ status: 'open', start: '2026-11-01T00:00:04Z', end: '2026-11-01T00:00:06Z' }))).toHaveLength(2);
    const whole = await pageOf(ws.list({ limit: 2 }));
    expect((await itemsOf(ws.list({ status: 'open', cursor: whole.next! }))).map((a) => a.id)).toEqual([3, 1, 0].map((i) => ws.ids[i]));
  });

  it('answers no alarm once every one is closed, and reads none', async () => {
    const ws = await workspaceWithAlarms(3);
    for (const i of [0, 1, 2]) await ws.close(i);
    const sent: Sent[] = [];

    expect(await itemsOf(ws.list({ status: 'open' }, recording(sent)))).toEqual([]);
    expect(sent.filter((s) => s.command !== 'GetCommand')).toEqual([{ command: 'QueryCommand', index: REGISTRY_SWEEP_INDEX.name, keys: [] }]);
  });
});

describe('closing the alarms of a disabled or deleted rule', () => {
  it('reads only the rule’s alarms that are not closed, through their index entries, and closes each', async () => {
    const ws = await workspaceWithAlarms(6);
    for (const i of [0, 2, 3, 5]) await ws.close(i);
    await acknowledgeAlarm(ws.deps, ws.caller, ws.workspaceId, ws.ids[4], { note: 'on it' });
    // Another rule's open alarm in the same workspace: left as it is.
    const otherBody = CreateAlarmRuleBodySchema.parse({ name: 'door silent', kind: 'silent', severity: 'minor', for_seconds: 60 });
    const other = (await getAlarmRuleOfWorkspace(db, ws.workspaceId, (await createAlarmRule(db, ws.caller, ws.workspaceId, otherBody)).id))!;
    const place = { workspace_id: ws.workspaceId, fleet_id: 'flt-doors', device_id: 'dev-door9' };
    const otherAlarm = (await openAlarm(ws.deps, other, place, { details: {}, transitionId: `silent:${other.id}:dev-door9:t` }))!;
    const sent: Sent[] = [];

    await closeAlarmsOfRule({ ...ws.deps, db: recording(sent) }, ws.workspaceId, ws.rule.id, 'rule_disabled');

    const all = await itemsOf(ws.list({}));
    const statusOf = (id: string) => all.find((a) => a.id === id)!;
    expect([1, 4].map((i) => [statusOf(ws.ids[i]).status, statusOf(ws.ids[i]).details])).toEqual([
      ['closed', { closed_by: 'rule_disabled' }],
      ['closed', { closed_by: 'rule_disabled' }],
    ]);
    expect(statusOf(otherAlarm.id).status).toBe('open');
    // One query of the sweep index finds them; then each close reads its guard and its alarm: no
    // query of the workspace's alarms, no read of a closed alarm or of the other rule's.
    expect(sent.filter((s) => s.command === 'QueryCommand')).toEqual([{ command: 'QueryCommand', index: REGISTRY_SWEEP_INDEX.name, keys: [] }]);
    expect(sent.filter((s) => s.command === 'BatchGetCommand')).toEqual([]);
    const alarmsRead = sent.filter((s) => s.command === 'GetCommand' && s.keys[0].includes('/ALARM#')).flatMap((s) => s.keys);
    expect(alarmsRead.sort()).toEqual([1, 4].map((i) => `WKS#${ws.workspaceId}/ALARM#${ws.ids[i]}`).sort());
  });
});
