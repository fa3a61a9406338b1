/**
 * The data-path measurement the request benchmark, the cost model and the data-path test share:
 * devices publish points on the running local runtime (HTTPS device API, or MQTT), one webhook
 * integration (data and events) receives them, and the runtime's request counter
 * (local/request-counter.ts) says what every AWS request of the way cost, by service, operation
 * and the function that made it.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SignJWT } from 'jose';
import { SCHEDULES } from '../lambdas/schedules';
import { until } from '../local/ports';
import { IOT_RULES_CALLER, isAwsRequest, requestCounter, sumBy, type CountRow } from '../local/request-counter';
import type { LocalRuntime } from '../local/runtime';
import { connectDevice, type Credentials, type MqttDevice } from '../test/helpers/mqtt-device';
import { startWebhookReceiver } from '../test/helpers/webhook-receiver';

/** How devices send: the door, how many devices, and how many points each device message carries. */
export interface TrafficShape {
  door: 'https' | 'mqtt';
  devices: number;
  /** Points per device message: 1 on MQTT (one publish per point, spec/device-mqtt.md); up to 100 per HTTPS request. */
  pointsPerMessage: number;
  /** Device messages each device sends. */
  messagesPerDevice: number;
  /**
   * Set: each device sends a message every `intervalMs` on its own clock (the devices spread over
   * the interval), answered or not, so that a slower door delays each message by its own latency
   * only, not every later one. Unset: each device sends its next message when the last is answered
   * (a closed loop: a slower door spreads the same messages over more time).
   */
  intervalMs?: number;
}

/** Where a request belongs: the device's door, the data path after it, or the measurement's own calls. */
export type Stage = 'door' | 'data path';

/** The Lambdas (and their requests) of each door, and IoT Core's rules: everything before the ingest queue. */
const DOOR_FUNCTIONS = new Set(['device-api', 'device-authorizer', 'mqtt-authorizer', 'device-mqtt', IOT_RULES_CALLER]);
const DOOR_QUEUES = new Set(['mqtt']);
/** The scheduled handlers (lambdas/schedules.ts): their runs and requests are left out of a data path's counts. */
const SCHEDULED: ReadonlySet<string> = new Set(SCHEDULES.map((s) => s.handler));

/** The stage of a counted row. */
export const stageOf = (row: CountRow): Stage => {
  if (row.service === 'API Gateway' || (row.service === 'IoT Core' && row.operation !== 'PublishOut')) return 'door';
  if (row.service === 'Lambda' && DOOR_FUNCTIONS.has(row.resource)) return 'door';
  if (DOOR_FUNCTIONS.has(row.caller)) return 'door';
  if (row.service === 'SQS' && DOOR_QUEUES.has(row.resource)) return 'door';
  return 'data path';
};

export interface DataPathResult {
  shape: TrafficShape;
  points: number;
  /** Every counted row of the run, the measurement's own queue-depth reads left out. */
  rows: CountRow[];
  /** Data entries and events the webhook received. */
  received: { data: number; events: number; posts: number };
  elapsedMs: number;
}

const token = (credentials: { devinfo: { device_id: string; key_id: string }; prvkey: string }) =>
  new SignJWT({ sub: credentials.devinfo.device_id, key: credentials.devinfo.key_id })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
    .sign(Buffer.from(credentials.prvkey, 'base64'));

const call = async (url: string, init: { method: string; headers: Record<string, string>; body?: unknown }) => {
  const response = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${init.method} ${url}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
};

/** Messages in a queue, visible or in flight. */
const depth = async (sqs: SQSClient, url: string) => {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  return Number(Attributes.ApproximateNumberOfMessages ?? 0) + Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
};

/**
 * Sends `shape`'s points to `runtime` (a fresh workspace, its devices and identities, one
 * integration for data and events on a local receiver), waits until the receiver has every point
 * and its `data` event and the queues are drained, and returns what was counted meanwhile.
 * `onSent` runs once every device message is accepted (e.g. to start a consumer that was held, so
 * that the points meet the data path as a backlog rather than as they arrive); `prepare` once the
 * workspace is made, before its devices (e.g. to give it an alarm rule).
 */
