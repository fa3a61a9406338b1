/**
 * Alarm rules and alarms (spec/fleet-state.md §4) on `npm start`'s runtime: rules are created,
 * listed, changed and deleted within their quota, a bad rule is a 400 or 404 naming its field with
 * nothing written; alarms open, acknowledge and close once per transition ID, at most one not
 * closed per rule and device (the guard), each transition told (the notifications queue); a
 * disabled or deleted rule closes its alarms. Alarms are opened and closed through the functions
 * the detection calls (domain/alarms/alarms.ts), on the runtime's own tables; and by the detection
 * itself over MQTT: a device that disconnects and reconnects, the sweep called with its clock ahead;
 * and a `threshold` rule at ingest: a freezer's burst of MQTT points that warms up and cools opens
 * and closes its alarm (its `alarm` events and e-mails told), one HTTPS point opens one too.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { LocalRuntime } from '../../local/runtime';
import type * as AlarmsModule from '../../lambdas/domain/alarms/alarms';
import type * as RuleCacheModule from '../../lambdas/domain/alarms/rule-cache';
import type { AlarmTransition } from '../../lambdas/schemas/alarm-transitions';
import type { Db } from '../../lambdas/shared/clients';
import type { AlarmRuleRecord } from '../../lambdas/stores/alarm-rule-store';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { startRuntime } from '../helpers/runtime';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { until } from '../../local/ports';

let runtime: LocalRuntime;
let receiver: WebhookReceiver;
let api: ApiClient;
let ws: string;
let fleet: string;
let db: Db;
let alarms: typeof AlarmsModule;
let cache: typeof RuleCacheModule;
/** What the transitions told, in order (a test's own `notify`). */
const told: AlarmTransition[] = [];
const deps = () => ({ db, notify: async (t: AlarmTransition) => void told.push(t) });

const rulesPath = () => `/workspaces/${ws}/alarm-rules`;
const THRESHOLD = { name: 'cold room too warm', kind: 'threshold', severity: 'critical', tag: 'env', field: 'temp', op: '>', value: 8, for_seconds: 300 };
const newRule = async (body: Record<string, unknown> = THRESHOLD) => {
  const answer = await api.post(rulesPath(), body);
  expect([answer.status, answer.body.error]).toEqual([201, undefined]);
  return answer.body.alarm_rule;
};
const stored = async (ruleId: string) => {
  const { getAlarmRuleOfWorkspace } = await import('../../lambdas/stores/alarm-rule-store');
  return (await getAlarmRuleOfWorkspace(db, ws, ruleId)) as AlarmRuleRecord;
};
const newDevice = async (name: string) => (await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: fleet })).body.device.id as string;
const listAlarms = async (query = '') => {
  const answer = await api.get(`/workspaces/${ws}/alarms${query}`);
  expect(answer.status).toBe(200);
  return answer.body.alarms as Array<Record<string, any>>;
};
const ruleCount = async () => (await api.get(rulesPath())).body.alarm_rules.length as number;

beforeAll(async () => {
  runtime = await startRuntime();
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
  // Imported once the runtime has set the environment (handlers read it once).
  const { registryDb } = await import('../../lambdas/shared/clients');
  db = registryDb();
  alarms = await import('../../lambdas/domain/alarms/alarms');
  cache = await import('../../lambdas/domain/alarms/rule-cache');
  fleet = (await api.post(`/workspaces/${ws}/fleets`, { name: 'cold rooms' })).body.fleet.id;
  // The notifier sends each transition's `alarm` event here.
  receiver = await startWebhookReceiver();
  expect((await api.post(`/workspaces/${ws}/integrations`, { url: receiver.url })).status).toBe(200);
}, 180_000);
afterAll(async () => {
  await receiver?.stop();
  await runtime?.stop();
});

