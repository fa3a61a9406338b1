import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { getDeviceOfWorkspace } from '../../stores/device-store';
import { valueAt } from '../data/bucket-totals';
import { detectionDeps, rulesOfKind, targetReader, type DetectionDeps } from './detection';
import { ALARM_RULES_CACHE_MS } from './rule-cache';
import { evaluatePoint, readSides, thresholdSides, type Side, type ThresholdRule, type ThresholdSides, type ValuedPoint } from './threshold';

/** A data message of an ingest batch, as the threshold evaluation reads it (domain/data/ingest.ts's messages). */
export interface ThresholdMessage {
  account_id?: string;
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  device_name: string;
  timestamp_in: string;
  points: Array<{ tag: string; timestamp_device: string; payload: unknown }>;
}

/** What the evaluation of a batch needs (one per container: its memory is the container's). */
export interface ThresholdDetection {
  deps: DetectionDeps<ThresholdRule>;
  /** The workspace's settings, read by the ingest anyway (cached): its `alarm_rules_version` 0 says it has no rule, at no cost. */
  settings: (accountId: string, workspaceId: string) => Promise<{ alarm_rules_version?: number } | undefined>;
  /** A device's item, for the rules that target a group or a query (cached). */
  device: (workspaceId: string, deviceId: string) => Promise<Record<string, unknown> | undefined>;
  sides: ThresholdSides;
  /** The reader of rules' targets: a group's query is read once per {@link ALARM_RULES_CACHE_MS}. */
  targets: () => ReturnType<typeof targetReader>;
  /** Devices evaluated at once. */
  concurrency: number;
}

/** One rule on one device: the batch's points of its tag that have a number at its field, in arrival order. */
interface Work {
  rule: ThresholdRule;
  points: ValuedPoint[];
}

/** A device of the batch with its messages (in arrival order) and the rules' work on it. */
interface DeviceWork<M extends ThresholdMessage> {
  place: { workspace_id: string; fleet_id: string; device_id: string; account_id: string };
  messages: M[];
  work: Work[];
}

/** The points of a rule in a device's messages: those of its tag (any when none) with a number at its field. */
const pointsOf = (rule: ThresholdRule, messages: ThresholdMessage[]): ValuedPoint[] => {
  const field = rule.field!.split('.');
  return messages.flatMap((message) =>
    message.points.flatMap((point) => {
      if (rule.tag !== null && point.tag !== rule.tag) return [];
      const value = valueAt(point.payload, field);
      if (value === undefined) return [];
      return [{ value, tag: point.tag, timestamp: point.timestamp_device, arrived: Date.parse(message.timestamp_in), arrivedAt: message.timestamp_in }];
    }),
  );
};

/** Whether a rule targets a device: its fleets alone from the message; a group or a query from the device's item. */
const targets = async (detection: ThresholdDetection, reader: ReturnType<typeof targetReader>, rule: ThresholdRule, message: ThresholdMessage) => {
  const needsItem = rule.target.group !== null || rule.target.q !== null;
  const device = needsItem
    ? await detection.device(message.workspace_id, message.device_id)
    : { id: message.device_id, fleet_id: message.fleet_id, name: message.device_name };
  return device !== undefined && reader(rule, { ...device, fleet_id: message.fleet_id });
};

/** The enabled threshold rules of a workspace, none (and no request) when its settings say it never had a rule. */
const thresholdRulesOf = async (detection: ThresholdDetection, accountId: string, workspaceId: string) => {
  if (!(await detection.settings(accountId, workspaceId))?.alarm_rules_version) return [];
  const rules = await detection.deps.rules({ account_id: accountId, workspace_id: workspaceId });
  return rulesOfKind(rules, 'threshold').filter((r) => r.field !== null && r.op !== null && r.value !== null);
};

/** The batch's devices that some threshold rule targets, with their points per rule. */
const workOf = async <M extends ThresholdMessage>(detection: ThresholdDetection, messages: M[]) => {
  const byDevice = new Map<string, M[]>();
  for (const message of messages)
    if (message.account_id !== undefined && message.points.length) byDevice.set(message.device_id, [...(byDevice.get(message.device_id) ?? []), message]);
  const reader = detection.targets();
  const devices = await Promise.all(
    [...byDevice.values()].map(async (ofDevice): Promise<DeviceWork<M> | undefined> => {
      const first = ofDevice[0];
      const rules = await thresholdRulesOf(detection, first.account_id!, first.workspace_id);
      if (!rules.length) return undefined;
      const ordered = [...ofDevice].sort((a, b) => Date.parse(a.timestamp_in) - Date.parse(b.timestamp_in));
      const work: Work[] = [];
      for (const rule of rules) {
        if (!(await targets(detection, reader, rule, first))) continue;
        const points = pointsOf(rule, ordered);
        if (points.length) work.push({ rule, points });
      }
      const place = { workspace_id: first.workspace_id, fleet_id: first.fleet_id, device_id: first.device_id, account_id: first.account_id! };
      return work.length ? { place, messages: ofDevice, work } : undefined;
    }),
  );
  return devices.filter((d): d is DeviceWork<M> => d !== undefined);
};

