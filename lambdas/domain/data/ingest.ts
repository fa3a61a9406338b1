import { digest16 } from '../../shared/digest';
import { logger } from '../../shared/logger';
import { countMetric } from '../../shared/metrics';
import { formatMicros, type CloudStamper } from '../../shared/timestamps';
import { dayOf } from '../../schemas/usage';
import { IngestMessageSchema, type IngestDataMessage, type IngestMessage } from '../../schemas/device-api';
import type { ForwardMessage } from '../../schemas/forward';
import type { PointToStore, TimeseriesStore } from '../../stores/timeseries';
import { CLOSED_SESSION_DROP, dropDataPublish, parseDataPublish, RuleMessageSchema, type DataPublish } from '../doors/device-mqtt';
import { sentByClosedSession } from '../doors/mqtt-sessions';
import type { ClosedSessions } from '../../stores/device-session-store';
import { placementOfLocator, type DevicePlacement, type DevicePlacesLookup, type WorkspaceSettingsLookup } from '../registry/device-places';
import { dataEvent, dataMessage, eventMessage } from '../webhooks/events';
import type { DeviceQuota } from '../limits/device-quota';
import type { UsageIncrement } from '../../stores/usage-store';
import { UsageTally } from '../limits/usage';
import { recordSeen, type SeenRecorder } from './last-seen';
import { recordTagsSeen, type TagsSeen } from './tag-seen';
import { awaitWithin, dataUpdatesOf, type ConsoleLive } from '../console-live/live';

/** What the ingest Lambda works with: the time-series store, the forward queue, and the MQTT door's devices. */
export interface IngestDeps {
  store: TimeseriesStore;
  forward: (messages: ForwardMessage[]) => Promise<void>;
  /** Messages processed at once when a batch has to be taken apart after a failure. */
  concurrency: number;
  /** Where the devices of MQTT data publishes are (a publish names only its device). */
  places: DevicePlacesLookup;
  /** The settings of the workspaces points are written to: their data retention (the expiry the store gives them). */
  settings: WorkspaceSettingsLookup;
  /** Stamps MQTT data publishes (one per container). */
  stamper: CloudStamper;
  /** The container's share of the MQTT devices' daily points (an HTTPS request's were counted at the door). */
  points: DeviceQuota;
  /** Writes the batch's counts to the workspaces' usage (one write per workspace and day); answers the days it could not write. */
  recordUsage: (tally: UsageTally) => Promise<UsageIncrement[]>;
  /**
   * The windows in which these devices' MQTT sessions were closed by a revocation (one read of
   * their locators per batch: stores/device-session-store.ts `readClosedSessions`).
   */
  closedSessions: (deviceIds: string[]) => Promise<Map<string, ClosedSessions>>;
  /** Records the arrival of the batch's newest point of each device (its `last_seen_at`, domain/data/last-seen.ts); none: not kept. */
  seen?: SeenRecorder;
  /** Records the arrival of the batch's points on tags that `silent` rules name (domain/data/tag-seen.ts); none: not kept. */
  tagsSeen?: TagsSeen;
  /** Tells the open consoles of the batch's new points: one message per device (domain/console-live); never rejects. */
  live?: ConsoleLive;
  /**
   * Evaluates the workspaces' `threshold` alarm rules on the batch's stored and forwarded points
   * (domain/alarms/threshold-ingest.ts `detectThresholds`); answers the messages to retry.
   */
  thresholds?: (messages: IngestDataMessage[]) => Promise<Set<IngestDataMessage>>;
}

/** Longest the batch waits at its end for the consoles' publishes, which run beside the forwarding. */
const LIVE_WAIT_MS = 1_000;

/** One message of the ingest queue, as its SQS record brings it. */
export interface QueuedIngest {
  messageId: string;
  body: string;
}

interface Parsed {
  messageId: string;
  message: IngestMessage;
}

const pointsOf = (message: IngestMessage, retention_days?: number): PointToStore[] =>
  message.kind === 'data'
    ? message.points.map(({ tag, timestamp_device, payload }, sequence) => ({
        workspace_id: message.workspace_id,
        fleet_id: message.fleet_id,
        device_id: message.device_id,
        tag,
        timestamp_device,
        timestamp_in: message.timestamp_in,
        sequence,
        ...(message.origin === undefined ? {} : { origin: digest16(`${message.origin}/${sequence}`) }),
        ...(retention_days === undefined ? {} : { retention_days }),
        payload,
      }))
    : [];

