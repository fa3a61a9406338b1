import * as z from 'zod';
import type { Db } from '../../shared/clients';
import { AppError, ConflictError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { countMetric } from '../../shared/metrics';
import { ConditionPayloadSchema, DataPointInputSchema, type DataPointInput } from '../../schemas/device-api';
import { JobObjectSchema } from '../../schemas/job';
import { TokenSchema } from '../../schemas/common';
import { findDeviceLocator, getDeviceOfWorkspace, type DeviceLocator } from '../../stores/device-store';
import { closedSessionsOfLocator } from '../../stores/device-session-store';
import type { DownMessage } from '../../stores/device-channel';
import { listOpenConditionsOfDevice, setDeviceConnection, setDeviceManifest } from '../../stores/device-mqtt-store';
import { closeCondition, openCondition } from '../alarms/conditions';
import { deviceStatusOf, queueEvents, reportFotaResult, reportJobResult, type DeviceApiDeps } from './device-api';
import { handleStateReport, statusStateEntries } from '../state/state-doors';
import {
  admitUpMessages,
  decodePayload,
  drop,
  foreignClient,
  readUpMessage,
  RuleMessageSchema,
  type RuleMessage,
  type UpMessage,
  type UpMessageQuotas,
} from './mqtt-messages';
import { eventMessage, type DevicePlace } from '../webhooks/events';
import type { ConsoleLive } from '../console-live/live';
import { lateFotaOutcomeEvent } from '../fleet-ops/fota';
import { lateJobResultEvent } from '../fleet-ops/jobs';
import { fotaArgs } from './live-delivery';
import { sentByClosedSession } from './mqtt-sessions';
import { observe, verifyDeviceToken, type DeviceCaller, type Forward, type TokenRules } from '../registry/identities';

/** The topics of one device (spec/device-mqtt.md): it publishes on `data` and `up`, subscribes to `dn`. */
export const deviceTopics = (deviceId: string) => ({ data: `j/data/${deviceId}`, up: `j/up/${deviceId}`, dn: `j/dn/${deviceId}` });

/** How the authorizer's policy names resources: `arn:<partition>:iot:<region>:<account>`. */
export type IotArnBase = string;

/** An IoT Core policy document, as a custom authorizer returns it. */
export interface IotPolicy {
  Version: '2012-10-17';
  Statement: Array<{ Effect: 'Allow' | 'Deny'; Action: string | string[]; Resource: string | string[] }>;
}

/**
 * The IoT Core policy of one connected device: it connects only with its own ID as client ID,
 * publishes only on `j/data/<id>/…` and `j/up/<id>`, subscribes to and receives only `j/dn/<id>`.
 * Device IDs hold no policy wildcard (`dev-` and 20 letters or digits).
 */
export const devicePolicy = (deviceId: string, arn: IotArnBase): IotPolicy => {
  const topics = deviceTopics(deviceId);
  return {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: 'iot:Connect', Resource: `${arn}:client/${deviceId}` },
      { Effect: 'Allow', Action: 'iot:Publish', Resource: [`${arn}:topic/${topics.data}/*`, `${arn}:topic/${topics.up}`] },
      { Effect: 'Allow', Action: 'iot:Subscribe', Resource: `${arn}:topicfilter/${topics.dn}` },
      { Effect: 'Allow', Action: 'iot:Receive', Resource: `${arn}:topic/${topics.dn}` },
    ],
  };
};

/** What an IoT Core custom authorizer answers (developer guide, "Defining your Lambda function"). */
export interface IotAuthorizerResult {
  isAuthenticated: boolean;
  principalId: string;
  disconnectAfterInSeconds: number;
  refreshAfterInSeconds: number;
  policyDocuments: string[];
  context?: Record<string, string>;
}

/**
 * How often IoT Core asks the authorizer again about an open connection (300–86,400 s): a revoked
 * identity is disconnected within this time.
 */