/** Runs a device's points through its rules, remembering each side as it is reached (a failure keeps what was done). */
const evaluateDevice = async (detection: ThresholdDetection, { place, work }: DeviceWork<ThresholdMessage>) => {
  const { deps, sides } = detection;
  for (const { rule, points } of work) {
    const evaluated = { rule, place };
    for (const point of points) {
      let side: Side | undefined = sides.get(rule, place.device_id);
      if (!side) {
        await readSides(deps.db, sides, [{ rule, deviceId: place.device_id }]);
        side = sides.get(rule, place.device_id)!;
      }
      sides.set(rule, place.device_id, await evaluatePoint(deps, evaluated, side, point));
    }
  }
};

/**
 * Evaluates the enabled `threshold` rules on the points of an ingest batch's data messages
 * (DESIGN §16; the MQTT and HTTPS doors' points alike): per device, in arrival order, each rule
 * that targets it on its points of `tag` with a number at `field` (domain/alarms/threshold.ts).
 * A workspace whose settings say it never had a rule costs nothing; one with rules costs the
 * rules' cached read (10 s); a rule on a device this container does not know costs one read of
 * its stored state (50 in one request); transitions write only at crossings.
 * @returns the messages whose evaluation failed (their devices' messages of the batch): to retry.
 */
export const detectThresholds = async <M extends ThresholdMessage>(detection: ThresholdDetection, messages: M[]): Promise<Set<M>> => {
  const failed = new Set<M>();
  let devices: DeviceWork<M>[];
  try {
    devices = await workOf(detection, messages);
  } catch (error) {
    logger.error('reading the threshold rules of a batch failed; its messages are retried', { error: error as Error });
    return new Set(messages);
  }
  if (!devices.length) return failed;
  // What the container does not know of the batch's rules on its devices: read at once, 50 a request.
  const unknown = devices.flatMap(({ place, work }) =>
    work.filter(({ rule }) => !detection.sides.get(rule, place.device_id)).map(({ rule }) => ({ rule, deviceId: place.device_id })),
  );
  try {
    await readSides(detection.deps.db, detection.sides, unknown);
  } catch (error) {
    logger.error('reading the threshold alarms’ states failed; the batch’s messages are retried', { error: error as Error });
    return new Set(devices.flatMap((d) => d.messages));
  }
  const results = await settleAll(devices, detection.concurrency, (device) => evaluateDevice(detection, device));
  results.forEach((result, i) => {
    if (result.status === 'fulfilled') return;
    logger.error('evaluating threshold rules failed; the device’s messages are retried', { error: result.reason as Error, device: devices[i].place.device_id });
    for (const message of devices[i].messages) failed.add(message);
  });
  return failed;
};

/**
 * The threshold evaluation of an ingest container: its memory of sides, the workspaces' settings
 * the ingest reads anyway, the devices' items for rules that target a group or a query (kept
 * `deviceTtlMs`), and the rules' target reader renewed every {@link ALARM_RULES_CACHE_MS}.
 */
export const thresholdDetection = (
  db: Db,
  { settings, deviceTtlMs, concurrency = 16 }: { settings: ThresholdDetection['settings']; deviceTtlMs: number; concurrency?: number },
): ThresholdDetection => {
  const items = new LRUCache<string, Record<string, unknown>>({
    max: 100_000,
    ttl: deviceTtlMs,
    fetchMethod: async (key) => {
      const [workspaceId, deviceId] = key.split('\n');
      return (await getDeviceOfWorkspace(db, workspaceId, deviceId)) as Record<string, unknown> | undefined;
    },
  });
  let reader = { at: 0, targets: targetReader(db) };
  return {
    deps: detectionDeps(db),
    settings,
    device: (workspaceId, deviceId) => items.fetch(`${workspaceId}\n${deviceId}`),
    sides: thresholdSides(),
    targets: () => {
      if (Date.now() - reader.at > ALARM_RULES_CACHE_MS) reader = { at: Date.now(), targets: targetReader(db) };
      return reader.targets;
    },
    concurrency,
  };
};
