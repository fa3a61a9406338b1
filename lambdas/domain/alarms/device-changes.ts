import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { deleteTimer, putTimerIfAbsent } from '../../stores/alarm-timer-store';
import { offlineCloseId } from './alarm-sweep';
import { rulesOfKind, targetReader, type DetectedRule, type DetectionDeps } from './detection';

/** A device item's change that starts or ends alarm timers: a disconnection, a reconnection, its first data point. */
interface AlarmChange {
  index: number;
  what: 'disconnected' | 'connected' | 'first-data';
  /** When: the item's `last_disconnected_at`, `last_connected_at` or `last_seen_at`. */
  at: string;
  workspaceId: string;
  device: Record<string, unknown> & { id: string; account_id: string; fleet_id: string };
}

type Image = Record<string, AttributeValue>;
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);

/**
 * The alarm change a stream record describes, if any: a device item (`WKS#…`/`DEV#…`) whose
 * `connected` went true → false or false → true, or whose `last_seen_at` appeared. Pure: every
 * other change (a point's `last_seen_at` a minute later, a rename, a report) costs no request.
 */
export const alarmChangeOf = (record: DynamoDBRecord, index: number): AlarmChange | undefined => {
  const pk = record.dynamodb?.Keys?.pk?.S;
  const sk = record.dynamodb?.Keys?.sk?.S;
  if (!pk?.startsWith('WKS#') || !sk?.startsWith('DEV#') || record.eventName !== 'MODIFY') return undefined;
  const before = itemOf(record.dynamodb?.OldImage);
  const after = itemOf(record.dynamodb?.NewImage);
  if (!before || !after || typeof after.fleet_id !== 'string' || typeof after.account_id !== 'string') return undefined;
  const { pk: _pk, sk: _sk, ...device } = after;
  const change = (what: AlarmChange['what'], at: unknown): AlarmChange | undefined =>
    typeof at === 'string' ? { index, what, at, workspaceId: pk.slice('WKS#'.length), device: device as AlarmChange['device'] } : undefined;
  if (before.connected === true && after.connected === false) return change('disconnected', after.last_disconnected_at);
  if (before.connected === false && after.connected === true) return change('connected', after.last_connected_at);
  if (before.last_seen_at === undefined && after.last_seen_at !== undefined) return change('first-data', after.last_seen_at);
  return undefined;
};

/** Starts the timers of `kind`'s rules that target the device, due `for_seconds` after `at`. */
const startTimers = async <R extends DetectedRule>(
  deps: DetectionDeps<R>,
  targets: ReturnType<typeof targetReader>,
  change: AlarmChange,
  rules: readonly R[],
  kind: 'offline' | 'silent',
) => {
  for (const rule of rulesOfKind(rules, kind)) {
    if (!(await targets(rule, change.device))) continue;
    await putTimerIfAbsent(
      deps.db,
      { workspace_id: change.workspaceId, account_id: change.device.account_id, device_id: change.device.id, rule_id: rule.id, kind, since: change.at },
      Date.parse(change.at) + rule.for_seconds * 1000,
    );
  }
};

/** A reconnection: the device's offline timers end, and its open offline alarms close (once per reconnection). */
const endOffline = async <R extends DetectedRule>(deps: DetectionDeps<R>, change: AlarmChange, rules: readonly R[]) => {
  for (const rule of rulesOfKind(rules, 'offline')) {
    // The timer first: a sweep that opens meanwhile then finds it gone and closes what it opened.
    await deleteTimer(deps.db, change.device.id, rule.id);
    await deps.close(rule.id, change.device.id, { transitionId: offlineCloseId(rule.id, change.device.id, change.at), details: { connected_at: change.at } });
  }
};

/**
 * The alarms' part of the registry stream's consumer (DESIGN §16): a device that disconnected gets
 * a timer for each enabled `offline` rule targeting it (fleets, group, `q` on the device as its
 * item reads), due `for_seconds` after its disconnection; one that reconnected loses them and its
 * open offline alarms close; one whose first point arrived gets a timer for each `silent` rule
 * targeting it. Rules come from the container's cache (a workspace without rules costs its one
 * cached read, none per change); every other change costs nothing. Writes are put-if-absent,
 * deletes and transitions by ID: a retried batch changes nothing twice.
 * @returns the index of the first record whose device could not be handled (the stream retries from there), or undefined.
 */
export const followDeviceAlarms = async <R extends DetectedRule>(deps: DetectionDeps<R> & { concurrency: number }, records: DynamoDBRecord[]) => {
  const changes = records.flatMap((record, index) => alarmChangeOf(record, index) ?? []);
  if (!changes.length) return undefined;
  const targets = targetReader(deps.db);
  const handle = async (change: AlarmChange) => {
    const rules = await deps.rules({ account_id: change.device.account_id, workspace_id: change.workspaceId });
    if (!rules.length) return;
    if (change.what === 'disconnected') await startTimers(deps, targets, change, rules, 'offline');
    else if (change.what === 'connected') await endOffline(deps, change, rules);
    else await startTimers(deps, targets, change, rules, 'silent');
  };
  // A device's changes in their order (a disconnection and the reconnection after it); devices at once.
  const groups = new Map<string, AlarmChange[]>();
  for (const change of changes) groups.set(change.device.id, [...(groups.get(change.device.id) ?? []), change]);
  const byDevice = [...groups.values()];
  let failed: { change: AlarmChange; error: unknown } | undefined;
  await settleAll(byDevice, deps.concurrency, async (ofDevice) => {
    for (const change of ofDevice) {
      try {
        await handle(change);
      } catch (error) {
        if (!failed || change.index < failed.change.index) failed = { change, error };
        return;
      }
    }
  });
  if (!failed) return undefined;
  logger.error('a device change could not be matched against its alarm rules; the stream retries', {
    error: failed.error as Error,
    eventID: records[failed.change.index].eventID,
  });
  return failed.change.index;
};
