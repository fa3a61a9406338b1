import type { Db } from '../../shared/clients';
import { INGEST_QUEUE_URL } from '../../shared/env';
import { AppError, NotFoundError } from '../../shared/errors';
import { randomUUID } from 'node:crypto';
import { nowIso } from '../../shared/ids';
import { formatMicros, nowMicros, type CloudStamper, type Micros } from '../../shared/timestamps';
import type { DataPointInput, DeviceEventInput, DeviceStatus, FotaResultBody, IngestMessage } from '../../schemas/device-api';
import { getDeviceOfWorkspace, type DeviceLocator, type DeviceRecord } from '../../stores/device-store';
import { getFotaOfDevice, listJobsOfDevice } from '../../stores/job-store';
import { getRolloutRecord } from '../../stores/rollout-store';
import { sendMessages } from '../../stores/queue-store';
import { eventMessage, eventTimestamp, type DevicePlace } from '../webhooks/events';
import { firmwareDownloadOf, FirmwareImageMismatchError, type FirmwareDownload, type FirmwareName } from '../fleet-ops/firmware';
import { finishFota } from '../fleet-ops/fota';
import { observe, type DeviceCaller, type Forward } from '../registry/identities';
import { completeJob } from '../fleet-ops/jobs';
import { fotaArgs } from './live-delivery';
import { stateOf } from '../state/device-state';
import type { DeviceState } from '../../schemas/state';
import type { DeviceQuota, QuotaDecision } from '../limits/device-quota';
import { quotaExceeded } from '../limits/limits';
import { UsageTally } from '../limits/usage';
import type { DeviceConditionBody } from '../../schemas/condition';
import { closeCondition, conditionOf, openCondition } from '../alarms/conditions';

/** Where the device API sends what it accepts: the ingest queue, and the forward queue for events of its own. */
export interface DeviceApiDeps {
  db: Db;
  enqueue: (messages: IngestMessage[]) => Promise<void>;
  forward: Forward;
  /**
   * The HTTPS door's count of a request that stands for a `j/up` message (the status, a job's or a
   * FOTA's result) against its device's `up_messages_per_device_per_day`, run before the request
   * does anything ({@link admitUpMessage}). The MQTT door counts its messages per batch instead.
   */
  upMessage?: (caller: DeviceCaller) => Promise<void>;
}

/** What the HTTPS door's data and events need beyond the rest of the device API: the container's stamper and its shares of the devices' daily quotas. */
export interface PublishDataDeps extends DeviceApiDeps {
  /** Stamps the points that come without a device time (one per container). */
  stamper: CloudStamper;
  /** Counts each request's points against its device's points_per_device_per_day (claims exactly what a request brings). */
  points: DeviceQuota;
  /** Counts each request's events against its device's events_per_device_per_day (claims exactly what a request brings). */
  events: DeviceQuota;
}

/**
 * Puts messages on the ingest queue.
 * @throws when no ingest queue is configured or SQS keeps refusing, so that the device retries.
 */
export const enqueueIngest = async (messages: IngestMessage[]) => {
  if (!INGEST_QUEUE_URL) throw new AppError(500, 'internal_error', 'INGEST_QUEUE_URL is not set.');
  await sendMessages(INGEST_QUEUE_URL, messages);
};

const requireDevice = async (db: Db, caller: DeviceCaller) => {
  const device = await getDeviceOfWorkspace(db, caller.workspaceId, caller.deviceId);
  if (!device) throw new NotFoundError(`Device ${caller.deviceId} not found.`);
  return device;
};

const placeOf = (device: Pick<DeviceRecord, 'id' | 'workspace_id' | 'fleet_id'>): DevicePlace => ({
  workspace_id: device.workspace_id,
  fleet_id: device.fleet_id,
  device_id: device.id,
});

/** A device's place as its locator tells it, when the locator carries it all (locators from before do not). */
const placeOfLocator = (deviceId: string, locator: DeviceLocator | undefined) =>
  locator?.fleet_id !== undefined && locator.name !== undefined
    ? { id: deviceId, workspace_id: locator.workspace_id, fleet_id: locator.fleet_id, name: locator.name }
    : undefined;

