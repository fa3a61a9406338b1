/**
 * Alarm detection and notifications, on `npm start`'s runtime and (e2e-cloud) on the template: an
 * `offline` rule made over the API, a device that disconnects over MQTT and the minute sweep (every
 * second here, its clock two minutes ahead) open the alarm, listed, e-mailed and told to a real
 * receiver, and the reconnection closes it — the registry stream's consumer, the sweep and the
 * notifier through their bundles, wiring and roles; a `threshold` rule's burst over the HTTPS
 * device door opens its alarm at ingest and a cooling point closes it — the ingest's bundle and
 * role. Then a transition put on the notifications queue (stores/alarm-notification-queue.ts)
 * becomes its `alarm` webhook event, received by a real HTTP receiver, and on open and close an
 * e-mail per address, read back from the SES v2 emulator; a redelivered transition sends nothing
 * twice; an SES outage loses nothing; and a transition that cannot be sent after the queue's
 * retries is shown on its rule and kept in the DLQ.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { until } from '../../local/ports';
import type { InProcessRuntime } from '../../local/runtime';
import type { AlarmTransition } from '../../lambdas/schemas/alarm-transitions';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { connectDevice } from '../helpers/mqtt-device';
import { cloudAssemblyDir, startRuntime } from '../helpers/runtime';
import { depthOf } from '../helpers/sqs';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

let runtime: InProcessRuntime;
let api: ApiClient;
let receiver: WebhookReceiver;
// Loaded after the runtime has set the environment (lambdas/shared/env.ts reads some of it once).
let send: (transition: AlarmTransition) => Promise<void>;
let db: import('../../lambdas/shared/clients').Db;
let ruleKey: typeof import('../../lambdas/stores/keys').alarmRuleKey;
let chillers: string;
let chillerRule: string;
const chillerMail = `chillers-${randomUUID().slice(0, 8)}@example.com`;

const RECEIVES = 4;
// SES made to fail and the sender changed need the runtime in this process (runtime.mail, the
// handlers' environment): on the template (e2e-cloud) the e-mails and events are tested, those not.
const inProcessOnly = cloudAssemblyDir() ? it.skip : it;

beforeAll(async () => {
  // Quick retries: a second apart, RECEIVES receives before the DLQ. The sweep every second, as of
  // two minutes ahead: an `offline` rule's 60 s have passed at its first run after a disconnection.
  runtime = (await startRuntime({
    sweepIntervalSeconds: 1,
    sweepClockAheadSeconds: 120,
    queues: { 'alarm-notifications': { visibilityTimeoutSeconds: 60, maxReceiveCount: RECEIVES, retry: { baseSeconds: 1, maxSeconds: 1 } } },
  })) as InProcessRuntime;
  api = apiClient(runtime.base_url, runtime.api_key);
  // The template's queue, for sendAlarmTransition in this process (it reads the URL at each call).
  process.env.ALARM_NOTIFICATIONS_QUEUE_URL = runtime.queue_urls['alarm-notifications'];
  receiver = await startWebhookReceiver();
  await api.post(`/workspaces/${runtime.workspace_id}/integrations`, { url: receiver.url });
  send = (await import('../../lambdas/stores/alarm-notification-queue')).sendAlarmTransition;
  db = (await import('../../lambdas/shared/clients')).registryDb();
  ruleKey = (await import('../../lambdas/stores/keys')).alarmRuleKey;
  // The workspace's first rule, made before any point reaches the ingest: the ingest's first read of
  // the workspace holds it, whichever test runs first. A first rule made later would reach it only
  // when its cached settings expire (DEVICE_PLACE_CACHE_SECONDS, docs/limits.md).
  chillers = (await api.post(`/workspaces/${runtime.workspace_id}/fleets`, { name: 'chillers' })).body.fleet.id;
  const rule = await api.post(`/workspaces/${runtime.workspace_id}/alarm-rules`, {
    name: 'chiller too warm',
    kind: 'threshold',
    severity: 'critical',
    target: { fleets: [chillers] },
    tag: 'env',
    field: 'temp',
    op: '>',
    value: 8,
    clear_value: 5,
    for_seconds: 0,
    notify: { emails: [chillerMail] },
  });
  expect([rule.status, rule.body.error]).toEqual([201, undefined]);
  chillerRule = rule.body.alarm_rule.id;
}, 120_000);
afterAll(async () => {
  await receiver?.stop();
  await runtime?.stop();
});

interface StoredMail {
  from: string;
  destination: { to: string[] };
  subject: string;
  body: { text?: string };
}
/** The e-mails the emulator got for an address (its JSON store). */
const mailsTo = async (address: string): Promise<StoredMail[]> => {
  const { emails } = (await (await fetch(`${runtime.mail_url}store`)).json()) as { emails: StoredMail[] };
  return emails.filter((e) => e.destination.to.includes(address));
};
/** The `alarm` events the receiver accepted for an alarm. */
const alarmEvents = (alarmId: string) => receiver.accepted().filter((e) => e.type === 'alarm' && (e.payload as { id?: string }).id === alarmId);
const address = (who: string) => `${who}-${randomUUID().slice(0, 8)}@example.com`;