/**
 * The points of data messages, each with its workspace's retention now (cached per container:
 * `workspaceRetentions`). A message from before retention names no account: its device does.
 */
const pointsToStore = async (deps: IngestDeps, items: Parsed[]): Promise<PointToStore[]> => {
  const unnamed = items.flatMap(({ message }) => (message.kind === 'data' && message.account_id === undefined ? [message.device_id] : []));
  const places = unnamed.length ? await deps.places(unnamed) : undefined;
  const points = await Promise.all(
    items.map(async ({ message }) => {
      if (message.kind !== 'data') return [];
      const accountId = message.account_id ?? places?.get(message.device_id)?.account_id;
      return pointsOf(message, accountId === undefined ? undefined : (await deps.settings(accountId, message.workspace_id))?.data_retention_days);
    }),
  );
  return points.flat();
};

/**
 * What a message hands to webhooks: each data point and its `data` event, or the device's events.
 * Built from the message alone, so that a retry forwards the same messages.
 */
const forwardsOf = (message: IngestMessage): ForwardMessage[] =>
  message.kind === 'data'
    ? pointsOf(message).flatMap((point) => [dataMessage(point, message.device_name), dataEvent(point)])
    : message.events.map(({ type, ts, payload }) => eventMessage(message, type, 'd2c', payload, ts));

/**
 * Runs `all` on every item at once, the fast path; if it fails, runs `one` on each item (at most
 * `concurrency` at a time) to find the items that fail on their own.
 * @returns the items that failed.
 */
