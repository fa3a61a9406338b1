import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import { nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { readContinuousTargets, type ContinuousTarget } from '../../stores/continuous-rollout-store';
import { getFirmwareVersion } from '../../stores/firmware-store';
import { storedFotaItem, storedJobItem, type DeviceTarget } from '../../stores/job-store';
import { firmwareRefOf } from '../../stores/keys';
import { putLateItem, type LateItem } from '../../stores/rollout-late-store';
import { getRolloutRecord, type RolloutRecord } from '../../stores/rollout-store';
import { dueByDeadline } from '../../stores/rollout-update-store';
import { requireGroup } from '../registry/groups';
import { parseQuery, type Query } from '../registry/query';
import { eventTimestamp } from '../webhooks/events';
import { scheduledState } from './executions';
import { isTargeted } from './fleet-targets';
import { fotaRecordOf } from './fota';
import { hasEnded, type DeviceState } from './rollouts';
import { releaseDesired } from './state-rollouts';
import { storedStateItem } from '../../stores/state-execution-store';

/** What adding late devices to continuous rollouts needs: the registry, and how many writes run at once. */
export interface LateDeviceDeps {
  db: Db;
  concurrency: number;
}

/** A device item's change that may make it match a target it did not: a creation, a move, new tags or a new name. */
interface DeviceChange {
  index: number;
  workspaceId: string;
  device: Record<string, unknown> & { id: string; fleet_id: string };
}

/**
 * The fields of a device item that a continuous rollout's target reads and that change seldom: a
 * change of one of them is looked at. Connection and last-seen changes are not (they come and go
 * all day): a target on them is taken at the snapshot only (docs/operations.md).
 */
const WATCHED_FIELDS = ['fleet_id', 'tags', 'name', 'state'] as const;

type Image = Record<string, AttributeValue>;
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);

/**
 * The device change a stream record describes, when it may make the device match later: a device
 * item (`WKS#…`/`DEV#…`) created, or changed in a watched field. Pure: no request.
 */
export const deviceChangeOf = (record: DynamoDBRecord, index: number): DeviceChange | undefined => {
  const keys = record.dynamodb?.Keys;
  const pk = keys?.pk?.S;
  const sk = keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith('DEV#')) return undefined;
  if (record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') return undefined;
  const after = itemOf(record.dynamodb?.NewImage);
  if (!after || typeof after.fleet_id !== 'string') return undefined;
  const before = itemOf(record.dynamodb?.OldImage);
  if (before && WATCHED_FIELDS.every((field) => isDeepStrictEqual(before[field], after[field]))) return undefined;
  const { pk: _pk, sk: _sk, ...device } = after;
  return { index, workspaceId: pk.slice('WKS#'.length), device: device as DeviceChange['device'] };
};

/** A rollout as the batch reads it, once: its record, and what a late FOTA of it carries. */
interface LiveRollout {
  record: RolloutRecord;
  firmware_ref?: string;
}