/**
 * Accepts data points for storage and forwarding: they go to the ingest queue as one message,
 * with their arrival (`timestamp_in`, to the millisecond). A point without `timestamp_device` gets
 * a cloud stamp: its arrival to the microsecond, later than the device's previous stamp
 * (shared/timestamps.ts), so that no two points of a request, or of requests in the same
 * millisecond, share one. The stamps are fixed here, in the message, so that every retry of the
 * message stores the same points. The fleet is the device's fleet now: a device that moves keeps
 * its series.
 *
 * The points count against the device's `points_per_device_per_day` of the UTC day of their arrival:
 * those past it (the last ones of the request) are refused, said in `refused` and counted in the
 * workspace's usage through the same message. The count is also the device's lookup: one write
 * stands in for the read of the device.
 * @throws NotFoundError when the device no longer exists.
 * @throws QuotaExceededError when the quota refuses every point of the request (Retry-After: until midnight UTC).
 */
export const publishData = async (deps: PublishDataDeps, caller: DeviceCaller, points: DataPointInput[], arrival: Micros = nowMicros()) => {
  const arrivalMs = Math.floor(arrival / 1000);
  const { decision, device } = await claimed(deps, caller, deps.points, points.length, arrivalMs);
  const timestamp_in = new Date(arrivalMs).toISOString();
  const kept = points.slice(0, decision.accepted);
  await deps.enqueue([
    {
      kind: 'data',
      account_id: caller.accountId,
      ...placeOf(device),
      device_name: device.name,
      timestamp_in,
      origin: randomUUID(),
      points: kept.map(({ tag, payload, timestamp_device }) => ({
        tag,
        payload,
        timestamp_device: timestamp_device ?? formatMicros(deps.stamper.next(device.id, arrival)),
      })),
      ...(decision.refused ? { refused: decision.refused } : {}),
    },
  ]);
  if (!kept.length) throw quotaExceeded('points_per_device_per_day', decision.limit ?? 0, arrivalMs);
  return { accepted: kept.length, refused: decision.refused, timestamp_in };
};

/**
 * Counts what a device sent against one of its daily quotas (exactly: the HTTPS door answers how
 * many it refused); the claim also answers where the device is, in place of its lookup.
 * @throws NotFoundError when the device no longer exists.
 */
const claimed = async (deps: DeviceApiDeps, caller: DeviceCaller, quota: DeviceQuota, n: number, at: number) => {
  const decision: QuotaDecision | undefined = await quota(caller.deviceId, n, at);
  if (!decision) throw new NotFoundError(`Device ${caller.deviceId} not found.`);
  return { decision, device: placeOfLocator(caller.deviceId, decision.locator) ?? (await requireDevice(deps.db, caller)) };
};

/**
 * Puts a device's events on the ingest queue, for forwarding as data points go, with their arrival
 * (`timestamp_in`: the UTC day they count in) and how many of the report its quota refused; an
 * event without `ts` occurred at its arrival. Both doors report through it, once the events are
 * counted against the device's `events_per_device_per_day`.
 */
export const queueEvents = async (
  deps: DeviceApiDeps,
  place: DevicePlace,
  events: DeviceEventInput[],
  { arrival = nowIso(), refused = 0 }: { arrival?: string; refused?: number } = {},
) => {
  await deps.enqueue([
    {
      kind: 'events',
      ...place,
      timestamp_in: arrival,
      events: events.map(({ type, payload, ts }) => ({ type, payload, ts: ts ?? eventTimestamp() })),
      ...(refused ? { refused } : {}),
    },
  ]);
};

/**
 * Accepts device events for forwarding (the HTTPS door). The events count against the device's
 * `events_per_device_per_day` of the UTC day of their arrival: those past it (the last ones of the
 * request) are refused, said in `refused` and counted in the workspace's usage through the same
 * message. The count is also the device's lookup.
 * @throws NotFoundError when the device no longer exists.
 * @throws QuotaExceededError when the quota refuses every event of the request (Retry-After: until midnight UTC).
 */
