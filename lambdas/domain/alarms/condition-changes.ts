import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { deleteTimer, putTimerIfAbsent } from '../../stores/alarm-timer-store';
import { CONDITION_SORT_KEY_PREFIX, deviceKey } from '../../stores/keys';
import { conditionOpenId } from './alarm-sweep';
import { rulesOfKind, targetReader, type DetectedRule, type DetectionDeps } from './detection';

/** A condition's record opened or closed (stores/condition-store.ts: `WKS#<wks>` / `COND#<start>#<dev>#<uuid>`), as its stream record tells it. */
interface ConditionChange {
  index: number;
  what: 'opened' | 'closed';
  workspaceId: string;
  deviceId: string;
  uuid: string;
  tag: string;
  start: string;
  finish?: string;
}

type Image = Record<string, AttributeValue>;
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);

/**
 * The condition change a stream record describes, if any: a condition record of a workspace
 * inserted open, or changed from open to closed. Pure. (A device's pointer by uuid, `DEV#…`/`COND#…`,
 * shares the prefix and is passed over.)
 */
export const conditionChangeOf = (record: DynamoDBRecord, index: number): ConditionChange | undefined => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith(CONDITION_SORT_KEY_PREFIX)) return undefined;
  const after = itemOf(record.dynamodb?.NewImage);
  const before = itemOf(record.dynamodb?.OldImage);
  if (!after || typeof after.device_id !== 'string' || typeof after.uuid !== 'string') return undefined;
  const change = (what: ConditionChange['what']): ConditionChange => ({
    index,
    what,
    workspaceId: pk.slice('WKS#'.length),
    deviceId: after.device_id as string,
    uuid: after.uuid as string,
    tag: String(after.tag),
    start: String(after.start),
    ...(typeof after.finish === 'string' ? { finish: after.finish } : {}),
  });
  if (record.eventName === 'INSERT' && after.status === 'open') return change('opened');
  if (record.eventName === 'MODIFY' && before?.status === 'open' && after.status === 'closed') return change('closed');
  return undefined;
};

/** The device a condition is on, as the rules' targets read it (its account names the workspace's rules). */
const deviceOf = async (db: Db, workspaceId: string, deviceId: string) =>
  (await db.doc.send(new GetCommand({ TableName: db.table, Key: deviceKey(workspaceId, deviceId) }))).Item as
    | (Record<string, unknown> & { id: string; account_id: string; fleet_id: string })
    | undefined;

/** The workspace's `condition` rules on the change's tag (any tag when a rule names none) that target its device. */
const rulesFor = async <R extends DetectedRule>(deps: DetectionDeps<R>, targets: ReturnType<typeof targetReader>, change: ConditionChange) => {
  const device = await deviceOf(deps.db, change.workspaceId, change.deviceId);
  if (!device) return { device, rules: [] };
  const all = await deps.rules({ account_id: device.account_id, workspace_id: change.workspaceId });
  const rules: R[] = [];
  for (const rule of rulesOfKind(all, 'condition')) if ((rule.tag === null || rule.tag === change.tag) && (await targets(rule, device))) rules.push(rule);
  return { device, rules };
};

/**
 * The alarms' part of the registry stream's consumer for conditions: a condition opened starts a
 * timer per `condition` rule on its tag that targets its device, due `for_seconds` after its start
 * (or opens the alarm at once for 0); a condition closed deletes that timer and closes the rule's
 * alarm on the device. A change costs one read of its device and the cached rules; writes are
 * put-if-absent, deletes and transitions by ID, so a retried batch changes nothing twice.
 * @returns the index of the first record that could not be handled (the stream retries from there), or undefined.
 */
export const followConditionAlarms = async <R extends DetectedRule>(deps: DetectionDeps<R> & { concurrency: number }, records: DynamoDBRecord[]) => {
  const changes = records.flatMap((record, index) => conditionChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const targets = targetReader(deps.db);
  const results = await settleAll(changes, deps.concurrency, async (change) => {
    const { device, rules } = await rulesFor(deps, targets, change);
    for (const rule of rules) {
      if (change.what === 'closed') {
        await deleteTimer(deps.db, change.deviceId, rule.id, { condition: change.uuid });
        await deps.close(rule.id, change.deviceId, {
          transitionId: `condition-closed:${rule.id}:${change.deviceId}:${change.uuid}:${change.start}`,
          details: { condition_uuid: change.uuid, finish: change.finish ?? null },
        });
      } else if (rule.for_seconds === 0) {
        await deps.open(
          rule,
          { workspace_id: change.workspaceId, fleet_id: device!.fleet_id, device_id: change.deviceId },
          { details: { condition_uuid: change.uuid, start: change.start }, transitionId: conditionOpenId(rule.id, change.deviceId, change.uuid, change.start) },
        );
      } else {
        await putTimerIfAbsent(
          deps.db,
          {
            workspace_id: change.workspaceId,
            account_id: device!.account_id,
            device_id: change.deviceId,
            rule_id: rule.id,
            kind: 'condition',
            since: change.start,
            condition_uuid: change.uuid,
          },
          Date.parse(change.start) + rule.for_seconds * 1000,
        );
      }
    }
  });
  const failed = results.findIndex((result) => result.status === 'rejected');
  if (failed < 0) return undefined;
  logger.error('a condition change could not be matched against its alarm rules; the stream retries', {
    error: (results[failed] as PromiseRejectedResult).reason as Error,
    eventID: records[changes[failed].index].eventID,
  });
  return changes[failed].index;
};
