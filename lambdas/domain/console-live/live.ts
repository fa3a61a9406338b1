import { CONSOLE_LIVE } from '../../shared/env';
import { logger } from '../../shared/logger';

/**
 * What the open consoles are told, on `fleetstream/console/<workspace_id>/<kind>` (docs/console.md,
 * "Live updates"): small messages that say what changed, for the page to show it or read it again.
 * Best effort at QoS 0: a console that misses one reads the page again when it reconnects.
 */
export const LIVE_KINDS = ['connection', 'data', 'rollout', 'webhook', 'export', 'alarm'] as const;
export type LiveKind = (typeof LIVE_KINDS)[number];

/** The first two levels of every console topic. */
export const CONSOLE_TOPIC_ROOT = 'fleetstream/console';

/** The topic of one kind of change in one workspace. */
export const consoleTopic = (workspaceId: string, kind: LiveKind) => `${CONSOLE_TOPIC_ROOT}/${workspaceId}/${kind}`;

/** A device connected or disconnected (its connection state as recorded). */
export interface ConnectionUpdate {
  device_id: string;
  fleet_id: string;
  connected: boolean;
  /** When, as the broker reported it. */
  at: string;
}

/** A device's new data points of one ingest batch: which tags, how many, the latest arrival. */
export interface DataUpdate {
  device_id: string;
  fleet_id: string;
  tags: string[];
  /** The latest arrival (`timestamp_in`) of the batch's points of the device. */
  last_at: string;
  count: number;
}

/** A rollout's counts (or status) changed: the console reads the rollout again. */
export interface RolloutUpdate {
  rollout_id: string;
  at: string;
}

/** An integration's delivery status was written: whether the last delivery went through, and its error. */
export interface WebhookUpdate {
  integration_id: string;
  ok: boolean;
  at: string;
  error?: string;
}

/**
 * An export's progress was written (a part recorded: `running`, with the points written so far), or
 * the export ended (`ready` or `failed`): the console reads the export again.
 */
export interface ExportUpdate {
  export_id: string;
  status: 'running' | 'ready' | 'failed';
  /** The points (rows) written to the file so far; the whole file's once `ready`. */
  points_written: number;
  at: string;
}

/**
 * An alarm's transition (opened, acknowledged, closed), as the notifier is told it: which alarm,
 * rule and device, its status and severity after it. The console reads its alarms again.
 */
export interface AlarmUpdate {
  alarm_id: string;
  rule_id: string;
  device_id: string;
  fleet_id: string;
  event: 'opened' | 'acknowledged' | 'closed';
  status: string;
  severity: string;
  at: string;
}

export interface LiveMessages {
  connection: ConnectionUpdate;
  data: DataUpdate;
  rollout: RolloutUpdate;
  webhook: WebhookUpdate;
  export: ExportUpdate;
  alarm: AlarmUpdate;
}

/** One message to the consoles of a workspace. */
export type LiveMessage = { [K in LiveKind]: { workspaceId: string; kind: K; message: LiveMessages[K] } }[LiveKind];

/** Publishes a JSON message on a topic (stores/console-channel.ts `publishToConsoles`). */
export type ConsolePublish = (topic: string, message: unknown) => Promise<void>;

/**
 * Tells the open consoles of changes. Resolves once every publish is done or has failed, never
 * rejects: a failed publish is logged (once per call, with the count), and whatever wrote the
 * change goes on as if nothing happened. Callers that must not wait start it and await it last.
 */
export type ConsoleLive = (messages: LiveMessage[]) => Promise<void>;

/** Publishes at once, at most this many (a batch names at most a few hundred devices). */
const PUBLISH_CONCURRENCY = 16;