export const MQTT_REFRESH_SECONDS = 600;
/** Longest a connection lasts before the device must connect again (IoT Core's maximum). */
export const MQTT_DISCONNECT_AFTER_SECONDS = 86_400;

/** What an MQTT CONNECT presents. */
export interface MqttConnect {
  clientId?: string;
  username?: string;
  /** The password as the client sent it (the device JWT). */
  password?: string;
}

const denied = (): IotAuthorizerResult => ({
  isAuthenticated: false,
  principalId: 'denied',
  disconnectAfterInSeconds: MQTT_REFRESH_SECONDS,
  refreshAfterInSeconds: MQTT_REFRESH_SECONDS,
  policyDocuments: [],
});

/**
 * The custom authorizer's answer to an MQTT CONNECT: client ID = username = device ID, password =
 * a device token checked by the HTTPS door's rules (`verifyDeviceToken`), an expired token
 * included: past the clock tolerance it is refused on both doors, so a client must sign a fresh
 * token when it reconnects (docs/security.md, "The MQTT door"). Every check of a token is an
 * `authentication` event (`proto: mqtt`); an accepted one gets the device's own policy.
 */
export const authorizeMqttConnect = async (
  db: Db,
  forward: Forward,
  connect: MqttConnect,
  arn: IotArnBase,
  rules: TokenRules = {},
): Promise<IotAuthorizerResult> => {
  const { clientId, username, password } = connect;
  if (!username || !password || clientId !== username) {
    countMetric('DeviceAuthenticationFailures');
    return denied();
  }
  try {
    const caller = await verifyDeviceToken(db, forward, password, 'mqtt', { ...rules, subject: username });
    return {
      isAuthenticated: true,
      // IoT Core wants [a-zA-Z0-9]{1,128}: the device ID without its dash.
      principalId: caller.deviceId.replace(/[^A-Za-z0-9]/g, ''),
      disconnectAfterInSeconds: MQTT_DISCONNECT_AFTER_SECONDS,
      refreshAfterInSeconds: MQTT_REFRESH_SECONDS,
      policyDocuments: [JSON.stringify(devicePolicy(caller.deviceId, arn))],
      context: { ...caller },
    };
  } catch (error) {
    if (error instanceof AppError && error.status === 401) return denied();
    throw error;
  }
};

export { RuleMessageSchema, type RuleMessage } from './mqtt-messages';

/** A lifecycle event from `$aws/events/presence/connected|disconnected/<client id>` (IoT Core's layout). */
export const PresenceMessageSchema = z.object({
  topic: z.string(),
  clientId: z.string(),
  timestamp: z.number(),
  eventType: z.enum(['connected', 'disconnected']),
  ipAddress: z.string().optional(),
  disconnectReason: z.string().optional(),
});
export type PresenceMessage = z.infer<typeof PresenceMessageSchema>;

/** Where the MQTT door's handling sends what it accepts, and how it answers devices. */
export interface DeviceMqttDeps extends DeviceApiDeps {
  /** Publishes to a device's `j/dn` topic (stores/device-channel.ts publishToDevice). */
  publish: (deviceId: string, message: DownMessage) => Promise<void>;
  /** Puts data publishes on the ingest queue as the data rule does (stores/queue-store.ts sendMessages). */
  relayData: (messages: RuleMessage[]) => Promise<void>;
  /** Counts `j/up` messages against their devices' daily quotas, and in their workspaces' usage. */
  quotas: UpMessageQuotas;
  /** Tells the open consoles of a connection change (domain/console-live); never rejects. */
  live?: ConsoleLive;
}

/**
 * A full firmware agent's `@fota` report: its outcome (`success`, `fail`), or its progress
 * (`in_progress`, with `msg` saying how far: downloading, installing…), our addition.
 */
const FotaOutcomeSchema = z.object({
  // As long as the HTTPS door's firmware_version: the outcome may be forwarded as a late event.
  fw_version: z.string().max(64).optional(),
  result: z.enum(['success', 'fail', 'in_progress']),
  msg: z.string().optional(),
});