export const reportEvents = async (deps: PublishDataDeps, caller: DeviceCaller, events: DeviceEventInput[], arrivalMs = Date.now()) => {
  const { decision, device } = await claimed(deps, caller, deps.events, events.length, arrivalMs);
  const arrival = new Date(arrivalMs).toISOString();
  const kept = events.slice(0, decision.accepted);
  await queueEvents(deps, placeOf(device), kept, { arrival, refused: decision.refused });
  if (!kept.length) throw quotaExceeded('events_per_device_per_day', decision.limit ?? 0, arrivalMs);
  return { accepted: kept.length, refused: decision.refused, timestamp_in: arrival };
};

/** What counts the HTTPS door's requests that stand for `j/up` messages. */
export interface UpMessageDeps {
  /** The container's share of its devices' `up_messages_per_device_per_day` (in slices: one request is one message). */
  upMessages: DeviceQuota;
  /** Adds the requests to their workspaces' usage (`up_messages_in`, `up_messages_refused`). */
  usage: (tally: UsageTally) => Promise<void>;
}

/**
 * Counts an HTTPS request that stands for a `j/up` message (the status, a job's or a FOTA's
 * result) against its device's `up_messages_per_device_per_day`, and in its workspace's usage.
 * @throws NotFoundError when the device no longer exists.
 * @throws QuotaExceededError when the device has sent its limit today (Retry-After: until midnight UTC); nothing else is done then.
 */
export const admitUpMessage = async (deps: UpMessageDeps, caller: DeviceCaller, at = Date.now()) => {
  const decision = await deps.upMessages(caller.deviceId, 1, at);
  if (!decision) throw new NotFoundError(`Device ${caller.deviceId} not found.`);
  const tally = new UsageTally();
  tally.add(decision.workspace_id, at, { up_messages_in: 1, up_messages_refused: decision.refused });
  await deps.usage(tally);
  if (decision.refused) throw quotaExceeded('up_messages_per_device_per_day', decision.limit ?? 0, at);
};

/**
 * Which of a device's rollouts have ended by cancel or abort: their jobs still pending on it are
 * left out of what it is told to do, before the sweep gets to cancel them (one read per rollout).
 */
const stoppedRollouts = async (db: Db, workspaceId: string, items: Array<{ rollout_id?: string }>) => {
  const ids = [...new Set(items.flatMap((i) => (i.rollout_id ? [i.rollout_id] : [])))];
  const records = await Promise.all(ids.map((id) => getRolloutRecord(db, workspaceId, id)));
  const stopped = (r: (typeof records)[number]) => r !== undefined && (r.state === 'canceled' || r.outcome === 'aborted');
  return new Set(ids.filter((_, i) => stopped(records[i])));
};

/** Marks a FOTA held back: S3 does not hold its version's registered image. */
const WITHHELD = Symbol('withheld');

/** A FOTA's download, or WITHHELD when its image does not match the version (firmwareDownloadOf logged it). */
const downloadOrWithheld = (db: Db, workspaceId: string, value: FirmwareName): Promise<FirmwareDownload | undefined | typeof WITHHELD> =>
  firmwareDownloadOf(db, workspaceId, value).catch((error: unknown) => {
    if (error instanceof FirmwareImageMismatchError) return WITHHELD;
    throw error;
  });

/**
 * What the device has to do: its pending jobs (oldest first) and its pending FOTA, but those of
 * a rollout that was canceled or aborted; the FOTA with a fresh download URL of its image when the
 * version was registered and uploaded. A FOTA whose version's object in S3 is not the registered
 * image is held back (`fota: null`) until it is: no URL is minted for other bytes. With them, its
 * desired state and version (spec/fleet-state.md §3). The request is
 * recorded as a `status` event (which names the FOTA's firmware, never a URL).
 * @throws NotFoundError when the device no longer exists.
 */
export const getDeviceStatus = async (deps: DeviceApiDeps, caller: DeviceCaller): Promise<DeviceStatus> => (await deviceStatusOf(deps, caller)).status;

/**
 * {@link getDeviceStatus}, with the device's whole state beside it (the MQTT door's `#status`
 * answer also carries the reported keys, in `current`).
 */