describe('alarm rules', () => {
  it('creates a threshold rule with its defaults, gets, lists and changes it', async () => {
    const rule = await newRule();

    expect(rule).toEqual({
      id: expect.stringMatching(/^alr-[0-9a-z]{20}$/),
      ...THRESHOLD,
      clear_value: 8,
      target: { fleets: [], group: null, q: null },
      notify: { emails: [], integrations: true },
      enabled: true,
      created_at: expect.any(String),
      updated_at: rule.created_at,
      last_notification_error: null,
    });
    expect((await api.get(`${rulesPath()}/${rule.id}`)).body.alarm_rule).toEqual(rule);
    expect((await api.get(rulesPath())).body.alarm_rules.map((r: { id: string }) => r.id)).toContain(rule.id);

    const changed = await api.call('PATCH', `${rulesPath()}/${rule.id}`, { value: 10, clear_value: 9, notify: { emails: ['ops@example.com'] } });
    expect(changed.status).toBe(200);
    expect(changed.body.alarm_rule).toMatchObject({ value: 10, clear_value: 9, notify: { emails: ['ops@example.com'], integrations: true } });
    // a clear_value that followed value follows it on; one set apart stays
    const follows = await newRule({ ...THRESHOLD, name: 'follows' });
    expect((await api.call('PATCH', `${rulesPath()}/${follows.id}`, { value: 5 })).body.alarm_rule).toMatchObject({ value: 5, clear_value: 5 });

    // what the notifier records on the rule survives a change made over an earlier read
    const error = { at: new Date().toISOString(), error: 'MessageRejected', email: 'ops@example.com' };
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: { pk: `WKS#${ws}`, sk: `ALARMRULE#${rule.id}` },
        UpdateExpression: 'SET last_notification_error = :e',
        ExpressionAttributeValues: { ':e': error },
      }),
    );
    expect((await api.call('PATCH', `${rulesPath()}/${rule.id}`, { name: 'renamed' })).status).toBe(200);
    expect((await api.get(`${rulesPath()}/${rule.id}`)).body.alarm_rule).toMatchObject({ name: 'renamed', last_notification_error: error });
  });

  it('refuses bad rules with a 400 or 404 naming the field, and writes nothing', async () => {
    const before = await ruleCount();
    const theirs = (await api.post('/workspaces', { name: 'not this one' })).body.workspace;
    const otherFleet = theirs ? (await api.get(`/workspaces/${theirs.id}/fleets`)).body.fleets[0].id : 'flt-nonexistent00000000000';
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ name: 'short', kind: 'offline', severity: 'major', for_seconds: 30 }, 400, 'body.for_seconds'],
      [{ name: 'no field', kind: 'threshold', severity: 'major', op: '>', value: 1 }, 400, 'body.field'],
      [{ ...THRESHOLD, severity: 'apocalyptic' }, 400, 'body.severity'],
      [{ ...THRESHOLD, notify: { emails: ['not an address'] } }, 400, 'body.notify.emails.0'],
      [{ ...THRESHOLD, clear_value: 9 }, 400, 'body.clear_value'],
      [{ name: 'offline with a field', kind: 'offline', severity: 'major', for_seconds: 60, field: 'temp' }, 400, 'body.field'],
      [{ ...THRESHOLD, target: { q: 'tags.site = ' } }, 400, 'body.target.q'],
      [{ ...THRESHOLD, target: { fleets: [otherFleet] } }, 404, 'body.target.fleets'],
      [{ ...THRESHOLD, target: { group: 'grp-nonexistent00000000000' } }, 404, 'body.target.group'],
      [{ ...THRESHOLD, kind: 'sometimes' }, 400, 'body.kind'],
    ];
    for (const [body, status, field] of cases) {
      const answer = await api.post(rulesPath(), body);
      expect([status, field, answer.status, answer.body.error.details?.map((d: { field: string }) => d.field)]).toEqual([
        status,
        field,
        status,
        expect.arrayContaining([field]),
      ]);
    }
    expect(await ruleCount()).toBe(before);
    const rule = await newRule({ ...THRESHOLD, name: 'kept' });
    const patched = await api.call('PATCH', `${rulesPath()}/${rule.id}`, { field: null });
    expect([patched.status, patched.body.error.details]).toEqual([400, [{ field: 'body.field', message: 'Required for a threshold rule.' }]]);
    expect((await api.get(`${rulesPath()}/${rule.id}`)).body.alarm_rule).toEqual(rule);
  });

  it('holds its group while it targets it, and counts against limits.alarm_rules', async () => {
    const group = (await api.post(`/workspaces/${ws}/groups`, { name: 'rooms', query: 'name = "room"' })).body.group.id;
    const rule = await newRule({ name: 'room offline', kind: 'offline', severity: 'major', for_seconds: 60, target: { fleets: [fleet], group } });
    expect((await api.delete(`/workspaces/${ws}/groups/${group}`)).status).toBe(409);

    const limits = (await api.get(`/workspaces/${ws}/limits`)).body;
    expect(limits.limits.alarm_rules).toBe(100);
    const used = limits.used.alarm_rules as number;
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: { pk: `ACC#${runtime.account_id}`, sk: `WKS#${ws}` },
        UpdateExpression: 'SET limits = :limits ADD limits_rev :one',
        ExpressionAttributeValues: { ':limits': { alarm_rules: used }, ':one': 1 },
      }),
    );
    const refused = await api.post(rulesPath(), THRESHOLD);
    expect([refused.status, refused.body.error.code]).toEqual([429, 'quota_exceeded']);

    expect((await api.delete(`${rulesPath()}/${rule.id}`)).body.alarm_rule).toMatchObject({ id: rule.id, enabled: true });
    expect((await api.get(`${rulesPath()}/${rule.id}`)).status).toBe(404);
    expect((await api.delete(`/workspaces/${ws}/groups/${group}`)).status).toBe(200);
    expect((await api.post(rulesPath(), { ...THRESHOLD, name: 'in its place' })).status).toBe(201);
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: { pk: `ACC#${runtime.account_id}`, sk: `WKS#${ws}` },
        UpdateExpression: 'REMOVE limits ADD limits_rev :one',
        ExpressionAttributeValues: { ':one': 1 },
      }),
    );
  });

  it('is cached per container by the workspace’s rules version: a change is read again, a disabled rule is not watched', async () => {
    const rulesNow = cache.alarmRulesCache(db, { ttlMs: 0 });
    const owner = { account_id: runtime.account_id, workspace_id: ws };
    const rule = await newRule({ ...THRESHOLD, name: 'cached' });
    expect((await rulesNow(owner)).map((r) => r.id)).toContain(rule.id);

    await api.call('PATCH', `${rulesPath()}/${rule.id}`, { enabled: false });
    expect((await rulesNow(owner)).map((r) => r.id)).not.toContain(rule.id);
    // within its time a container answers what it read, however the rules change meanwhile
    let clock = 1_000_000;
    const cached = cache.alarmRulesCache(db, { ttlMs: 10_000, now: () => clock });
    const before = (await cached(owner)).map((r) => r.id);
    const added = await newRule({ ...THRESHOLD, name: 'added meanwhile' });
    clock += 9_999;
    expect((await cached(owner)).map((r) => r.id)).toEqual(before);
    clock += 2;
    expect((await cached(owner)).map((r) => r.id)).toEqual([...before, added.id]);
    // a workspace without rules: nothing, from the version alone
    const empty = (await api.post('/workspaces', { name: 'no rules' })).body.workspace;
    expect(await rulesNow({ account_id: runtime.account_id, workspace_id: empty.id })).toEqual([]);
  });
});