/** Reads what one batch needs, each thing at most once: a workspace's continuous targets, a group's query, a rollout. */
const batchReader = (db: Db) => {
  const memo = <T>(read: (key: string) => Promise<T>) => {
    const cache = new Map<string, Promise<T>>();
    return (key: string) => {
      let value = cache.get(key);
      if (!value) cache.set(key, (value = read(key)));
      return value;
    };
  };
  const targets = memo((workspaceId) => readContinuousTargets(db, workspaceId));
  const groupQuery = memo(async (key): Promise<Query | undefined> => {
    const [workspaceId, groupId] = key.split('\n');
    try {
      return parseQuery((await requireGroup(db, workspaceId, groupId)).query);
    } catch (error) {
      // A group deleted under a rollout that ended: nobody joins it.
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  });
  const textQuery = memo(async (text) => parseQuery(text));
  const rollout = memo(async (key): Promise<LiveRollout | undefined> => {
    const [workspaceId, rolloutId] = key.split('\n');
    const record = await getRolloutRecord(db, workspaceId, rolloutId, { consistent: true });
    if (!record || hasEnded(record) || !record.settings.continuous) return undefined;
    if (record.kind !== 'fota') return { record };
    const version = await getFirmwareVersion(db, workspaceId, record.firmware_id!, record.firmware_version!);
    return { record, ...(version ? { firmware_ref: firmwareRefOf(workspaceId, record.firmware_id!, record.firmware_version!) } : {}) };
  });
  const queryOf = (workspaceId: string, target: ContinuousTarget): Promise<Query | undefined> | undefined => {
    if (target.group_id !== undefined) return groupQuery(`${workspaceId}\n${target.group_id}`);
    return target.q === undefined ? undefined : textQuery(target.q);
  };
  return { targets, queryOf, rollout: (workspaceId: string, rolloutId: string) => rollout(`${workspaceId}\n${rolloutId}`) };
};

/**
 * The item a late device gets from a rollout: released now (`pending`, with its deadline) when the
 * rollout is in progress and has no rate, else `queued` (the sweep releases it as it releases the
 * snapshot's queued devices, at the rollout's rate, or when a paused one is resumed). It carries the
 * rollout's `scheduled_at`, and its own times.
 */
const lateItemOf = ({ record, firmware_ref }: LiveRollout, device: DeviceChange['device'], workspaceId: string, at: string): LateItem => {
  const released = record.state === 'in_progress' && !record.settings.max_per_minute;
  const state: DeviceState = {
    ...scheduledState({ at, released, timeout_seconds: record.settings.timeout_seconds ?? undefined, rollout_id: record.id }),
    scheduled_at: record.scheduled_at,
    event_ts: eventTimestamp(),
  };
  const target: DeviceTarget = {
    device_id: device.id,
    workspace_id: workspaceId,
    fleet_id: device.fleet_id,
    ...(device.connected ? { deliver_live: true } : {}),
  };
  if (record.kind === 'state') return storedStateItem({ ...state, ...target, rollout_id: record.id }) as LateItem;
  const item =
    record.kind === 'job'
      ? storedJobItem({ name: record.job_name!, value: record.value ?? {}, ...state, ...target })
      : storedFotaItem(
          fotaRecordOf({ firmwareId: record.firmware_id!, firmwareVersion: record.firmware_version! }, target, state, firmware_ref ? { firmware_ref } : {}),
        );
  return item as LateItem;
};

/** Gives one late device its item from one rollout, once; a released one with a timeout makes the rollout due by its deadline. */
const addLateDevice = async (db: Db, live: LiveRollout, change: DeviceChange) => {
  const at = nowIso();
  const item = lateItemOf(live, change.device, change.workspaceId, at);
  const deadline = (item as { deadline_at?: string }).deadline_at;
  // First, so that a retry after a crash between the two (which finds the item written) misses no deadline.
  if (deadline) await dueByDeadline(db, change.workspaceId, live.record.id, deadline);
  const written = await putLateItem(db, item, at);
  // A state rollout's late device, released: its desired keys are set once, when its item is first
  // written (setting them changes the device item, which comes back here and finds it written).
  if (written && live.record.kind === 'state' && item.status === 'pending')
    await releaseDesired(db, { workspaceId: change.workspaceId, deviceId: change.device.id, rolloutId: live.record.id, desired: live.record.value ?? {} });
};

/** The rollouts a device change joins: the workspace's continuous ones whose target it now matches, still running. */
const joinedRollouts = async (reader: ReturnType<typeof batchReader>, change: DeviceChange) => {
  const joined: LiveRollout[] = [];
  for (const target of await reader.targets(change.workspaceId)) {
    const query = reader.queryOf(change.workspaceId, target);
    const resolved = query && (await query);
    // A group gone: its rollout has ended (a group is not deleted while used).
    if (query && !resolved) continue;
    if (!isTargeted(target.fleets, resolved, change.device, change.device.fleet_id)) continue;
    const live = await reader.rollout(change.workspaceId, target.rollout_id);
    if (live) joined.push(live);
  }
  return joined;
};

/**
 * The continuous rollouts' part of the registry stream's consumer: each device that a record shows
 * created, moved, re-tagged or renamed is matched against its workspace's continuous rollouts
 * (their list read once per workspace per batch, and only for a workspace with such a change: one
 * with none costs a GetItem per batch at most, and a device change of no watched field costs
 * nothing), and gets the job, FOTA or desired state of each it now matches, once per rollout (a conditional
 * write: a retried batch, or a device the snapshot reached, is not given it twice), counted in the
 * rollout. The registry stream then delivers it as any scheduled job (its own record).
 * @returns the index of the first record whose device could not be handled (the stream retries
 * from there; everything is idempotent), or undefined.
 */
export const addLateDevices = async (deps: LateDeviceDeps, records: DynamoDBRecord[]): Promise<number | undefined> => {
  const changes = records.flatMap((record, index) => deviceChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const reader = batchReader(deps.db);
  const results = await settleAll(changes, deps.concurrency, async (change) => {
    for (const live of await joinedRollouts(reader, change)) await addLateDevice(deps.db, live, change);
  });
  const failed = results.findIndex((result) => result.status === 'rejected');
  if (failed < 0) return undefined;
  logger.error('a device change could not be matched against its continuous rollouts; the stream retries', {
    error: (results[failed] as PromiseRejectedResult).reason as Error,
    eventID: records[changes[failed].index].eventID,
  });
  return changes[failed].index;
};