const transition = (event: AlarmTransition['event'], notify: AlarmTransition['notify'], alarmId = `alm-${randomUUID()}`, ruleId = 'alr-1'): AlarmTransition => {
  const at = new Date().toISOString();
  return {
    id: `${alarmId}:${event}`,
    event,
    at,
    workspace_id: runtime.workspace_id,
    alarm: {
      id: alarmId,
      rule_id: ruleId,
      rule_name: 'cold room too warm',
      kind: 'threshold',
      severity: 'critical',
      device_id: 'dev-freezer',
      fleet_id: 'flt-cold',
      status: { opened: 'open', acknowledged: 'acknowledged', closed: 'closed' }[event],
      opened_at: at,
      acknowledged_at: event === 'acknowledged' ? at : null,
      acknowledged_by: event === 'acknowledged' ? 'ops key' : null,
      closed_at: event === 'closed' ? at : null,
      details: { value: 9.5, field: 'temp' },
    },
    notify,
  };
};

/** Both the notifications queue and the forward queue hold nothing: every message sent was handled. */
const drained = async () => {
  const depths = await Promise.all([depthOf(runtime.queue_urls['alarm-notifications']), depthOf(runtime.queue_urls.forward)]);
  return depths.every((d) => d.visible + d.inFlight + d.delayed === 0);
};

/** SES answering 503 on the emulator's port (stopped meanwhile), counting the requests. */
const deadSes = async () => {
  await runtime.mail.stop();
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"Service Unavailable"}');
  });
  const port = Number(new URL(runtime.ses_endpoint!).port);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    requests: () => requests,
    revive: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await runtime.mail.start();
    },
  };
};

describe('alarm detection', () => {
  it('opens an offline alarm when a device stays disconnected, e-mails and tells it, and closes it when the device reconnects', async () => {
    const ws = runtime.workspace_id;
    const ops = address('ops');
    const doors = (await api.post(`/workspaces/${ws}/fleets`, { name: 'doors' })).body.fleet.id as string;
    const made = await api.post(`/workspaces/${ws}/alarm-rules`, {
      name: 'door offline',
      kind: 'offline',
      severity: 'major',
      for_seconds: 60,
      target: { fleets: [doors] },
      notify: { emails: [ops] },
    });
    expect([made.status, made.body.error]).toEqual([201, undefined]);
    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'door-1', fleet_id: doors })).body.device.id as string;
    const { credentials } = (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body;
    const alarmsOf = async (status: string) =>
      (await api.get(`/workspaces/${ws}/alarms?status=${status}&device=${device}`)).body.alarms as Array<Record<string, any>>;
    const connected = async (expected: boolean) =>
      until(async () => (await api.get(`/workspaces/${ws}/devices/${device}`)).body.device.connected === expected, `connected ${expected}`, 30_000);

    const first = await connectDevice(credentials, { url: runtime.mqtt_url });
    await connected(true);
    await first.end();
    await connected(false);
    // The stream's consumer starts the timer; the sweep's next run (two minutes ahead) opens the alarm.
    await until(async () => (await alarmsOf('open')).length === 1, 'the offline alarm open', 45_000);
    const [opened] = await alarmsOf('open');
    expect(opened).toMatchObject({ rule_id: made.body.alarm_rule.id, kind: 'offline', device_id: device, fleet_id: doors, status: 'open' });
    expect(opened.details.disconnected_at).toEqual(expect.any(String));
    await until(async () => (await mailsTo(ops)).length === 1 && alarmEvents(opened.id).length === 1, 'the opening’s mail and event', 30_000);
    expect((await mailsTo(ops))[0].subject).toBe(`[major] door offline: alarm opened on ${device}`);
    expect(alarmEvents(opened.id)[0]).toMatchObject({ type: 'alarm', device_id: device, payload: { id: opened.id, status: 'open' } });

    const again = await connectDevice(credentials, { url: runtime.mqtt_url });
    try {
      await until(async () => (await alarmsOf('closed')).length === 1, 'the alarm closed by the reconnection', 30_000);
      expect((await alarmsOf('closed'))[0]).toMatchObject({ id: opened.id, details: { connected_at: expect.any(String) } });
      expect(await alarmsOf('open')).toEqual([]);
      await until(async () => (await mailsTo(ops)).length === 2 && alarmEvents(opened.id).length === 2, 'the close’s mail and event', 30_000);
      expect((await mailsTo(ops)).map((m) => m.subject)).toContain(`[major] door offline: alarm closed on ${device}`);
      expect(alarmEvents(opened.id).map((e) => (e.payload as { status: string }).status)).toEqual(['open', 'closed']);
    } finally {
      await again.end();
    }
  }, 150_000);
});