describe('alarms', () => {
  let rule: AlarmRuleRecord;
  let device: string;
  beforeAll(async () => {
    rule = await stored((await newRule({ ...THRESHOLD, name: 'freezer', notify: { emails: ['ops@example.com'] } })).id);
    device = await newDevice('freezer-1');
  });
  const place = () => ({ workspace_id: ws, fleet_id: fleet, device_id: device });

  it('opens once per transition ID, at most one not closed per rule and device, and tells each opening', async () => {
    told.length = 0;
    const opened = await alarms.openAlarm(deps(), rule, place(), { details: { value: 9.5 }, transitionId: `t-open-${device}` });
    expect(opened).toMatchObject({
      rule_id: rule.id,
      rule_name: 'freezer',
      kind: 'threshold',
      severity: 'critical',
      device_id: device,
      fleet_id: fleet,
      status: 'open',
    });

    // a retried batch: the same alarm, told again with the same transition ID (the notifier dedups)
    const retried = await alarms.openAlarm(deps(), rule, place(), { details: { value: 9.5 }, transitionId: `t-open-${device}` });
    // another point while it is open: nothing opens
    const another = await alarms.openAlarm(deps(), rule, place(), { details: { value: 9.7 }, transitionId: `t-other-${device}` });

    expect(retried?.id).toBe(opened!.id);
    expect(another).toBeUndefined();
    expect(told.map((t) => [t.id, t.event])).toEqual([
      [`${opened!.id}:opened`, 'opened'],
      [`${opened!.id}:opened`, 'opened'],
    ]);
    expect(told[0]).toMatchObject({ workspace_id: ws, notify: { emails: ['ops@example.com'], integrations: true }, alarm: { details: { value: 9.5 } } });
    expect((await listAlarms(`?device=${device}`)).map((a) => a.id)).toEqual([opened!.id]);
  });

  it('opens one alarm of many at once for a rule and device, whatever their transition IDs', async () => {
    const racing = await newDevice('freezer-racing');
    const opened = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        alarms.openAlarm(deps(), rule, { ...place(), device_id: racing }, { details: { i }, transitionId: `t-race-${racing}-${i}` }),
      ),
    );

    expect(opened.filter(Boolean)).toHaveLength(1);
    expect((await listAlarms(`?device=${racing}`)).map((a) => a.id)).toEqual([opened.find(Boolean)!.id]);
    await alarms.closeAlarm(deps(), rule.id, racing, { transitionId: `t-race-close-${racing}` });
  });

  it('loses no transition whose telling failed: the retry with the same ID tells it', async () => {
    const other = await newDevice('freezer-told-late');
    const failing = { db, notify: async () => Promise.reject(new Error('queue down')) };
    await expect(alarms.openAlarm(failing, rule, { ...place(), device_id: other }, { details: {}, transitionId: `t-late-${other}` })).rejects.toThrow(
      'queue down',
    );

    told.length = 0;
    const opened = await alarms.openAlarm(deps(), rule, { ...place(), device_id: other }, { details: {}, transitionId: `t-late-${other}` });
    expect(told.map((t) => t.id)).toEqual([`${opened!.id}:opened`]);
    await expect(alarms.closeAlarm(failing, rule.id, other, { transitionId: `t-late-close-${other}` })).rejects.toThrow('queue down');
    expect(await alarms.closeAlarm(deps(), rule.id, other, { transitionId: `t-late-close-${other}` })).toMatchObject({ id: opened!.id, status: 'closed' });
    expect(told.map((t) => t.id)).toEqual([`${opened!.id}:opened`, `${opened!.id}:closed`]);
  });

  it('lists newest first with the filters, and acknowledges by the key’s name, told to the webhook', async () => {
    const [open] = await listAlarms(`?device=${device}&status=open`);
    expect(await listAlarms(`?device=${device}&status=closed`)).toEqual([]);
    expect(await listAlarms(`?rule=${rule.id}&severity=minor`)).toEqual([]);
    expect((await listAlarms(`?rule=${rule.id}&device=${device}&severity=critical&start=${open.opened_at}`)).map((a) => a.id)).toEqual([open.id]);
    expect(await listAlarms(`?end=${open.opened_at}&device=${device}`)).toEqual([]);
    const bad = await api.get(`/workspaces/${ws}/alarms?status=sleeping`);
    expect([bad.status, bad.body.error.details[0].field]).toEqual([400, 'query.status']);

    const acknowledged = await api.post(`/workspaces/${ws}/alarms/${open.id}/acknowledge`, { note: 'on my way' });
    expect(acknowledged.status).toBe(200);
    expect(acknowledged.body.alarm).toMatchObject({ id: open.id, status: 'acknowledged', acknowledged_by: expect.any(String), note: 'on my way' });
    const keys = (await api.get(`/workspaces/${ws}/api-keys`)).body.api_keys as Array<{ name: string }>;
    expect(keys.map((k) => k.name)).toContain(acknowledged.body.alarm.acknowledged_by);
    // again: as it is
    expect((await api.post(`/workspaces/${ws}/alarms/${open.id}/acknowledge`)).body.alarm.acknowledged_at).toBe(acknowledged.body.alarm.acknowledged_at);

    // The transition went through the notifications queue to the notifier: its `alarm` event reached the webhook.
    const event = () =>
      receiver
        .accepted()
        .find(
          (e) =>
            e.type === 'alarm' &&
            (e.payload as { status?: string; id?: string }).id === open.id &&
            (e.payload as { status?: string }).status === 'acknowledged',
        );
    await until(async () => event() !== undefined, 'the acknowledged alarm event at the webhook', 60_000);
    expect(event()).toMatchObject({
      direction: 'c2d',
      device_id: device,
      payload: { id: open.id, status: 'acknowledged', acknowledged_by: acknowledged.body.alarm.acknowledged_by },
    });
  }, 90_000);

  it('closes once per transition ID, answers 409 to an acknowledgement then, and a new alarm may open', async () => {
    told.length = 0;
    const closed = await alarms.closeAlarm(deps(), rule.id, device, { transitionId: `t-close-${device}`, details: { value: 6.9 } });
    const retried = await alarms.closeAlarm(deps(), rule.id, device, { transitionId: `t-close-${device}` });
    const other = await alarms.closeAlarm(deps(), rule.id, device, { transitionId: `t-close-again-${device}` });

    expect(closed).toMatchObject({ status: 'closed', closed_at: expect.any(String), details: { value: 6.9 }, acknowledged_by: expect.any(String) });
    expect(retried?.id).toBe(closed!.id);
    expect(other).toBeUndefined();
    expect(told.map((t) => t.id)).toEqual([`${closed!.id}:closed`, `${closed!.id}:closed`]);
    const refused = await api.post(`/workspaces/${ws}/alarms/${closed!.id}/acknowledge`, {});
    expect([refused.status, refused.body.error.code]).toEqual([409, 'conflict']);

    const next = await alarms.openAlarm(deps(), rule, place(), { details: { value: 11 }, transitionId: `t-reopen-${device}` });
    expect(next?.id).not.toBe(closed!.id);
    expect((await listAlarms(`?device=${device}`)).map((a) => a.id)).toEqual([next!.id, closed!.id]);
  });

  it('closes a rule’s alarms when it is disabled or deleted, and opens none of a disabled rule', async () => {
    const devices = [await newDevice('freezer-2'), await newDevice('freezer-3')];
    const other = await stored((await newRule({ ...THRESHOLD, name: 'other freezer rule' })).id);
    for (const d of devices) await alarms.openAlarm(deps(), rule, { ...place(), device_id: d }, { details: {}, transitionId: `t-${d}` });
    await alarms.openAlarm(deps(), other, { ...place(), device_id: devices[0] }, { details: {}, transitionId: `t-other-${devices[0]}` });

    expect((await api.call('PATCH', `${rulesPath()}/${rule.id}`, { enabled: false })).status).toBe(200);

    const ofRule = await listAlarms(`?rule=${rule.id}`);
    expect(ofRule.map((a) => a.status)).toEqual(ofRule.map(() => 'closed'));
    // the two new ones and freezer-1's reopened one; its first was closed by its own transition before
    expect(ofRule.filter((a) => a.details.closed_by === 'rule_disabled')).toHaveLength(3);
    expect((await listAlarms(`?rule=${other.id}`)).map((a) => a.status)).toEqual(['open']);
    expect(await alarms.openAlarm(deps(), rule, place(), { details: {}, transitionId: `t-disabled-${device}` })).toBeUndefined();

    expect((await api.delete(`${rulesPath()}/${other.id}`)).status).toBe(200);
    expect((await listAlarms(`?rule=${other.id}`)).map((a) => [a.status, a.details.closed_by])).toEqual([['closed', 'rule_deleted']]);
  });

  it('is 404 for an alarm or a rule the workspace does not hold', async () => {
    expect((await api.post(`/workspaces/${ws}/alarms/alm-nonexistent00000000000/acknowledge`, {})).status).toBe(404);
    expect((await api.get(`${rulesPath()}/alr-nonexistent00000000000`)).status).toBe(404);
    expect((await api.call('PATCH', `${rulesPath()}/alr-nonexistent00000000000`, { enabled: false })).status).toBe(404);
  });
});