const FOTA_STATUS_OF = { success: 'done', fail: 'failed', in_progress: 'in_progress' } as const;

// Payloads are bounded (CONDITION_PAYLOAD_MAX_BYTES) before anything is kept: an open condition is a registry item.
const ConditionSchema = z.union([
  z.object({ uuid: z.string().min(1).max(128), tag: TokenSchema, payload: ConditionPayloadSchema, start: z.iso.datetime({ offset: true }) }),
  z.object({ uuid: z.string().min(1).max(128), payloadf: ConditionPayloadSchema, finish: z.iso.datetime({ offset: true }) }),
]);

const callerOfLocator = (deviceId: string, locator: DeviceLocator): DeviceCaller => ({
  accountId: locator.account_id,
  workspaceId: locator.workspace_id,
  deviceId,
  identityId: '',
});

const callerOf = async (db: Db, deviceId: string): Promise<DeviceCaller | undefined> => {
  const locator = await findDeviceLocator(db, deviceId);
  return locator && callerOfLocator(deviceId, locator);
};

/** Why a message a session closed by a revocation sent, still on its way when it was closed, is dropped. */
export const CLOSED_SESSION_DROP = 'sent by a session closed when its credentials were revoked';

/** A device's data publish, as the data path stores it: its device, its point, and when it arrived (Unix ms). */
export interface DataPublish {
  deviceId: string;
  point: DataPointInput;
  receivedAt: number;
}

/**
 * The data point of a `j/data/<id>/<tag>` publish: the payload as is, under the topic's tag, or
 * why it is dropped (a payload that is not JSON or too large, a bad tag or topic); the publish
 * carries no time, so the data path stamps it.
 */
