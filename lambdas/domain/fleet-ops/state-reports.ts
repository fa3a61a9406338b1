import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../shared/clients';
import { nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { transitionStateExecution } from '../../stores/state-execution-store';
import { eventTimestamp } from '../webhooks/events';
import { reportsDesired } from './state-rollouts';

/** What following devices' reports needs: the registry, and how many devices are handled at once. */
export interface StateReportDeps {
  db: Db;
  concurrency: number;
}

type StoredState = {
  reported?: Record<string, unknown>;
  desired?: Record<string, unknown>;
  desired_by?: Record<string, string[]>;
  version?: number;
};

/** A device whose state changed as the state rollouts see it (its reports, its desired keys, the rollouts behind them), as a stream record tells it. */
interface StateChange {
  index: number;
  deviceId: string;
  before?: StoredState;
  after: StoredState;
}

type Image = Record<string, AttributeValue>;
const stateOfImage = (image: unknown) => (image ? (unmarshall(image as Image).state as StoredState | undefined) : undefined);

/**
 * The state change a stream record describes: a device item (`WKS#…`/`DEV#…`) whose reported
 * state, desired version or rollouts behind its desired keys changed. Pure: no request.
 */
export const stateChangeOf = (record: DynamoDBRecord, index: number): StateChange | undefined => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith('DEV#') || record.eventName !== 'MODIFY') return undefined;
  const after = stateOfImage(record.dynamodb?.NewImage);
  const before = stateOfImage(record.dynamodb?.OldImage);
  if (!after) return undefined;
  const same =
    isDeepStrictEqual(before?.reported, after.reported) && before?.version === after.version && isDeepStrictEqual(before?.desired_by, after.desired_by);
  return same ? undefined : { index, deviceId: sk.slice('DEV#'.length), before, after };
};

/** The keys a rollout holds in a state (those whose value is the rollout's), as the desired keys it set: null for a key it removes. */
const keysOf = (state: StoredState | undefined, rolloutId: string) =>
  Object.entries(state?.desired_by ?? {}).flatMap(([key, ids]) => (ids.includes(rolloutId) ? [[key, state?.desired?.[key] ?? null] as const] : []));

/** Whether a state applies a rollout: it holds some of the rollout's keys, and reports each of them. */
const applies = (state: StoredState | undefined, rolloutId: string) => {
  const keys = keysOf(state, rolloutId);
  return keys.length > 0 && reportsDesired(state?.reported, Object.fromEntries(keys));
};

/**
 * What a device's state change does to the state rollouts behind its desired keys (no read: the
 * rollouts are named on the keys, stores/device-state-store.ts `desired_by`): those it now applies
 * and did not before end `done`; those a later change took a key from (another value, another
 * rollout's, a per-device PATCH, a removal) end `canceled`, naming the key. Pure.
 */
export const rolloutMovesOf = ({ before, after }: Pick<StateChange, 'before' | 'after'>) => {
  const superseded = new Map<string, string>();
  for (const [key, ids] of Object.entries(before?.desired_by ?? {}))
    for (const id of ids) if (!after.desired_by?.[key]?.includes(id) && !superseded.has(id)) superseded.set(id, key);
  const held = new Set(Object.values(after.desired_by ?? {}).flat());
  const done = [...held].filter((id) => !superseded.has(id) && applies(after, id) && !applies(before, id));
  return { done, superseded: [...superseded] };
};

/**
 * Follows the state of the devices of state rollouts (fleet-state.md §3): for each device whose
 * state changed in the batch, the rollouts its change applied (`done`) or superseded (`canceled`)
 * ({@link rolloutMovesOf}): one conditional write each (a retried batch changes nothing twice), and
 * nothing for a change that moves no rollout, such as a report on a device in none. The items' own
 * stream records then move the rollouts' counts (rollout-counts.ts), within seconds.
 * @returns the index of the first record whose device could not be handled (the stream retries from there), or undefined.
 */
export const followStateReports = async (deps: StateReportDeps, records: DynamoDBRecord[]): Promise<number | undefined> => {
  const changes = records.flatMap((record, index) => stateChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const end = (deviceId: string, rolloutId: string, to: 'done' | 'canceled', message?: string) =>
    transitionStateExecution(deps.db, deviceId, rolloutId, {
      from: ['pending'],
      to,
      at: nowIso(),
      set: { event_ts: eventTimestamp(), message },
      known: { rollout_id: rolloutId },
    });
  const results = await settleAll(changes, deps.concurrency, async (change) => {
    const { done, superseded } = rolloutMovesOf(change);
    await Promise.all([
      ...done.map((rolloutId) => end(change.deviceId, rolloutId, 'done')),
      ...superseded.map(([rolloutId, key]) => end(change.deviceId, rolloutId, 'canceled', `Superseded: desired.${key} was changed since its release.`)),
    ]);
  });
  const failed = results.findIndex((result) => result.status === 'rejected');
  if (failed < 0) return undefined;
  logger.error('a device state change could not be matched against its state rollouts; the stream retries', {
    error: (results[failed] as PromiseRejectedResult).reason as Error,
    eventID: records[changes[failed].index].eventID,
  });
  return changes[failed].index;
};