describe('detection over MQTT', () => {
  it('opens an offline alarm for_seconds after a device disconnects (the sweep’s clock ahead), and closes it when it reconnects', async () => {
    const { connectDevice } = await import('../helpers/mqtt-device');
    const { until } = await import('../../local/ports');
    const { sweepAlarmTimers } = await import('../../lambdas/domain/alarms/alarm-sweep');
    const { detectionDeps } = await import('../../lambdas/domain/alarms/detection');
    const doors = (await api.post(`/workspaces/${ws}/fleets`, { name: 'doors' })).body.fleet.id as string;
    const rule = await newRule({ name: 'door offline', kind: 'offline', severity: 'major', for_seconds: 60, target: { fleets: [doors] } });
    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'door-1', fleet_id: doors })).body.device.id as string;
    const credentials = (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials;
    const ofDevice = () => listAlarms(`?device=${device}`);
    /** One run of the sweep's alarm part, its clock two minutes ahead: for_seconds has passed. */
    const sweepAhead = () => {
      const now = Date.now() + 120_000;
      return sweepAlarmTimers({ ...detectionDeps(db), now: () => Date.now() + 120_000 }, { now, deadline: now + 30_000 });
    };

    // The consumer's rules cache (10 s) first reads this workspace's rules at the disconnection below
    // (no device of it changed connection before): the rule just made is seen.
    const first = await connectDevice(credentials, { url: runtime.mqtt_url });
    await until(async () => (await api.get(`/workspaces/${ws}/devices/${device}`)).body.device.connected === true, 'the connection', 30_000);
    await first.end();
    // The stream starts the timer; the sweep, once it is due, opens the alarm.
    await until(async () => (await sweepAhead(), (await ofDevice()).length === 1), 'the offline alarm', 30_000);
    const [opened] = await ofDevice();
    expect(opened).toMatchObject({ rule_id: rule.id, kind: 'offline', fleet_id: doors, status: 'open', details: { disconnected_at: expect.any(String) } });
    await sweepAhead();
    expect(await ofDevice()).toHaveLength(1);

    const again = await connectDevice(credentials, { url: runtime.mqtt_url });
    await until(async () => (await ofDevice())[0].status === 'closed', 'the alarm closed by the reconnection', 30_000);
    expect((await ofDevice())[0]).toMatchObject({ id: opened.id, details: { connected_at: expect.any(String) } });
    await again.end();
  }, 120_000);
});

