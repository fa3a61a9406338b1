import type { DynamoDBRecord } from 'aws-lambda';
import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import type { EventMessage } from '../../schemas/forward';
import { findDeviceLocator } from '../../stores/device-store';
import type { EventStamp } from '../../stores/job-store';
import { registryChangeOf, type RegistryChange } from '../../stores/registry-stream';
import { devicePlaceOf, eventMessage, eventTimestamp, type DevicePlace } from '../webhooks/events';
import { toFota } from './fota';
import type { Forward } from '../registry/identities';
import { toJob } from './jobs';
import type { ScheduledChange } from '../doors/live-delivery';
import { stateChangesOf } from '../state/state-events';

/** What the registry stream's consumer needs: the table (for old items without a place) and the forward queue. */
export interface RegistryEventsDeps {
  db: Db;
  forward: Forward;
  /** SendMessageBatch calls in flight. */
  concurrency: number;
  /** Publishes just-scheduled jobs and FOTA to their connected devices (best effort, never fails the batch). */
  deliver?: (changes: ScheduledChange[]) => Promise<void>;
  /**
   * Where another part of the consumer failed (the rollout counts), once it knows: the stream
   * retries the batch from that record, so no record from it on is delivered live now (it will be
   * with the retry, once).
   */
  retriedFrom?: Promise<number>;
}

// Each group of records is sent (and fails) as one: its events travel packed, about a hundred in
// one forward-queue message (domain/forward-pack.ts packForward).
export const SEND_GROUP = 100;

/** What a change is for its events: a (re)scheduling, a change of state, a new progress report, or nothing. */
type ExecutionImage = { status: string; scheduled_at: string; rollout_id?: string; message?: string };

/** Created, or replaced by another scheduling (another `scheduled_at` or rollout). */
const scheduledAnew = (before: ExecutionImage | undefined, after: ExecutionImage) =>
  !before || before.scheduled_at !== after.scheduled_at || before.rollout_id !== after.rollout_id;

/** The states a device reports itself (d2c); the cloud decides the others (c2d: released, canceled, timed out). */
const REPORTED: ReadonlySet<string> = new Set(['in_progress', 'done', 'failed']);

/** The direction of the event a change emits, or undefined when it emits none. */
export const directionOf = (before: ExecutionImage | undefined, after: ExecutionImage): 'c2d' | 'd2c' | undefined => {
  if (scheduledAnew(before, after)) return 'c2d';
  if (before!.status !== after.status) return REPORTED.has(after.status) ? 'd2c' : 'c2d';
  // A device's new progress report (another message while in progress) is an event of its own.
  if (after.status === 'in_progress' && after.message !== before!.message) return 'd2c';
  return undefined;
};

/** Where the event of a change happens: the place stamped on the item, or, for items older than stamps, the device's place now. */
const placeOf = async (db: Db, item: EventStamp & { device_id: string }): Promise<DevicePlace | undefined> => {
  if (item.workspace_id !== undefined && item.fleet_id !== undefined) {
    return { workspace_id: item.workspace_id, fleet_id: item.fleet_id, device_id: item.device_id };
  }
  const locator = await findDeviceLocator(db, item.device_id);
  return locator && devicePlaceOf(db, { deviceId: item.device_id, workspace_id: locator.workspace_id });
};

/**
 * The event a job's or FOTA's change emits (operations.md §1: every state change):
 * - c2d `job`/`fota` when it is scheduled or replaced (queued or pending, with a new
 *   `scheduled_at`), released (queued → pending), canceled or timed out: the job (or FOTA status)
 *   as payload; a rescheduled identical job is a new scheduling, so a new event;
 * - d2c `job`/`fota` when the device reports (→ in_progress with each new message, → done, → failed):
 *   the job with its result, or the FOTA with the device's message.
 * Nothing for other changes (a deleted item, a rewrite that changes neither) or for a device that
 * no longer exists (nor for the cancels of a device's deletion: its events stop). The `ts` is the one stamped on the item, so a retry rebuilds the same event.
 */