export const deviceStatusOf = async (deps: DeviceApiDeps, caller: DeviceCaller): Promise<{ status: DeviceStatus; state: DeviceState }> => {
  await deps.upMessage?.(caller);
  const [device, pendingJobs, fota] = await Promise.all([
    requireDevice(deps.db, caller),
    listJobsOfDevice(deps.db, caller.deviceId, 'pending'),
    getFotaOfDevice(deps.db, caller.deviceId),
  ]);
  const pendingFota = fota?.status === 'pending' ? fota : undefined;
  // Both reads at once: a FOTA of a stopped rollout is rare, and its download then goes unused.
  const [stopped, download] = await Promise.all([
    stoppedRollouts(deps.db, caller.workspaceId, [...pendingJobs, ...(pendingFota ? [pendingFota] : [])]),
    pendingFota && downloadOrWithheld(deps.db, device.workspace_id, pendingFota.value),
  ]);
  const live = (item: { rollout_id?: string }) => !item.rollout_id || !stopped.has(item.rollout_id);
  const state = stateOf(device);
  const dueFota = pendingFota && live(pendingFota) && download !== WITHHELD ? pendingFota : undefined;
  const status: DeviceStatus = {
    jobs: pendingJobs
      .filter(live)
      .sort((a, b) => a.scheduled_at.localeCompare(b.scheduled_at) || a.name.localeCompare(b.name))
      .map(({ name, value, scheduled_at }) => ({ name, value, scheduled_at })),
    fota: dueFota ? { value: download && download !== WITHHELD ? fotaArgs(dueFota.value, download) : dueFota.value, scheduled_at: dueFota.scheduled_at } : null,
    state: { desired: state.desired, version: state.version },
  };
  await observe(deps.forward, [
    eventMessage(placeOf(device), 'status', 'd2c', { pending_jobs: status.jobs.map((j) => j.name), pending_fota: dueFota?.value ?? null }),
  ]);
  return { status, state };
};

/**
 * Records a job's result: the job becomes `done`, or `failed` for a result with a top-level `error`.
 * The registry stream then forwards a d2c `job` event with the ended job as payload (as the c2d
 * event of its scheduling carries the pending one), naming the device's fleet now. A retried report
 * changes nothing and emits nothing.
 * @throws NotFoundError when the device has no such job; ConflictError when it already ended with another result, or is still queued.
 */
export const reportJobResult = async (deps: DeviceApiDeps, caller: DeviceCaller, name: string, result: Record<string, unknown>) => {
  await deps.upMessage?.(caller);
  const device = await requireDevice(deps.db, caller);
  return completeJob(deps.db, caller.deviceId, name, result, placeOf(device));
};

/**
 * Records a FOTA's progress (`in_progress`) or outcome (`done`, `failed`). The registry stream then
 * forwards a d2c `fota` event: the FOTA, with the device's message when it gave one.
 * @throws NotFoundError when the device has no FOTA; ConflictError when it names another firmware, the FOTA already ended otherwise, or is still queued.
 */
export const reportFotaResult = async (deps: DeviceApiDeps, caller: DeviceCaller, outcome: FotaResultBody) => {
  await deps.upMessage?.(caller);
  const device = await requireDevice(deps.db, caller);
  return finishFota(deps.db, caller.deviceId, outcome, placeOf(device));
};

/**
 * Opens (a body with `tag`) or closes a condition of the device: the HTTPS twin of the MQTT door's
 * `condition` message, through the same domain functions; counted as a `j/up` message. An opening
 * without `start`, or a closing without `finish`, is stamped with its arrival.
 * @throws NotFoundError when the device no longer exists, or a closing names no condition of it.
 */
export const reportCondition = async (deps: DeviceApiDeps, caller: DeviceCaller, body: DeviceConditionBody, arrival = nowIso()) => {
  await deps.upMessage?.(caller);
  const place = placeOf(await requireDevice(deps.db, caller));
  if ('tag' in body) return conditionOf(await openCondition(deps, place, { ...body, start: body.start ?? arrival }, arrival));
  const closed = await closeCondition(deps, place, { ...body, finish: body.finish ?? arrival }, arrival);
  if (!closed) throw new NotFoundError(`Condition ${body.uuid} not found: the device never opened it.`);
  return conditionOf(closed);
};