describe('threshold detection at ingest', () => {
  interface StoredMail {
    destination: { to: string[] };
    subject: string;
  }
  const mailsTo = async (address: string) => {
    const { emails } = (await (await fetch(`${runtime.mail_url}store`)).json()) as { emails: StoredMail[] };
    return emails.filter((e) => e.destination.to.includes(address));
  };
  const alarmEvents = (alarmId: string) => receiver.accepted().filter((e) => e.type === 'alarm' && (e.payload as { id?: string }).id === alarmId);
  let freezers: string;
  let rule: { id: string };
  const email = `freezers-${Date.now()}@example.com`;
  /** A freezer of the fleet, with its device credentials. */
  const freezer = async (name: string) => {
    const device = (await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: freezers })).body.device.id as string;
    return { device, credentials: (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body.credentials };
  };

  beforeAll(async () => {
    freezers = (await api.post(`/workspaces/${ws}/fleets`, { name: 'freezers' })).body.fleet.id;
    rule = await newRule({
      name: 'freezer too warm',
      kind: 'threshold',
      severity: 'critical',
      target: { fleets: [freezers] },
      tag: 'cold',
      field: 'env.temp',
      op: '>',
      value: -10,
      clear_value: -15,
      notify: { emails: [email] },
    });
    // The ingest reads rules through the container's cache (10 s): wait until it holds this one.
    const owner = { account_id: runtime.account_id, workspace_id: ws };
    await until(async () => (await cache.rulesOfWorkspace({ db }, owner)).some((r) => r.id === rule.id), 'the rules cache to hold the rule', 30_000);
  });

  it('a freezer that warms up and cools: a burst over MQTT opens its alarm, then closes it, told by webhook and e-mail', async () => {
    const { connectDevice } = await import('../helpers/mqtt-device');
    const { device, credentials } = await freezer('freezer-a');
    const mqtt = await connectDevice(credentials, { url: runtime.mqtt_url });
    // 60 points, several of the mqtt queue's batches (10) per phase: -18 °C, warming from -12 past
    // -10 (value) to about -5, then back at -18 (past clear_value).
    const temps = [...Array<number>(20).fill(-18), ...Array.from({ length: 20 }, (_, i) => -12 + i * 0.35), ...Array<number>(20).fill(-18)];
    for (const temp of temps) await mqtt.data('cold', { env: { temp } });
    await mqtt.end();
    const ofRule = () => listAlarms(`?rule=${rule.id}&device=${device}`);
    await until(async () => (await ofRule())[0]?.status === 'closed', 'the alarm opened then closed', 120_000);

    const alarms = await ofRule();
    expect(alarms).toHaveLength(1);
    const [alarm] = alarms;
    expect(alarm).toMatchObject({
      kind: 'threshold',
      severity: 'critical',
      fleet_id: freezers,
      details: { field: 'env.temp', tag: 'cold', closed_value: -18 },
    });
    // A breaching point (batches run at once: the first in arrival order among those evaluated in order).
    expect(alarm.details.value).toBeGreaterThan(-10);
    await until(async () => alarmEvents(alarm.id).length >= 2 && (await mailsTo(email)).length >= 2, 'the opened and closed alarm events and e-mails', 60_000);
    expect(new Set(alarmEvents(alarm.id).map((e) => (e.payload as { status: string }).status))).toEqual(new Set(['open', 'closed']));
    expect((await mailsTo(email)).map((m) => m.subject).sort()).toEqual([
      '[critical] freezer too warm: alarm closed on ' + device,
      '[critical] freezer too warm: alarm opened on ' + device,
    ]);
  }, 240_000); // above its two waits' bounds (120 s and 60 s) and its 60 publishes, on a loaded machine

  it('a point over the HTTPS data door opens the alarm too', async () => {
    const { deviceClient, deviceToken } = await import('../helpers/device-token');
    const { device, credentials } = await freezer('freezer-b');
    const client = deviceClient(runtime.base_url, await deviceToken(credentials));
    expect((await client.post('/data', { tag: 'cold', payload: { env: { temp: 0 } } })).status).toBe(202);
    await until(async () => (await listAlarms(`?rule=${rule.id}&device=${device}`)).length === 1, 'the alarm of the HTTPS point', 60_000);
    expect((await listAlarms(`?rule=${rule.id}&device=${device}`))[0]).toMatchObject({ status: 'open', details: { field: 'env.temp', value: 0 } });
  }, 90_000);
});

