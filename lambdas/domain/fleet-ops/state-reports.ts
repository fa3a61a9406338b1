import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../shared/clients';
import { nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { getRolloutRecord, type RolloutRecord } from '../../stores/rollout-store';
import { listStateExecutionsOfDevice, transitionStateExecution } from '../../stores/state-execution-store';
import { eventTimestamp } from '../webhooks/events';
import { reportsDesired } from './state-rollouts';

/** What following devices' reports needs: the registry, and how many devices are handled at once. */
export interface StateReportDeps {
  db: Db;
  concurrency: number;
}

/** A device whose reported or desired state changed, as a stream record tells it: its state now. */
interface StateChange {
  index: number;
  workspaceId: string;
  deviceId: string;
  reported: Record<string, unknown>;
  desired: Record<string, unknown>;
  desired_at: Record<string, string>;
}

type Image = Record<string, AttributeValue>;
type StoredState = { reported?: Record<string, unknown>; desired?: Record<string, unknown>; desired_at?: Record<string, string>; version?: number };
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);
const stateOfItem = (item: Record<string, unknown> | undefined) => item?.state as StoredState | undefined;

/**
 * The state change a stream record describes: a device item (`WKS#…`/`DEV#…`) whose
 * `state.reported` changed, or whose desired state has a new version (h1's device state, on the
 * device item). Pure: no request.
 */
export const stateChangeOf = (record: DynamoDBRecord, index: number): StateChange | undefined => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith('DEV#') || record.eventName !== 'MODIFY') return undefined;
  const after = stateOfItem(itemOf(record.dynamodb?.NewImage));
  const before = stateOfItem(itemOf(record.dynamodb?.OldImage));
  if (!after || (isDeepStrictEqual(before?.reported, after.reported) && before?.version === after.version)) return undefined;
  return {
    index,
    workspaceId: pk.slice('WKS#'.length),
    deviceId: sk.slice('DEV#'.length),
    reported: after.reported ?? {},
    desired: after.desired ?? {},
    desired_at: after.desired_at ?? {},
  };
};

/**
 * The first of a rollout's keys that a later desired change (another rollout, a device's PATCH)
 * set to another value after the device's release, if any: the device can no longer apply the
 * rollout's value. A key removed since (it keeps no time) is not seen. Pure.
 */
export const supersededKeyOf = (change: Pick<StateChange, 'desired' | 'desired_at'>, desired: Record<string, unknown>, releasedAt: string | undefined) =>
  Object.keys(desired).find((key) => {
    const at = change.desired_at[key];
    const same = desired[key] === null ? change.desired[key] === undefined : isDeepStrictEqual(change.desired[key], JSON.parse(JSON.stringify(desired[key])));
    // Set since the release (the release's own write may not have come yet: a key without a time, or set before, is not).
    return !same && at !== undefined && releasedAt !== undefined && at > releasedAt;
  });

/**
 * Follows the state of the devices of state rollouts (fleet-state.md §3): for each device whose
 * reported state changed in the batch (or whose desired state has a new version), its pending
 * state items (one Query of its partition) against their rollouts' desired keys (each rollout read
 * once per batch): one whose keys it now reports ends `done`; one whose keys a later desired change
 * set to other values (another rollout, a per-device PATCH, after its release) ends `canceled`, with
 * the key in its message, since it can no longer apply them. Each is a conditional write (a retried
 * batch changes nothing twice); the items' own stream records then move the rollouts' counts
 * (rollout-counts.ts), within seconds. A device's state change outside any state rollout costs
 * that one Query.
 * @returns the index of the first record whose device could not be handled (the stream retries from there), or undefined.
 */
export const followStateReports = async (deps: StateReportDeps, records: DynamoDBRecord[]): Promise<number | undefined> => {
  const changes = records.flatMap((record, index) => stateChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const rollouts = new Map<string, Promise<RolloutRecord | undefined>>();
  const rolloutOf = (workspaceId: string, rolloutId: string) => {
    let read = rollouts.get(rolloutId);
    if (!read) rollouts.set(rolloutId, (read = getRolloutRecord(deps.db, workspaceId, rolloutId)));
    return read;
  };
  const results = await settleAll(changes, deps.concurrency, async (change) => {
    for (const execution of await listStateExecutionsOfDevice(deps.db, change.deviceId, 'pending')) {
      const rollout = await rolloutOf(change.workspaceId, execution.rollout_id);
      if (!rollout?.value) continue;
      const superseded = reportsDesired(change.reported, rollout.value) ? undefined : supersededKeyOf(change, rollout.value, execution.released_at);
      if (!reportsDesired(change.reported, rollout.value) && superseded === undefined) continue;
      await transitionStateExecution(deps.db, change.deviceId, execution.rollout_id, {
        from: ['pending'],
        to: superseded === undefined ? 'done' : 'canceled',
        at: nowIso(),
        set: { event_ts: eventTimestamp(), message: superseded === undefined ? undefined : `Superseded: desired.${superseded} was changed since its release.` },
        known: { rollout_id: execution.rollout_id },
      });
    }
  });
  const failed = results.findIndex((result) => result.status === 'rejected');
  if (failed < 0) return undefined;
  logger.error('a device state change could not be matched against its state rollouts; the stream retries', {
    error: (results[failed] as PromiseRejectedResult).reason as Error,
    eventID: records[changes[failed].index].eventID,
  });
  return changes[failed].index;
};