export const measureDataPath = async (
  runtime: LocalRuntime,
  shape: TrafficShape,
  { onSent, prepare }: { onSent?: () => void; prepare?: (workspaceId: string) => Promise<void> } = {},
): Promise<DataPathResult> => {
  const headers = { 'x-api-key': runtime.api_key };
  const base = runtime.base_url;
  const { workspace } = await call(`${base}/workspaces`, { method: 'POST', headers, body: { name: `data-path-${Date.now()}` } });
  await prepare?.(workspace.id);
  const devices: Array<{ id: string; token: string; credentials: Credentials }> = [];
  for (let i = 0; i < shape.devices; i++) {
    const { device } = await call(`${base}/workspaces/${workspace.id}/devices`, { method: 'POST', headers, body: { name: `d${i}` } });
    const { credentials } = await call(`${base}/workspaces/${workspace.id}/devices/${device.id}/identities`, { method: 'POST', headers });
    devices.push({ id: device.id, token: await token(credentials), credentials });
  }
  const receiver = await startWebhookReceiver();
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
  const mqttDevices: MqttDevice[] = [];
  try {
    await call(`${base}/workspaces/${workspace.id}/integrations`, {
      method: 'POST',
      headers,
      body: { name: 'data-path', url: receiver.url, data: true, events: true },
    });
    if (shape.door === 'mqtt') {
      for (const d of devices) mqttDevices.push(await connectDevice(d.credentials));
    }
    const points = shape.devices * shape.messagesPerDevice * shape.pointsPerMessage;
    const isPoint = (e: Record<string, unknown>) => e.workspace_id === workspace.id && 'timestamp_device' in e;
    const isDataEvent = (e: Record<string, unknown>) => e.workspace_id === workspace.id && e.type === 'data';
    // Connection and authentication events of the MQTT door are delivered too: wait for them first.
    const settle = async () => {
      let last = -1;
      await until(
        async () => {
          const now = receiver.accepted().length;
          const quiet = now === last && (await depth(sqs, runtime.queue_urls.forward)) === 0 && (await depth(sqs, runtime.queue_urls.ingest)) === 0;
          last = now;
          return quiet;
        },
        'the queues drained',
        60_000,
      );
    };
    if (shape.door === 'mqtt') await settle();

    const before = requestCounter().rows();
    const postsBefore = receiver.posts.length;
    const started = performance.now();
    let sent = 0;
    // Live devices' readings: a second apart, ending before now. Points older than two hours would
    // be late (their hours sealed) and each batch of them would stamp its hours twice (docs/storage.md,
    // "Rollups of sealed hours"), which is not what a live fleet's data path does.
    const firstReading = Date.now() - (shape.messagesPerDevice * shape.pointsPerMessage + 60) * 1000;
    const timestampOf = (n: number) => new Date(firstReading + n * 1000).toISOString();
    const onClock = async (d: number, m: number, send: () => Promise<void>) => {
      const at = started + (m + d / shape.devices) * shape.intervalMs!;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
      await send();
    };
    await Promise.all(
      devices.map(async (device, d) => {
        const paced: Array<Promise<void>> = [];
        for (let m = 0; m < shape.messagesPerDevice; m++) {
          const batch = Array.from({ length: shape.pointsPerMessage }, (_, p) => ({
            tag: p % 2 ? 'humidity' : 'temperature',
            payload: { value: 20 + ((d * 31 + m * 7 + p) % 100) / 10, unit: p % 2 ? '%' : 'C' },
            timestamp_device: timestampOf(m * shape.pointsPerMessage + p),
          }));
          const send = async () => {
            if (shape.door === 'https') {
              await call(`${base}/device/data`, { method: 'POST', headers: { authorization: `Bearer ${device.token}` }, body: batch });
            } else {
              // One publish per point (the protocol has no batch); the cloud stamps its time.
              for (const point of batch) await mqttDevices[d].data(point.tag, point.payload);
            }
            sent += batch.length;
          };
          if (shape.intervalMs === undefined) await send();
          else paced.push(onClock(d, m, send));
        }
        await Promise.all(paced);
      }),
    );
    onSent?.();
    await until(
      () => receiver.accepted().filter(isPoint).length >= sent && receiver.accepted().filter(isDataEvent).length >= sent,
      `${sent} points and their data events at the webhook`,
      300_000,
    );
    const elapsedMs = performance.now() - started;
    // The last deletes follow the last POST: wait for the queues to drain before reading the counts.
    await until(
      async () => (await depth(sqs, runtime.queue_urls.forward)) === 0 && (await depth(sqs, runtime.queue_urls.ingest)) === 0,
      'the queues drained',
      60_000,
    );
    const rows = requestCounter()
      .since(before)
      .filter((row) => !(row.service === 'SQS' && row.operation === 'GetQueueAttributes' && row.caller === ''))
      // A scheduled run (the minute sweep) that fell in the measurement is no point's cost: it runs whatever the traffic.
      .filter((row) => !SCHEDULED.has(row.caller) && !(row.service === 'Lambda' && SCHEDULED.has(row.resource)));
    const accepted = receiver.accepted();
    if (shape.door === 'mqtt') {
      // The devices' disconnection events reach this run's receiver before it stops: left to a
      // stopped one, their retries (an hour of them) would keep a next run's queues from draining.
      await Promise.all(mqttDevices.splice(0).map((d) => d.end()));
      await until(
        () => receiver.accepted().filter((e) => e.workspace_id === workspace.id && e.type === 'disconnection').length >= devices.length,
        'the devices’ disconnection events',
        120_000,
      );
      await settle();
    }
    return {
      shape,
      points,
      rows,
      received: {
        data: accepted.filter(isPoint).length,
        events: accepted.filter((e) => e.workspace_id === workspace.id && 'type' in e).length,
        posts: receiver.posts.length - postsBefore,
      },
      elapsedMs,
    };
  } finally {
    await Promise.all(mqttDevices.map((d) => d.end()));
    sqs.destroy();
    await receiver.stop();
  }
};

/** One line of a per-1,000-points table. */
export interface PerThousand {
  stage: Stage;
  service: string;
  operation: string;
  requests: number;
  /** Of which ReceiveMessage calls that returned nothing. */
  empty: number;
}

/** The run's counts per 1,000 points, by stage, service and operation. */
export const perThousandPoints = (result: DataPathResult): PerThousand[] => {
  const scale = 1000 / result.points;
  const staged = result.rows.map((row) => ({ ...row, caller: stageOf(row) }));
  return sumBy(staged, ['caller', 'service', 'operation']).map((row) => ({
    stage: row.caller as Stage,
    service: row.service,
    operation: row.operation,
    requests: row.requests * scale,
    empty: row.empty * scale,
  }));
};

/** AWS requests per 1,000 points of one stage (webhook POSTs and free stream reads left out). */
export const awsRequestsPerThousand = (result: DataPathResult, stage?: Stage) =>
  (result.rows.filter((row) => isAwsRequest(row) && (!stage || stageOf(row) === stage)).reduce((sum, row) => sum + row.requests, 0) * 1000) / result.points;
