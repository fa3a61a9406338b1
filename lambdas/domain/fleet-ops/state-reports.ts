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

/** A device whose reported state changed, as a stream record tells it. */
interface ReportChange {
  index: number;
  workspaceId: string;
  deviceId: string;
  reported: Record<string, unknown>;
}

type Image = Record<string, AttributeValue>;
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);
const reportedOf = (item: Record<string, unknown> | undefined) => (item?.state as { reported?: Record<string, unknown> } | undefined)?.reported;

/**
 * The report a stream record describes: a device item (`WKS#…`/`DEV#…`) whose `state.reported`
 * changed (h1's device state, on the device item). Pure: no request.
 */
export const reportChangeOf = (record: DynamoDBRecord, index: number): ReportChange | undefined => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith('DEV#') || record.eventName !== 'MODIFY') return undefined;
  const after = itemOf(record.dynamodb?.NewImage);
  const reported = reportedOf(after);
  if (!reported || isDeepStrictEqual(reportedOf(itemOf(record.dynamodb?.OldImage)), reported)) return undefined;
  return { index, workspaceId: pk.slice('WKS#'.length), deviceId: sk.slice('DEV#'.length), reported };
};

/**
 * Ends as `done` the pending devices of state rollouts that a report made equal to their desired
 * keys (fleet-state.md §3): for each device whose reported state changed in the batch, its pending
 * state items (one Query of its partition) against their rollouts' desired keys (each rollout read
 * once per batch), each ended by a conditional write (a retried batch changes nothing twice). The
 * items' own stream records then move the rollouts' counts (rollout-counts.ts), within seconds. A
 * device that reports without being in a state rollout costs that one Query.
 * @returns the index of the first record whose device could not be handled (the stream retries from there), or undefined.
 */
export const followStateReports = async (deps: StateReportDeps, records: DynamoDBRecord[]): Promise<number | undefined> => {
  const changes = records.flatMap((record, index) => reportChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const rollouts = new Map<string, Promise<RolloutRecord | undefined>>();
  const rolloutOf = (workspaceId: string, rolloutId: string) => {
    let read = rollouts.get(rolloutId);
    if (!read) rollouts.set(rolloutId, (read = getRolloutRecord(deps.db, workspaceId, rolloutId)));
    return read;
  };
  const results = await settleAll(changes, deps.concurrency, async ({ workspaceId, deviceId, reported }) => {
    for (const execution of await listStateExecutionsOfDevice(deps.db, deviceId, 'pending')) {
      const rollout = await rolloutOf(workspaceId, execution.rollout_id);
      if (!rollout?.value || !reportsDesired(reported, rollout.value)) continue;
      await transitionStateExecution(deps.db, deviceId, execution.rollout_id, {
        from: ['pending'],
        to: 'done',
        at: nowIso(),
        set: { event_ts: eventTimestamp() },
        known: { rollout_id: execution.rollout_id },
      });
    }
  });
  const failed = results.findIndex((result) => result.status === 'rejected');
  if (failed < 0) return undefined;
  logger.error('a device report could not be matched against its state rollouts; the stream retries', {
    error: (results[failed] as PromiseRejectedResult).reason as Error,
    eventID: records[changes[failed].index].eventID,
  });
  return changes[failed].index;
};