describe('what was there before a rule, a rule’s tag, a device deleted', () => {
  /** A device of `fleetId` with its credentials, connected over MQTT until it is connected. */
  const mqttDevice = async (name: string, fleetId: string) => {
    const { connectDevice } = await import('../helpers/mqtt-device');
    const id = (await api.post(`/workspaces/${ws}/devices`, { name, fleet_id: fleetId })).body.device.id as string;
    const credentials = (await api.post(`/workspaces/${ws}/devices/${id}/identities`)).body.credentials;
    const client = await connectDevice(credentials, { url: runtime.mqtt_url });
    await until(async () => (await api.get(`/workspaces/${ws}/devices/${id}`)).body.device.connected === true, `${name} connected`, 30_000);
    return { id, client };
  };
  const newFleet = async (name: string) => (await api.post(`/workspaces/${ws}/fleets`, { name })).body.fleet.id as string;
  const deviceItem = async (id: string) => {
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    return (await db.doc.send(new GetCommand({ TableName: db.table, Key: { pk: `WKS#${ws}`, sk: `DEV#${id}` }, ConsistentRead: true }))).Item!;
  };
  /**
   * Waits for this container's rules cache (the sweep's, here) to hold the rules: a backfill is due
   * once the detection's caches have its rule (10 s), and with the sweep's clock ahead it would run at once.
   */
  const untilCached = async (ids: string[]) => {
    const owner = { account_id: (await stored(ids[0])).account_id, workspace_id: ws };
    await until(async () => (await cache.rulesOfWorkspace({ db }, owner)).filter((r) => ids.includes(r.id)).length === ids.length, 'the rules cached', 30_000);
  };
  /** One run of the sweep's alarm part, its clock `ahead` ms in the future. */
  const sweepAhead = async (ahead: number) => {
    const { sweepAlarmTimers } = await import('../../lambdas/domain/alarms/alarm-sweep');
    const { detectionDeps } = await import('../../lambdas/domain/alarms/detection');
    const now = Date.now() + ahead;
    return sweepAlarmTimers({ ...detectionDeps(db), now: () => Date.now() + ahead }, { now, deadline: now + 30_000 });
  };

  it('catches, from a rule’s creation, a device already offline, silent or with a condition open (the backfill)', async () => {
    const [offFleet, silentFleet, conditionFleet] = [await newFleet('already off'), await newFleet('already silent'), await newFleet('already open')];
    // Before any rule watches them: one disconnects, one publishes once, one opens a condition; one stays connected.
    const off = await mqttDevice('gone-before', offFleet);
    const fine = await mqttDevice('still-here', offFleet);
    const talker = await mqttDevice('spoke-before', silentFleet);
    const opener = await mqttDevice('opened-before', conditionFleet);
    await off.client.end();
    await until(async () => (await api.get(`/workspaces/${ws}/devices/${off.id}`)).body.device.connected === false, 'the disconnection', 30_000);
    await talker.client.data('env', { temp: 4 });
    await until(async () => (await deviceItem(talker.id)).last_seen_at !== undefined, 'the point’s last_seen_at', 30_000);
    const start = new Date().toISOString();
    await opener.client.up('condition', { uuid: 'door-1', tag: 'door', payload: null, start });
    await until(
      async () => (await api.get(`/workspaces/${ws}/conditions?device=${opener.id}&status=open`)).body.conditions.length === 1,
      'the condition',
      30_000,
    );

    const rules = {
      offline: await newRule({ name: 'was off', kind: 'offline', severity: 'major', for_seconds: 60, target: { fleets: [offFleet] } }),
      silent: await newRule({ name: 'was silent', kind: 'silent', severity: 'minor', for_seconds: 60, target: { fleets: [silentFleet] } }),
      condition: await newRule({
        name: 'was open',
        kind: 'condition',
        severity: 'warning',
        tag: 'door',
        for_seconds: 60,
        target: { fleets: [conditionFleet] },
      }),
    };
    await untilCached(Object.values(rules).map((r) => r.id));
    // The backfill writes their timers; a later run, past for_seconds, opens them.
    const expected = [
      [off.id, rules.offline.id],
      [talker.id, rules.silent.id],
      [opener.id, rules.condition.id],
    ];
    const found = async () => {
      const open = await listAlarms('?status=open');
      return expected.map(([device, rule]) => open.find((a) => a.device_id === device && a.rule_id === rule));
    };
    let backfilled = 0;
    await until(
      async () => {
        backfilled += (await sweepAhead(120_000)).backfilled;
        return (await found()).every(Boolean);
      },
      'the alarms of what was there',
      60_000,
    );

    const [offAlarm, silentAlarm, conditionAlarm] = await found();
    expect(backfilled).toBeGreaterThanOrEqual(3);
    expect(offAlarm).toMatchObject({ kind: 'offline', fleet_id: offFleet, details: { disconnected_at: expect.any(String) } });
    expect(silentAlarm).toMatchObject({ kind: 'silent', details: { last_seen_at: (await deviceItem(talker.id)).last_seen_at } });
    expect(conditionAlarm).toMatchObject({ kind: 'condition', details: { condition_uuid: 'door-1', start } });
    // The connected one has nothing; the backfills are done (their items gone).
    expect(await listAlarms(`?device=${fine.id}`)).toEqual([]);
    const { getBackfill } = await import('../../lambdas/stores/alarm-backfill-store');
    for (const rule of Object.values(rules)) expect(await getBackfill(db, ws, rule.id)).toBeUndefined();
    await Promise.all([fine.client.end(), talker.client.end(), opener.client.end()]);
  }, 180_000);

  it('a silent rule with a tag watches only points on that tag', async () => {
    const { markDeviceSeen } = await import('../../lambdas/stores/device-health-store');
    const tagged = await newFleet('tagged');
    const rule = await newRule({ name: 'no env', kind: 'silent', severity: 'major', tag: 'env', for_seconds: 60, target: { fleets: [tagged] } });
    await untilCached([rule.id]);
    const device = await mqttDevice('env-sensor', tagged);
    // Its first point, on another tag: the silence on `env` counts from it; the alarm opens.
    await device.client.data('other', { x: 1 });
    await until(async () => (await deviceItem(device.id)).last_seen_at !== undefined, 'the first point', 30_000);
    const first = (await deviceItem(device.id)).last_seen_at as string;
    await until(async () => (await sweepAhead(120_000), (await listAlarms(`?rule=${rule.id}`)).length === 1), 'the silent alarm', 60_000);
    const [opened] = await listAlarms(`?rule=${rule.id}`);

    // A point on another tag a minute later (last_seen_at, as the ingest writes it): still silent on `env`.
    await markDeviceSeen(db, ws, device.id, new Date(Date.parse(first) + 61_000).toISOString());
    await sweepAhead(200_000);
    expect((await listAlarms(`?rule=${rule.id}`)).map((a) => a.status)).toEqual(['open']);

    // A point on `env`: kept per tag (the ingest's cached rules name it), and the next look closes the alarm.
    await until(
      async () => (await device.client.data('env', { temp: 3 }), typeof (await deviceItem(device.id)).last_seen_tags?.env === 'string'),
      'the env point kept',
      60_000,
    );
    // (The sweep's clock, 5 minutes ahead, may also see `env` silent again a minute after that point
    // and open another alarm in the same run: the one asserted is the first.)
    const firstAlarm = async () => (await listAlarms(`?rule=${rule.id}`)).find((a) => a.id === opened.id);
    await until(async () => (await sweepAhead(300_000), (await firstAlarm())?.status === 'closed'), 'the alarm closed by the env point', 60_000);
    expect((await firstAlarm())?.details).toMatchObject({ seen_at: (await deviceItem(device.id)).last_seen_tags.env });
    await device.client.end();
  }, 180_000);

  it('closes a deleted device’s alarms, told as every transition, and deletes its timers', async () => {
    const { putTimerIfAbsent } = await import('../../lambdas/stores/alarm-timer-store');
    const { alarmTimerKey } = await import('../../lambdas/stores/keys');
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const rule = await stored((await newRule({ ...THRESHOLD, name: 'doomed freezer' })).id);
    const silent = await newRule({ name: 'doomed silent', kind: 'silent', severity: 'minor', for_seconds: 60, target: { fleets: [fleet] } });
    const doomed = await newDevice('doomed');
    const opened = await alarms.openAlarm(
      deps(),
      rule,
      { workspace_id: ws, fleet_id: fleet, device_id: doomed },
      { details: {}, transitionId: `t-doomed-${doomed}` },
    );
    const timer = {
      workspace_id: ws,
      account_id: rule.account_id,
      device_id: doomed,
      rule_id: silent.id,
      kind: 'silent' as const,
      since: new Date().toISOString(),
    };
    await putTimerIfAbsent(db, timer, Date.now() + 3_600_000);

    expect((await api.delete(`/workspaces/${ws}/devices/${doomed}`)).status).toBe(200);

    expect((await listAlarms(`?device=${doomed}`)).map((a) => [a.id, a.status, a.details.closed_by])).toEqual([[opened!.id, 'closed', 'device_deleted']]);
    const timerLeft = await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmTimerKey(doomed, silent.id), ConsistentRead: true }));
    expect(timerLeft.Item).toBeUndefined();
    const closedEvent = () =>
      receiver
        .accepted()
        .find(
          (e) =>
            e.type === 'alarm' && (e.payload as { id?: string; status?: string }).id === opened!.id && (e.payload as { status?: string }).status === 'closed',
        );
    await until(async () => closedEvent() !== undefined, 'the closed alarm event at the webhook', 60_000);
  }, 90_000);
});