export const eventOfChange = async (db: Db, change: RegistryChange): Promise<EventMessage | undefined> => {
  // A state rollout's device has no event of its own: its desired change is the device's `status` event (domain/state).
  if (change.kind === 'state') return undefined;
  const { before, after } = change;
  if (!after || after.device_deleted) return undefined;
  const direction = directionOf(before, after);
  if (!direction) return undefined;
  const place = await placeOf(db, after);
  if (!place) {
    logger.warn('no event for a change of a device that no longer exists', { device_id: after.device_id, kind: change.kind });
    return undefined;
  }
  const payload = change.kind === 'job' ? toJob(change.after!) : toFota(change.after!);
  return eventMessage(place, change.kind, direction, payload, after.event_ts ?? eventTimestamp());
};

/**
 * Turns a batch of registry stream records into their events and sends them to the forward queue,
 * in record order, groups of records sent in parallel: jobs' and FOTA's changes, and devices'
 * changes of state (`status` events, a desired change published live as `#state`). Other items'
 * records are skipped. With
 * `deliver`, each group's just-scheduled jobs and FOTA are published as soon as that group and every
 * group before it are sent, while later groups are still being sent (never a record the stream
 * will retry, so each reaches its device once).
 * @returns the sequence number of the first record that failed (its event could not be built or
 * sent), from which the stream retries (ReportBatchItemFailures); undefined when all succeeded.
 * Records after it whose events were sent are sent again then (at least once; same `ts`).
 */
export const forwardRegistryChanges = async (deps: RegistryEventsDeps, records: DynamoDBRecord[]): Promise<string | undefined> => {
  const built = await settleAll(records, deps.concurrency, async (record): Promise<ScheduledChange[]> => {
    const change = registryChangeOf(record);
    // A device item's change of state: its `status` events (domain/state/state-events.ts).
    if (!change) return stateChangesOf(record);
    const event = await eventOfChange(deps.db, change);
    return event ? [{ event, live: change.after?.deliver_live === true }] : [];
  });
  let failedAt = built.findIndex((result) => result.status === 'rejected');
  if (failedAt < 0) failedAt = records.length;
  else
    logger.error('a registry change could not become its event', {
      error: (built[failedAt] as PromiseRejectedResult).reason as Error,
      eventID: records[failedAt].eventID,
    });

  // Only the records before the first failure are sent: from it on, the whole rest is retried.
  const ready = built.slice(0, failedAt).flatMap((result, index) => (result.status === 'fulfilled' ? result.value.map((value) => ({ index, ...value })) : []));
  const groups = Array.from({ length: Math.ceil(ready.length / SEND_GROUP) }, (_, g) => ready.slice(g * SEND_GROUP, (g + 1) * SEND_GROUP));
  const groupSent = groups.map(() => {
    let resolve!: (sent: boolean) => void;
    return { promise: new Promise<boolean>((r) => (resolve = r)), resolve };
  });
  // Live delivery, group by group in record order, each once its own send is done; it stops at the
  // first group that was not sent (that group and every one after it are retried by the stream).
  const delivered = (async () => {
    if (!deps.deliver) return;
    for (const [g, group] of groups.entries()) {
      if (!(await groupSent[g].promise)) return;
      const limit = (await deps.retriedFrom) ?? records.length;
      const deliverable = group.filter((r) => r.index < limit);
      if (!deliverable.length) return;
      await deps.deliver(deliverable.map(({ event, live }) => ({ event, live }))).catch((error: unknown) => {
        logger.warn('live delivery failed; devices get their jobs with their next #status', { error: error as Error });
      });
    }
  })();
  const sent = await settleAll(groups, deps.concurrency, (group, g) =>
    deps.forward(group.map((r) => r.event)).then(
      () => groupSent[g].resolve(true),
      (error: unknown) => {
        groupSent[g].resolve(false);
        throw error;
      },
    ),
  );
  await delivered;
  const firstUnsent = sent.findIndex((result) => result.status === 'rejected');
  if (firstUnsent >= 0) {
    logger.error('events could not be sent to the forward queue; the stream retries', { error: (sent[firstUnsent] as PromiseRejectedResult).reason as Error });
    failedAt = Math.min(failedAt, groups[firstUnsent][0].index);
  }
  return failedAt < records.length ? records[failedAt].dynamodb?.SequenceNumber : undefined;
};