export const parseDataPublish = (rule: RuleMessage): DataPublish | { drop: string; deviceId: string; topic: string } => {
  const { topic, payload, received_at } = rule;
  const [, , deviceId, tag, ...rest] = topic.split('/');
  if (!deviceId || rest.length) return { drop: 'not a j/data/<device>/<tag> topic', deviceId: deviceId ?? '', topic };
  const foreign = foreignClient(rule, deviceId);
  if (foreign) return { drop: foreign, deviceId, topic };
  const decoded = decodePayload(payload);
  const point = decoded && DataPointInputSchema.safeParse({ tag, payload: decoded.value });
  if (!point?.success) {
    return { drop: decoded ? (point?.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') ?? '') : 'payload is not JSON', deviceId, topic };
  }
  return { deviceId, point: point.data, receivedAt: received_at };
};

/** Logs a data publish the data path drops (the device is never told, and never blocked). */
export const dropDataPublish = (deviceId: string, topic: string, reason: string) => drop(deviceId, topic, reason);

/** The `#status` answer: pending jobs in `expected`, the pending FOTA as `@fota` when no job waits (see below), the desired keys; the reported ones in `current`. */
const statusAnswer = async (deps: DeviceMqttDeps, caller: DeviceCaller) => {
  const { status, state } = await deviceStatusOf(deps, caller);
  const expected: Record<string, { v: unknown }> = {};
  for (const job of status.jobs) expected[`@${job.name}`] = { v: { args: job.value } };
  // Simple clients ignore a whole answer that holds `@fota`: while jobs wait, the FOTA follows in
  // its own `@fota` message, so that they still run their jobs and full agents still get it.
  const fotaApart = status.fota && status.jobs.length > 0;
  if (status.fota && !fotaApart) expected['@fota'] = { v: { args: fotaArgs(status.fota.value) } };
  // The desired keys after the jobs, the reported ones in `current` (spec/fleet-state.md §3).
  const entries = statusStateEntries(state);
  await deps.publish(caller.deviceId, { key: '#status', value: { expected: { ...expected, ...entries.expected }, current: entries.current } });
  if (status.fota && fotaApart) await deps.publish(caller.deviceId, { key: '@fota', value: { args: fotaArgs(status.fota.value) } });
};

const openConditionsAnswer = async (deps: DeviceMqttDeps, caller: DeviceCaller) => {
  const open = await listOpenConditionsOfDevice(deps.db, caller.deviceId);
  const value = Object.fromEntries(open.map(({ uuid, tag, start }) => [uuid, { tag, start }]));
  await deps.publish(caller.deviceId, { key: '#conditions', value });
};

const placeOf = async (db: Db, caller: DeviceCaller): Promise<DevicePlace | undefined> => {
  const device = await getDeviceOfWorkspace(db, caller.workspaceId, caller.deviceId);
  return device && { workspace_id: device.workspace_id, fleet_id: device.fleet_id, device_id: device.id };
};

/** Domain refusals (unknown job, another result, a bad FOTA outcome) are the device's mistake: logged, not retried. */
const unlessRefused = (deviceId: string, topic: string) => (error: unknown) => {
  if (error instanceof AppError && error.status < 500) return drop(deviceId, topic, error.message);
  throw error;
};

/**
 * A condition the device opens or closes: the same domain functions as the HTTPS door's
 * `POST /device/conditions` (domain/alarms/conditions.ts) keep its record and log it.
 */
const handleCondition = async (deps: DeviceMqttDeps, caller: DeviceCaller, value: unknown, { topic, arrival }: { topic: string; arrival: string }) => {
  const { deviceId } = caller;
  const condition = ConditionSchema.safeParse(value);
  if (!condition.success) return drop(deviceId, topic, 'not a condition opening or closing');
  const c = condition.data;
  const place = await placeOf(deps.db, caller);
  if (!place) return drop(deviceId, topic, 'unknown device');
  if ('start' in c) {
    await openCondition(deps, place, { uuid: c.uuid, tag: c.tag, payload: c.payload, start: c.start }, arrival);
  } else {
    // A standard queue keeps no order: a close handled before its opening is kept for it.
    await closeCondition(deps, place, { uuid: c.uuid, finish_payload: c.payloadf, finish: c.finish }, arrival, { keepEarly: true });
  }
};

/**
 * One `j/up/<id>` message `{key, value}` (spec/device-mqtt.md), read and admitted by its device's
 * daily quota: results go through the same domain functions as the HTTPS door's routes
 * (`reportJobResult`, `reportFotaResult`), requests are answered on `j/dn`, reports become the
 * interface's device events. Unknown keys are dropped and logged; a failure of a queue or of the
 * data plane throws, so the message is retried.
 */
export const handleUpMessage = async (deps: DeviceMqttDeps, { deviceId, topic, key, value, receivedAt, event }: UpMessage) => {
  const locator = await findDeviceLocator(deps.db, deviceId);
  if (!locator) return drop(deviceId, topic, 'unknown device');
  if (sentByClosedSession(closedSessionsOfLocator(locator), receivedAt)) return drop(deviceId, topic, CLOSED_SESSION_DROP);
  const caller = callerOfLocator(deviceId, locator);
  const arrival = new Date(receivedAt).toISOString();
  if (event) {
    if (key === '__manifest') await setDeviceManifest(deps.db, caller.workspaceId, deviceId, value ?? null);
    const place = await placeOf(deps.db, caller);
    if (!place) return drop(deviceId, topic, 'unknown device');
    return queueEvents(deps, place, [{ ...event, ts: arrival }], { arrival });
  }

  if (key === '#status') return statusAnswer(deps, caller);
  if (key === '#now') {
    const ms = Date.now();
    await deps.publish(deviceId, { key: '#now', value: { s: Math.floor(ms / 1000), ms } });
    const place = await placeOf(deps.db, caller);
    // Already answered: a lost event must not make the device's request run (and answer) again.
    if (place) await observe(deps.forward, [eventMessage(place, 'timestamp', 'd2c', { s: Math.floor(ms / 1000), ms })]);
    return;
  }
  if (key === '#conditions') return openConditionsAnswer(deps, caller);
  if (key === '#state') {
    const dropped = await handleStateReport(deps, caller, value);
    return dropped ? drop(deviceId, topic, dropped) : undefined;
  }
  if (key === 'condition') return handleCondition(deps, caller, value, { topic, arrival });
  if (key === '@fota') {
    const outcome = FotaOutcomeSchema.safeParse(value);
    if (!outcome.success) return drop(deviceId, topic, 'not a FOTA report {"fw_version", "result": "success"|"fail"|"in_progress", "msg"}');
    const { fw_version, result, msg } = outcome.data;
    const report = {
      status: FOTA_STATUS_OF[result],
      ...(fw_version ? { firmware_version: fw_version } : {}),
      ...(msg ? { message: msg.slice(0, 1024) } : {}),
    };
    await reportFotaResult(deps, caller, report).catch(async (error: unknown) => {
      // What the FOTA can no longer take is recorded as an event, not lost (operations.md §1).
      const place = error instanceof ConflictError ? await placeOf(deps.db, caller) : undefined;
      const late = place && (await lateFotaOutcomeEvent(deps.db, deviceId, report, place));
      if (late) return deps.forward([late]);
      return unlessRefused(deviceId, topic)(error);
    });
    return;
  }
  if (key.startsWith('@')) {
    const name = TokenSchema.safeParse(key.slice(1));
    if (!name.success) return drop(deviceId, topic, `bad job name ${key}`);
    // A job result is an object on the HTTPS door; any other JSON value is kept as {"value": …}.
    const result = JobObjectSchema.safeParse(value).success ? (value as Record<string, unknown>) : { value };
    if (!JobObjectSchema.safeParse(result).success) return drop(deviceId, topic, 'job result too large');
    await reportJobResult(deps, caller, name.data, result).catch(async (error: unknown) => {
      // A result for a job that already ended (or is still queued) is recorded as a `job` event; the job stays as it is.
      const place = error instanceof ConflictError ? await placeOf(deps.db, caller) : undefined;
      const late = place && (await lateJobResultEvent(deps.db, deviceId, name.data, result, place));
      if (late) return deps.forward([late]);
      return unlessRefused(deviceId, topic)(error);
    });
    return;
  }
  drop(deviceId, topic, `unknown key ${key}`);
};

/**
 * A presence event: the device's connection state (applied only when newer than the last one),
 * and a `connection` (`device_ip`, `connected_at`) or `disconnection` event. A disconnection
 * for `AUTH_ERROR` ("the client failed to authenticate or authorization failed": a publish
 * outside the device's topics, which closes the connection) is also an `authorization` event.
 */
export const handlePresence = async (deps: DeviceMqttDeps, presence: PresenceMessage) => {
  const caller = await callerOf(deps.db, presence.clientId);
  if (!caller) return; // not one of our devices (IoT Core reports every client)
  const place = await placeOf(deps.db, caller);
  if (!place) return;
  const at = new Date(presence.timestamp).toISOString();
  const connected = presence.eventType === 'connected';
  // A second connection with the device's client ID took over (IoT Core closes the first one):
  // the device is still connected, whatever order the two events come in.
  const takenOver = presence.disconnectReason === 'DUPLICATE_CLIENTID';
  const applied = !takenOver && (await setDeviceConnection(deps.db, caller.workspaceId, caller.deviceId, connected, at, presence.timestamp));
  // Only a state that was recorded (the newest): an older event arriving late changes nothing shown.
  const telling = applied
    ? deps.live?.([{ workspaceId: place.workspace_id, kind: 'connection', message: { device_id: place.device_id, fleet_id: place.fleet_id, connected, at } }])
    : undefined;
  const events = [
    connected
      ? eventMessage(place, 'connection', 'd2c', { device_ip: presence.ipAddress ?? '', connected_at: at })
      : eventMessage(place, 'disconnection', 'd2c', { disconnected_at: at, reason: presence.disconnectReason ?? '' }),
  ];
  if (presence.disconnectReason === 'AUTH_ERROR') events.unshift(authorizationEvent(place, { reason: 'publish outside the device topics' }));
  await Promise.all([deps.forward(events), telling]);
};

/** The `authorization` event of a refused publish or subscribe. */
export const authorizationEvent = (place: DevicePlace, payload: Record<string, string>) =>
  eventMessage(place, 'authorization', 'd2c', { clientid: place.device_id, result: 'denied', ...payload });

/**
 * Records a refused publish or subscribe as an `authorization` event, where the broker itself
 * sees the refusal (the local broker; IoT Core reports refused publishes as disconnections).
 */
export const recordAuthorizationRefusal = async (db: Db, forward: Forward, deviceId: string, action: 'publish' | 'subscribe', topic: string) => {
  const caller = await callerOf(db, deviceId);
  const place = caller && (await placeOf(db, caller));
  if (place) await forward([authorizationEvent(place, { action, topic })]);
};

/** How a batch of MQTT queue messages went: the IDs of those to retry. */
export const handleMqttQueueMessages = async (deps: DeviceMqttDeps, records: Array<{ messageId: string; body: string }>) => {
  const failed: string[] = [];
  const data: Array<{ messageId: string; message: RuleMessage }> = [];
  const ups: Array<{ messageId: string; up: UpMessage }> = [];
  const others: Array<() => Promise<unknown>> = [];
  const ids: string[] = [];
  for (const { messageId, body } of records) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      logger.error('unreadable mqtt queue message', { messageId });
      failed.push(messageId); // to the DLQ after the redrive limit, where it can be looked at
      continue;
    }
    const topic = (parsed as { topic?: unknown })?.topic;
    if (typeof topic === 'string' && topic.startsWith('$aws/events/presence/')) {
      const presence = PresenceMessageSchema.safeParse(parsed);
      if (!presence.success) {
        logger.warn('presence event not understood', { messageId });
        continue;
      }
      others.push(() => handlePresence(deps, presence.data));
      ids.push(messageId);
      continue;
    }
    const message = RuleMessageSchema.safeParse(parsed);
    if (!message.success) {
      logger.warn('mqtt rule message not understood', { messageId });
      continue;
    }
    if (message.data.topic.startsWith('j/data/')) data.push({ messageId, message: message.data });
    else if (message.data.topic.startsWith('j/up/')) {
      const up = readUpMessage(message.data);
      if (up) ups.push({ messageId, up });
    } else logger.warn('mqtt rule message on an unexpected topic', { messageId, topic: message.data.topic });
  }
  // Data publishes belong on the ingest queue, where the data rule puts them since the data path
  // stores them directly; those a deployment before that left here are passed on unchanged.
  if (data.length) {
    try {
      await deps.relayData(data.map((d) => d.message));
    } catch (error) {
      logger.warn('mqtt data messages not passed on to the ingest queue', { error: error as Error });
      failed.push(...data.map((d) => d.messageId));
    }
  }
  // Counted once for the batch; a batch whose count fails is retried (each of its messages counts again).
  try {
    for (const { messageId, up } of await admitUpMessages(deps.quotas, ups)) {
      others.push(() => handleUpMessage(deps, up));
      ids.push(messageId);
    }
  } catch (error) {
    logger.warn('counting j/up messages failed', { error: error as Error });
    failed.push(...ups.map((u) => u.messageId));
  }
  const outcomes = await Promise.allSettled(others.map((run) => run()));
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'rejected') {
      logger.warn('mqtt message failed', { error: outcome.reason as Error, messageId: ids[i] });
      failed.push(ids[i]);
    }
  });
  return failed;
};
