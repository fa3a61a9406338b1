import { logger } from '../shared/logger';
import { IngestMessageSchema, type IngestMessage } from '../schemas/device-api';
import type { ForwardMessage } from '../schemas/forward';
import type { PointToStore, TimeseriesStore } from '../stores/timeseries';
import { dataEvent, dataMessage, eventMessage } from './events';

/** What the ingest Lambda works with: the time-series store and the forward queue. */
export interface IngestDeps {
  store: TimeseriesStore;
  forward: (messages: ForwardMessage[]) => Promise<void>;
  /** Messages processed at once when a batch has to be taken apart after a failure. */
  concurrency: number;
}

/** One message of the ingest queue, as its SQS record brings it. */
export interface QueuedIngest {
  messageId: string;
  body: string;
}

interface Parsed {
  messageId: string;
  message: IngestMessage;
}

const pointsOf = (message: IngestMessage): PointToStore[] =>
  message.kind === 'data'
    ? message.points.map(({ tag, timestamp_device, payload }, sequence) => ({
        workspace_id: message.workspace_id,
        fleet_id: message.fleet_id,
        device_id: message.device_id,
        tag,
        timestamp_device,
        timestamp_in: message.timestamp_in,
        sequence,
        payload,
      }))
    : [];

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

/**
 * Consumes a batch of the ingest queue: stores the data points (deduplicated by the store: the
 * first write of a (device, tag, timestamp_device) wins, later ones are dropped silently), then
 * forwards every point with its `data` event, and the device events.
 *
 * A point is forwarded whether its write stored it or found it already there: a message retried
 * after its points were stored but before they were forwarded (a crash, a failed send) must still
 * forward them, and a discarded write cannot tell that retry from a device's duplicate. Webhooks
 * therefore receive a duplicate point more than once, which at-least-once delivery allows.
 *
 * @returns the IDs of the messages to retry (SQS partial batch response): unreadable ones (they
 * end in the DLQ), and those whose write or forward failed. The others are done.
 */
export const ingestBatch = async (deps: IngestDeps, batch: QueuedIngest[]): Promise<string[]> => {
  const unreadable: string[] = [];
  const parsed: Parsed[] = [];
  for (const { messageId, body } of batch) {
    let result: ReturnType<typeof IngestMessageSchema.safeParse> | undefined;
    try {
      result = IngestMessageSchema.safeParse(JSON.parse(body));
    } catch {
      result = undefined;
    }
    if (result?.success) parsed.push({ messageId, message: result.data });
    else {
      logger.error('unreadable ingest message', { messageId, issues: result?.error.issues });
      unreadable.push(messageId);
    }
  }

  const write = (items: Parsed[]) => deps.store.write(items.flatMap((p) => pointsOf(p.message)));
  const unwritten = await isolateFailures(
    parsed.filter((p) => p.message.kind === 'data'),
    write,
    (item) => write([item]),
    deps.concurrency,
    'storing data points',
  );

  const failedWrites = new Set(unwritten);
  const forward = (items: Parsed[]) => deps.forward(items.flatMap((p) => forwardsOf(p.message)));
  const unforwarded = await isolateFailures(
    parsed.filter((p) => !failedWrites.has(p)),
    forward,
    (item) => forward([item]),
    deps.concurrency,
    'forwarding',
  );

  return [...unreadable, ...unwritten.map((p) => p.messageId), ...unforwarded.map((p) => p.messageId)];
};
