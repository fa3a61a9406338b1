import * as z from 'zod';
import { logger } from '../../shared/logger';
import { DeviceEventInputSchema, type DeviceEventInput } from '../../schemas/device-api';
import type { DeviceQuota } from '../limits/device-quota';
import { UsageTally } from '../limits/usage';

/** A device's publish on `j/data/<id>/<tag>` or `j/up/<id>`, as the topic rules forward it. */
export const RuleMessageSchema = z.object({
  topic: z.string(),
  /** The MQTT payload, base64 (`encode(*, 'base64')`): it may be anything, JSON or not. */
  payload: z.string(),
  /** Arrival at the broker, Unix milliseconds (`timestamp()`). */
  received_at: z.number(),
  /**
   * The publishing client (`clientid()`): the rules act only when it is the topic's device, whose
   * locator says which of its sessions were closed (`sentByClosedSession`). Absent on messages
   * of rules from before it was selected.
   */
  client_id: z.string().optional(),
});
export type RuleMessage = z.infer<typeof RuleMessageSchema>;

/**
 * Why a device's publish is dropped before anything reads it, or undefined: a rule message that
 * names another client than the topic's device (the rules' WHERE never sends one).
 */
export const foreignClient = ({ client_id }: RuleMessage, deviceId: string) =>
  client_id !== undefined && client_id !== deviceId ? `published by client ${client_id}, not the topic's device` : undefined;

/** The payload of a publish as JSON, or undefined when it is not JSON. */
export const decodePayload = (payload: string) => {
  const text = Buffer.from(payload, 'base64').toString('utf8');
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
};

/** Why a device's message was dropped: logged (the device is never told, and never blocked). */
export const drop = (deviceId: string, topic: string, reason: string) => logger.warn('mqtt message dropped', { deviceId, topic, reason });

const UpMessageSchema = z.object({ key: z.string().min(1).max(128), value: z.unknown() });

/** The `j/up` keys whose value is reported as a device event of the interface. */
const REPORTED_KEYS: Record<string, DeviceEventInput['type']> = {
  __manifest: 'manifest',
  __info: 'os_info',
  __stats: 'stats_info',
  __gnss: 'gnss_info',
  __cellular: 'cellular_info',
};

/** A `j/up/<id>` message `{key, value}` (spec/device-mqtt.md), read. */
export interface UpMessage {
  deviceId: string;
  topic: string;
  key: string;
  value: unknown;
  /** Arrival at the broker, Unix milliseconds. */
  receivedAt: number;
  /**
   * The device event it reports (a `__` key of the interface's reports, or a private `_` key),
   * checked as the HTTPS door checks events: it counts against `events_per_device_per_day`. A
   * message without one (a request, a result, a condition) counts against `up_messages_per_device_per_day`.
   */
  event?: DeviceEventInput;
}

/** The event a `j/up` key reports, or undefined for any other key (a request, a result, a condition, an unknown key). */
const eventOf = (key: string, value: unknown): { type: DeviceEventInput['type']; payload: unknown } | undefined => {
  if (REPORTED_KEYS[key]) return { type: REPORTED_KEYS[key], payload: value ?? null };
  if (key.startsWith('_') && key.length > 1) return { type: key.startsWith('__') ? 'private_strong' : 'private_weak', payload: { key, value: value ?? null } };
  return undefined;
};

/**
 * Reads a `j/up/<id>` message: its device, key and value, and the event it reports. A message that
 * another client than the topic's device published (`foreignClient`), one that is not a
 * `{key, value}` JSON object on a device's topic, or an event the HTTPS door would refuse
 * (a payload over 8 KB), is dropped and logged, counted nowhere.
 */
export const readUpMessage = (rule: RuleMessage): UpMessage | undefined => {
  const { topic, payload, received_at } = rule;
  const [, , deviceId, ...rest] = topic.split('/');
  if (!deviceId || rest.length) return void drop(deviceId ?? '', topic, 'not a j/up/<device> topic');
  const foreign = foreignClient(rule, deviceId);
  if (foreign) return void drop(deviceId, topic, foreign);
  const decoded = decodePayload(payload);
  const message = decoded && UpMessageSchema.safeParse(decoded.value);
  if (!message?.success) return void drop(deviceId, topic, 'not a {"key", "value"} JSON object');
  const { key, value } = message.data;
  const reported = eventOf(key, value);
  if (!reported) return { deviceId, topic, key, value, receivedAt: received_at };
  // The HTTPS door's event schema, so that both doors take the same events (payload ≤ 8 KB).
  const event = DeviceEventInputSchema.safeParse(reported);
  if (!event.success) return void drop(deviceId, topic, `${key}: ${event.error.issues.map((i) => i.message).join('; ')}`);
  return { deviceId, topic, key, value, receivedAt: received_at, event: event.data };
};

/** What the MQTT door counts its `j/up` messages with. */
export interface UpMessageQuotas {
  /** The container's share of its devices' `events_per_device_per_day` (claimed in slices). */
  events: DeviceQuota;
  /** The container's share of its devices' `up_messages_per_device_per_day` (claimed in slices). */
  upMessages: DeviceQuota;
  /** Adds a batch's counts to its workspaces' usage (one write per workspace and day; one that fails is kept for the next). */
  usage: (tally: UsageTally) => Promise<void>;
}

/**
 * Counts a batch's `j/up` messages against their devices' daily quotas, once per device and quota
 * (not once per message), in the batch's order: each device's first messages up to what its quota
 * lets in are admitted, the others dropped and counted as refused. The workspaces' usage gets the
 * refused events and every other message (the events admitted are counted by the ingest, which
 * forwards them). A message of an unknown device is dropped and logged, counted nowhere.
 * @returns the admitted items, in order.
 * @throws when a claim fails: the batch's `j/up` messages are then retried.
 */
export const admitUpMessages = async <T extends { up: UpMessage }>(quotas: UpMessageQuotas, items: T[], now = Date.now()): Promise<T[]> => {
  const wanted = new Map<string, { quota: DeviceQuota; deviceId: string; n: number }>();
  const keyOf = ({ up }: T) => `${up.event ? 'events' : 'up'}/${up.deviceId}`;
  for (const item of items) {
    const key = keyOf(item);
    const entry = wanted.get(key) ?? { quota: item.up.event ? quotas.events : quotas.upMessages, deviceId: item.up.deviceId, n: 0 };
    entry.n += 1;
    wanted.set(key, entry);
  }
  const decisions = new Map(await Promise.all([...wanted].map(async ([key, { quota, deviceId, n }]) => [key, await quota(deviceId, n, now)] as const)));
  const left = new Map([...decisions].map(([key, decision]) => [key, decision?.accepted ?? 0]));
  const tally = new UsageTally();
  const admitted: T[] = [];
  let refused = 0;
  for (const item of items) {
    const { up } = item;
    const decision = decisions.get(keyOf(item));
    if (!decision) {
      drop(up.deviceId, up.topic, 'unknown device');
      continue;
    }
    const admit = (left.get(keyOf(item)) ?? 0) > 0;
    if (admit) {
      left.set(keyOf(item), left.get(keyOf(item))! - 1);
      admitted.push(item);
    } else refused++;
    if (up.event && admit) continue;
    const counts = up.event ? { events_in: 1, events_refused: 1 } : { up_messages_in: 1, up_messages_refused: admit ? 0 : 1 };
    tally.add(decision.workspace_id, up.receivedAt, counts);
  }
  if (refused) logger.info('j/up messages past their devices’ daily quotas dropped', { messages: refused });
  if (tally.size) await quotas.usage(tally);
  return admitted;
};