const isolateFailures = async <T>(
  items: T[],
  all: (items: T[]) => Promise<unknown>,
  one: (item: T) => Promise<unknown>,
  concurrency: number,
  what: string,
): Promise<T[]> => {
  if (!items.length) return [];
  try {
    await all(items);
    return [];
  } catch (error) {
    logger.warn(`${what} failed for the batch; retrying message by message`, { error: error as Error, messages: items.length });
  }
  const failed: T[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      await one(item).catch((error: unknown) => {
        logger.error(`${what} failed`, { error: error as Error });
        failed.push(item);
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return failed;
};

/** An MQTT data publish of the batch, stamped. */
interface StampedPublish extends DataPublish {
  messageId: string;
  timestamp_device: string;
}

/**
 * Reads a batch: the ingest messages of the device API, and the data publishes the MQTT door's
 * data rule puts on the queue. A publish is stamped in the millisecond IoT Core received it, in
 * the batch's order (IoT Core's `timestamp()` has milliseconds, and its rules engine keeps no order
 * between messages: within a millisecond no order is known). A publish that can never be stored
 * (not JSON, a bad tag) is dropped and logged, as the device is never told; an unreadable message
 * is retried until it lands in the DLQ.
 */
const readBatch = (deps: IngestDeps, batch: QueuedIngest[]) => {
  const unreadable: string[] = [];
  const parsed: Parsed[] = [];
  const publishes: StampedPublish[] = [];
  for (const { messageId, body } of batch) {
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    const message = IngestMessageSchema.safeParse(json);
    if (message.success) {
      parsed.push({ messageId, message: message.data });
      continue;
    }
    const rule = RuleMessageSchema.safeParse(json);
    if (rule.success && rule.data.topic.startsWith('j/data/')) {
      const publish = parseDataPublish(rule.data);
      if ('drop' in publish) dropDataPublish(publish.deviceId, publish.topic, publish.drop);
      else {
        const stamp = deps.stamper.next(publish.deviceId, publish.receivedAt * 1000 + 1);
        publishes.push({ ...publish, messageId, timestamp_device: formatMicros(stamp) });
      }
      continue;
    }
    logger.error('unreadable ingest message', { messageId, issues: message.error.issues });
    unreadable.push(messageId);
  }
  return { unreadable, parsed, publishes };
};

/** A publish its device's daily quota refused: not stored, counted in its workspace's usage. */
interface RefusedPublish {
  messageId: string;
  workspaceId: string;
  receivedAt: number;
}

/**
 * The publishes of a batch but those a session closed by a revocation sent (received while it was
 * being closed, and still on the queue): dropped and logged before they count against anything.
 */
const withoutClosedSessions = async (deps: IngestDeps, publishes: StampedPublish[]) => {
  const closed = await deps.closedSessions(publishes.map((p) => p.deviceId));
  if (!closed.size) return publishes;
  return publishes.filter(({ deviceId, point, receivedAt }) => {
    if (!sentByClosedSession(closed.get(deviceId), receivedAt)) return true;
    dropDataPublish(deviceId, `j/data/${deviceId}/${point.tag}`, CLOSED_SESSION_DROP);
    return false;
  });
};

/**
 * The ingest messages of stamped publishes: one per publish, placed where its device is now, its
 * origin the SQS message (the same on every delivery). Each device's publishes count against its
 * daily points first: those past its limit (the last of the batch) are refused, and the claim that
 * counts them also reads where the device is. A publish of an unknown device is dropped and logged.
 */
const publishMessages = async (deps: IngestDeps, stamped: StampedPublish[]): Promise<{ parsed: Parsed[]; refused: RefusedPublish[] }> => {
  if (!stamped.length) return { parsed: [], refused: [] };
  const publishes = await withoutClosedSessions(deps, stamped);
  const perDevice = new Map<string, number>();
  for (const { deviceId } of publishes) perDevice.set(deviceId, (perDevice.get(deviceId) ?? 0) + 1);
  const claimed = new Map<string, DevicePlacement>();
  const decisions = new Map(
    await Promise.all(
      [...perDevice].map(async ([deviceId, n]) => {
        const decision = await deps.points(deviceId, n);
        // Kept at once, as the device lookup's answer: another batch of the device may ask for it next.
        const placement = placementOfLocator(deviceId, decision?.locator);
        if (placement) {
          claimed.set(deviceId, placement);
          deps.places.remember?.(deviceId, placement);
        }
        return [deviceId, decision] as const;
      }),
    ),
  );
  const unplaced = [...decisions].filter(([deviceId, decision]) => decision && !claimed.has(deviceId)).map(([deviceId]) => deviceId);
  const places = unplaced.length ? await deps.places(unplaced) : new Map<string, DevicePlacement | undefined>();
  const left = new Map([...decisions].map(([deviceId, decision]) => [deviceId, decision?.accepted ?? 0]));
  const parsed: Parsed[] = [];
  const refused: RefusedPublish[] = [];
  for (const { messageId, deviceId, point, receivedAt, timestamp_device } of publishes) {
    const decision = decisions.get(deviceId);
    const place = claimed.get(deviceId) ?? places.get(deviceId);
    if (!decision || !place) {
      dropDataPublish(deviceId, `j/data/${deviceId}/${point.tag}`, 'unknown device');
      continue;
    }
    if (!left.get(deviceId)) {
      refused.push({ messageId, workspaceId: decision.workspace_id, receivedAt });
      continue;
    }
    left.set(deviceId, left.get(deviceId)! - 1);
    const message: IngestDataMessage = {
      kind: 'data',
      ...place,
      timestamp_in: new Date(receivedAt).toISOString(),
      origin: messageId,
      points: [{ tag: point.tag, timestamp_device, payload: point.payload }],
    };
    parsed.push({ messageId, message });
  }
  if (refused.length) logger.info('publishes past their devices’ daily points refused', { publishes: refused.length });
  return { parsed, refused };
};

/** When a message's points or events arrived: the UTC day they count in (an events message from before event quotas: now). */
const arrivalOf = (message: IngestMessage) => (message.timestamp_in === undefined ? Date.now() : Date.parse(message.timestamp_in));

/**
 * What a batch adds to its workspaces' usage: its data messages' points and its events messages'
 * events (each with those its quota refused at the door), and the publishes refused here.
 */
const usageOf = (done: Parsed[], refused: RefusedPublish[]) => {
  const tally = new UsageTally();
  for (const { message } of done) {
    const denied = message.refused ?? 0;
    tally.add(
      message.workspace_id,
      arrivalOf(message),
      message.kind === 'data'
        ? { points_in: message.points.length + denied, points_stored: message.points.length, points_refused: denied }
        : { events_in: message.events.length + denied, events_refused: denied },
    );
  }
  for (const { workspaceId, receivedAt } of refused) tally.add(workspaceId, receivedAt, { points_in: 1, points_refused: 1 });
  return tally;
};

/**
 * Consumes a batch of the ingest queue: stores the data points (deduplicated by the store: a
 * device's own time is a dedup key, the first write winning; a cloud stamp never merges two
 * points), then forwards every point with its `data` event, and the device events.
 *
 * A point is forwarded whether its write stored it or found it already there: a message retried
 * after its points were stored but before they were forwarded (a crash, a failed send) must still
 * forward them, and a discarded write cannot tell that retry from a device's duplicate. Webhooks
 * therefore receive a duplicate point more than once, which at-least-once delivery allows.
 *
 * @returns the IDs of the messages to retry (SQS partial batch response): unreadable ones (they
 * end in the DLQ), and those whose device lookup, write or forward failed. The others are done.
 */
export const ingestBatch = async (deps: IngestDeps, batch: QueuedIngest[]): Promise<string[]> => {
  const { unreadable, parsed, publishes } = readBatch(deps, batch);
  let unplaced: string[] = [];
  let refused: RefusedPublish[] = [];
  try {
    const placed = await publishMessages(deps, publishes);
    parsed.push(...placed.parsed);
    refused = placed.refused;
  } catch (error) {
    logger.error('looking up the devices of MQTT publishes failed', { error: error as Error });
    unplaced = publishes.map((p) => p.messageId);
  }

  const write = async (items: Parsed[]) => deps.store.write(await pointsToStore(deps, items));
  const unwritten = await isolateFailures(
    parsed.filter((p) => p.message.kind === 'data'),
    write,
    (item) => write([item]),
    deps.concurrency,
    'storing data points',
  );

  const failedWrites = new Set(unwritten);
  // The consoles learn of the stored points while the batch forwards them: one publish per device.
  const telling = deps.live?.(dataUpdatesOf(parsed.flatMap((p) => (p.message.kind === 'data' && !failedWrites.has(p) ? [p.message] : []))));
  const forward = (items: Parsed[]) => deps.forward(items.flatMap((p) => forwardsOf(p.message)));
  const unforwarded = await isolateFailures(
    parsed.filter((p) => !failedWrites.has(p)),
    forward,
    (item) => forward([item]),
    deps.concurrency,
    'forwarding',
  );

  // Counted once the batch is done with them: a message retried is counted when it succeeds. The
  // messages of a workspace's day whose counts could not be written are retried (their points are
  // stored again idempotently and forwarded again, as at-least-once allows), so that none goes
  // uncounted.
  const failed = new Set<Parsed>([...unwritten, ...unforwarded]);
  // The alarms' threshold rules on the points that are stored: a message whose transitions could
  // not be written is retried (and counted then), the transitions' IDs keeping them once.
  const unjudged = deps.thresholds
    ? await deps.thresholds(parsed.flatMap((p) => (p.message.kind === 'data' && !failed.has(p) ? [p.message] : [])))
    : new Set<IngestMessage>();
  for (const p of parsed) if (unjudged.has(p.message)) failed.add(p);
  const done = parsed.filter((p) => !failed.has(p));
  if (deps.seen)
    await recordSeen(
      deps.seen,
      done.flatMap(({ message }) => (message.kind === 'data' ? [message] : [])),
    );
  if (deps.tagsSeen)
    await recordTagsSeen(
      deps.tagsSeen,
      done.flatMap(({ message }) => (message.kind === 'data' ? [message] : [])),
    );
  const usage = usageOf(done, refused);
  const unwrittenDays = new Set((usage.size ? await deps.recordUsage(usage) : []).map((entry) => `${entry.workspaceId}/${entry.day}`));
  const dayOfMessage = (workspaceId: string, at: number) => `${workspaceId}/${dayOf(at)}`;
  const counted = usage.entries().filter((entry) => !unwrittenDays.has(`${entry.workspaceId}/${entry.day}`));
  countMetric(
    'PointsReceived',
    counted.reduce((sum, entry) => sum + (entry.counts.points_in ?? 0), 0),
  );
  countMetric(
    'PointsStored',
    counted.reduce((sum, entry) => sum + (entry.counts.points_stored ?? 0), 0),
  );
  countMetric(
    'PointsRefused',
    counted.reduce((sum, entry) => sum + (entry.counts.points_refused ?? 0), 0),
  );
  const uncounted = [
    ...done.filter(({ message }) => unwrittenDays.has(dayOfMessage(message.workspace_id, arrivalOf(message)))).map((p) => p.messageId),
    ...refused.filter((r) => unwrittenDays.has(dayOfMessage(r.workspaceId, r.receivedAt))).map((r) => r.messageId),
  ];

  await awaitWithin(telling, LIVE_WAIT_MS);
  return [...new Set([...unreadable, ...unplaced, ...[...failed].map((p) => p.messageId), ...uncounted])];
};