describe('threshold detection at ingest', () => {
  it('opens a threshold alarm on a burst over the HTTPS device door, e-mails and tells it, and closes it on a cooling point', async () => {
    const ws = runtime.workspace_id;
    const { deviceClient, deviceToken } = await import('../helpers/device-token');
    const device = (await api.post(`/workspaces/${ws}/devices`, { name: 'chiller-1', fleet_id: chillers })).body.device.id as string;
    const { credentials } = (await api.post(`/workspaces/${ws}/devices/${device}/identities`)).body;
    const door = deviceClient(runtime.base_url, await deviceToken(credentials));
    const alarmsOf = async () => (await api.get(`/workspaces/${ws}/alarms?rule=${chillerRule}&device=${device}`)).body.alarms as Array<Record<string, any>>;
    const publish = async (temps: number[]) => {
      const answer = await door.post(
        '/data',
        temps.map((temp) => ({ tag: 'env', payload: { temp } })),
      );
      expect([answer.status, answer.body.accepted]).toEqual([202, temps.length]);
    };

    // 32 points in one request: 4 °C, then warming by half a degree from 6 to 11.5, past 8 once (8.5 the first above it).
    await publish([...Array<number>(20).fill(4), ...Array.from({ length: 12 }, (_, i) => 6 + i / 2)]);
    await until(async () => (await alarmsOf()).length === 1, 'the threshold alarm open', 60_000);
    const [opened] = await alarmsOf();
    expect(opened).toMatchObject({ kind: 'threshold', severity: 'critical', device_id: device, fleet_id: chillers, status: 'open' });
    expect(opened.details).toMatchObject({ field: 'temp', tag: 'env', value: 8.5 });
    await until(async () => (await mailsTo(chillerMail)).length === 1 && alarmEvents(opened.id).length === 1, 'the opening’s mail and event', 30_000);
    expect((await mailsTo(chillerMail))[0].subject).toBe(`[critical] chiller too warm: alarm opened on ${device}`);

    // One point under clear_value (5) closes it.
    await publish([4.5]);
    await until(async () => (await alarmsOf())[0].status === 'closed', 'the alarm closed by the cooling point', 60_000);
    expect(await alarmsOf()).toEqual([expect.objectContaining({ id: opened.id, details: expect.objectContaining({ value: 8.5, closed_value: 4.5 }) })]);
    await until(async () => (await mailsTo(chillerMail)).length === 2 && alarmEvents(opened.id).length === 2, 'the close’s mail and event', 30_000);
    expect((await mailsTo(chillerMail)).map((m) => m.subject)).toEqual([
      `[critical] chiller too warm: alarm opened on ${device}`,
      `[critical] chiller too warm: alarm closed on ${device}`,
    ]);
    expect(alarmEvents(opened.id).map((e) => (e.payload as { status: string }).status)).toEqual(['open', 'closed']);
  }, 150_000);
});