/** The console's live channel through `publish`; does nothing unless `enabled` (CONSOLE_LIVE). */
export const consoleLive =
  (publish: ConsolePublish, enabled = CONSOLE_LIVE): ConsoleLive =>
  async (messages) => {
    if (!enabled || !messages.length) return;
    let failures = 0;
    let last: unknown;
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < messages.length; i = next++) {
        const { workspaceId, kind, message } = messages[i];
        try {
          await publish(consoleTopic(workspaceId, kind), message);
        } catch (error) {
          failures += 1;
          last = error;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PUBLISH_CONCURRENCY, messages.length) }, worker));
    } finally {
      if (failures) logger.warn('console live updates not published; open consoles catch up when they reconnect', { failures, error: last as Error });
    }
  };

/**
 * Waits for the consoles' publishes at most `ms` (a Lambda must not end with them in flight, or
 * they go out only when its container next runs), never longer: a slow data plane costs the
 * caller no more than that.
 */
export const awaitWithin = async (telling: Promise<void> | undefined, ms: number) => {
  if (!telling) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([telling, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
};

/** What `dataUpdatesOf` reads of a stored data message. */
export interface StoredDataMessage {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  timestamp_in: string;
  points: Array<{ tag: string }>;
}

/** One `data` message per device of a batch's stored data messages, however many points it had. */
export const dataUpdatesOf = (messages: StoredDataMessage[]): LiveMessage[] => {
  const byDevice = new Map<string, { workspaceId: string; update: DataUpdate; tags: Set<string> }>();
  for (const m of messages) {
    if (!m.points.length) continue;
    const key = `${m.workspace_id}/${m.device_id}`;
    let entry = byDevice.get(key);
    if (!entry) {
      entry = {
        workspaceId: m.workspace_id,
        update: { device_id: m.device_id, fleet_id: m.fleet_id, tags: [], last_at: m.timestamp_in, count: 0 },
        tags: new Set(),
      };
      byDevice.set(key, entry);
    }
    entry.update.count += m.points.length;
    if (m.timestamp_in > entry.update.last_at) entry.update.last_at = m.timestamp_in;
    for (const p of m.points) entry.tags.add(p.tag);
  }
  // Tags beyond the first 20 are left out: the message stays small; the page reads the data anyway.
  return [...byDevice.values()].map(({ workspaceId, update, tags }) => ({
    workspaceId,
    kind: 'data',
    message: { ...update, tags: [...tags].sort().slice(0, 20) },
  }));
};

/** One `rollout` message per rollout a batch of count changes touched (a burst of 1,000 transitions is one message). */
export const rolloutUpdatesOf = (rollouts: Array<{ workspace_id: string; rollout_id: string }>, at: string): LiveMessage[] => {
  const seen = new Map<string, LiveMessage>();
  for (const r of rollouts)
    if (!seen.has(r.rollout_id)) seen.set(r.rollout_id, { workspaceId: r.workspace_id, kind: 'rollout', message: { rollout_id: r.rollout_id, at } });
  return [...seen.values()];
};

/** The `export` message of one progress write of an export (or of its end). */
export const exportUpdateOf = (
  job: { workspace_id: string; export_id: string },
  status: ExportUpdate['status'],
  pointsWritten: number,
  at: string,
): LiveMessage => ({ workspaceId: job.workspace_id, kind: 'export', message: { export_id: job.export_id, status, points_written: pointsWritten, at } });

/** The `alarm` message of one transition of an alarm (domain/alarms/notifications.ts tells it). */
export const alarmUpdateOf = (transition: {
  event: AlarmUpdate['event'];
  at: string;
  workspace_id: string;
  alarm: { id: string; rule_id: string; device_id: string; fleet_id: string; status: string; severity: string };
}): LiveMessage => {
  const { alarm } = transition;
  return {
    workspaceId: transition.workspace_id,
    kind: 'alarm',
    message: {
      alarm_id: alarm.id,
      rule_id: alarm.rule_id,
      device_id: alarm.device_id,
      fleet_id: alarm.fleet_id,
      event: transition.event,
      status: alarm.status,
      severity: alarm.severity,
      at: transition.at,
    },
  };
};
