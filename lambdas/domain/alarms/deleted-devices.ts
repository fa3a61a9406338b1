import { settleAll } from '../../shared/settle';
import { listAlarmRulesOfWorkspace } from '../../stores/alarm-rule-store';
import { deleteTimersOfDevice } from '../../stores/alarm-timer-store';
import { closeAlarm, type AlarmDeps } from './alarms';

// Rules whose alarm on the device is closed at once.
const CONCURRENCY = 8;

/**
 * A deleted device's alarms close and its timers go (the device deletion's `closeAlarms` hook,
 * domain/registry/device-deletion.ts: run once the device is deleted, and again by a retried
 * DELETE). Each rule of the workspace (at most its quota) closes its alarm on the device that is not
 * closed, if any (`details.closed_by: "device_deleted"`), told as every transition is; the
 * transition's ID names the rule and the device (a device is deleted once), so a retry writes and
 * tells nothing twice. Costs one query of the rules, one read of a guard per rule, one query of the
 * device's timers.
 */
export const closeAlarmsOfDevice = async (deps: AlarmDeps, workspaceId: string, deviceId: string) => {
  await deleteTimersOfDevice(deps.db, deviceId);
  const rules = await listAlarmRulesOfWorkspace(deps.db, workspaceId);
  const results = await settleAll(rules, CONCURRENCY, (rule) =>
    closeAlarm(deps, rule.id, deviceId, { transitionId: `device-deleted:${rule.id}:${deviceId}`, details: { closed_by: 'device_deleted' } }),
  );
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
};