describe('alarm notifications', () => {
  it('e-mails each address on open and sends the alarm webhook event, each once however often the transition comes', async () => {
    const [ops, oncall] = [address('ops'), address('oncall')];
    const opened = transition('opened', { emails: [ops, oncall], integrations: true });
    await send(opened);
    await until(
      async () => (await mailsTo(ops)).length === 1 && (await mailsTo(oncall)).length === 1 && alarmEvents(opened.alarm.id).length === 1,
      'both mails and the event',
    );

    const [mail] = await mailsTo(ops);
    expect(mail.from).toBe('alarms@fleetstream.local');
    expect(mail.subject).toBe('[critical] cold room too warm: alarm opened on dev-freezer');
    expect(mail.body.text).toContain(opened.alarm.id);
    const [event] = alarmEvents(opened.alarm.id);
    expect(event).toMatchObject({ type: 'alarm', direction: 'c2d', device_id: 'dev-freezer', fleet_id: 'flt-cold', payload: opened.alarm });

    // Redelivered (a retried transition, SQS's at least once): nothing is sent again.
    await send(opened);
    await send(opened);
    await until(drained, 'the redeliveries handled');
    expect(await mailsTo(ops)).toHaveLength(1);
    expect(await mailsTo(oncall)).toHaveLength(1);
    expect(alarmEvents(opened.alarm.id)).toHaveLength(1);
  });

  it('sends no e-mail on acknowledge, and no webhook event when the rule’s notify.integrations is false', async () => {
    const ops = address('ops');
    const acknowledged = transition('acknowledged', { emails: [ops], integrations: true });
    const closed = transition('closed', { emails: [ops], integrations: false }, acknowledged.alarm.id);
    await send(acknowledged);
    await send(closed);
    await until(
      async () => (await mailsTo(ops)).length === 1 && alarmEvents(acknowledged.alarm.id).length === 1,
      'the close’s mail and the acknowledge’s event',
    );
    await until(drained, 'both handled');

    expect((await mailsTo(ops)).map((m) => m.subject)).toEqual(['[critical] cold room too warm: alarm closed on dev-freezer']);
    expect(alarmEvents(acknowledged.alarm.id).map((e) => (e.payload as { status: string }).status)).toEqual(['acknowledged']);
  });

  inProcessOnly('loses nothing while SES is down: the transition is retried and its e-mail lands once SES is back', async () => {
    const ops = address('ops');
    const ses = await deadSes();
    try {
      await send(transition('opened', { emails: [ops], integrations: false }));
      await until(() => ses.requests() > 0, 'a send refused by the dead SES');
    } finally {
      await ses.revive();
    }
    await until(async () => (await mailsTo(ops)).length === 1, 'the mail, once SES is back');
    await until(drained, 'the transition handled');
    expect(await mailsTo(ops)).toHaveLength(1);
  });

  inProcessOnly(
    'after the retries, shows the failure on the rule (if it still exists) and keeps the transition in the DLQ',
    async () => {
      const ruleId = `alr-${randomUUID()}`;
      const goneRuleId = `alr-${randomUUID()}`;
      await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...ruleKey(runtime.workspace_id, ruleId), id: ruleId, name: 'cold room too warm' } }));
      const ops = address('ops');
      const dlqUrl = runtime.queue_urls['alarm-notifications-dlq'];
      const before = (await depthOf(dlqUrl)).visible;
      const ses = await deadSes();
      try {
        await send(transition('opened', { emails: [ops], integrations: false }, undefined, ruleId));
        await send(transition('opened', { emails: [ops], integrations: false }, undefined, goneRuleId));
        await until(async () => (await depthOf(dlqUrl)).visible === before + 2, 'both transitions in the DLQ', 90_000);
      } finally {
        await ses.revive();
      }
      const rule = (await db.doc.send(new GetCommand({ TableName: db.table, Key: ruleKey(runtime.workspace_id, ruleId), ConsistentRead: true }))).Item;
      expect(rule?.last_notification_error).toEqual({ at: expect.any(String), email: ops, error: 'Unknown: Service Unavailable (HTTP 503)' });
      expect(rule?.name).toBe('cold room too warm');
      // A rule deleted meanwhile is not written back into being.
      const gone = await db.doc.send(new GetCommand({ TableName: db.table, Key: ruleKey(runtime.workspace_id, goneRuleId), ConsistentRead: true }));
      expect(gone.Item).toBeUndefined();
      expect(await mailsTo(ops)).toHaveLength(0);
    },
    120_000,
  );

  inProcessOnly('on a deployment without a sender, shows it on the rule at once and still sends the webhook event', async () => {
    const ruleId = `alr-${randomUUID()}`;
    await db.doc.send(new PutCommand({ TableName: db.table, Item: { ...ruleKey(runtime.workspace_id, ruleId), id: ruleId } }));
    const dlqUrl = runtime.queue_urls['alarm-notifications-dlq'];
    const before = (await depthOf(dlqUrl)).visible;
    const ops = address('ops');
    const sender = process.env.ALARM_EMAIL_SENDER;
    process.env.ALARM_EMAIL_SENDER = ''; // the notifier reads it at each message, as a deployment without alarmSender has it
    try {
      const opened = transition('opened', { emails: [ops], integrations: true }, undefined, ruleId);
      await send(opened);
      await until(async () => alarmEvents(opened.alarm.id).length === 1 && (await drained()), 'the event sent and the transition handled');
    } finally {
      process.env.ALARM_EMAIL_SENDER = sender;
    }
    const rule = (await db.doc.send(new GetCommand({ TableName: db.table, Key: ruleKey(runtime.workspace_id, ruleId), ConsistentRead: true }))).Item;
    expect(rule?.last_notification_error).toEqual({
      at: expect.any(String),
      email: ops,
      error: 'This deployment sends no e-mail: its alarmSender setting is empty.',
    });
    // Not retried into the DLQ: no retry would mend it.
    expect((await depthOf(dlqUrl)).visible).toBe(before);
    expect(await mailsTo(ops)).toHaveLength(0);
  });
});
