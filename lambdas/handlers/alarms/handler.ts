import { acknowledgeAlarm, alarmDeps, listAlarms } from '../../domain/alarms/alarms';
import { createAlarmRule, deleteAlarmRule, getAlarmRule, listAlarmRules, updateAlarmRule } from '../../domain/alarms/rules';
import { apiRequestHooks } from '../../domain/limits/api-requests';
import { ALARM_OPERATIONS } from '../../schemas/operations/alarms';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

// One Lambda serves the rules and their alarms (the stack's resource count): both are the workspace's alarm items.
export const handler = httpHandler(
  'alarms',
  ALARM_OPERATIONS,
  {
    listAlarmRules: async ({ path, query }, event) =>
      streamList(event, 'alarm_rules', await listAlarmRules(registryDb(), callerOf(event), path.workspaceId, query)),
    createAlarmRule: async ({ path, body }, event) => ok(201, { alarm_rule: await createAlarmRule(registryDb(), callerOf(event), path.workspaceId, body) }),
    getAlarmRule: async ({ path }, event) => ok(200, { alarm_rule: await getAlarmRule(registryDb(), callerOf(event), path.workspaceId, path.alarmRuleId) }),
    updateAlarmRule: async ({ path, body }, event) =>
      ok(200, { alarm_rule: await updateAlarmRule(alarmDeps(registryDb()), callerOf(event), path.workspaceId, path.alarmRuleId, body) }),
    deleteAlarmRule: async ({ path }, event) =>
      ok(200, { alarm_rule: await deleteAlarmRule(alarmDeps(registryDb()), callerOf(event), path.workspaceId, path.alarmRuleId) }),
    listAlarms: async ({ path, query }, event) => streamList(event, 'alarms', await listAlarms(registryDb(), callerOf(event), path.workspaceId, query)),
    acknowledgeAlarm: async ({ path, body }, event) =>
      ok(200, { alarm: await acknowledgeAlarm(alarmDeps(registryDb()), callerOf(event), path.workspaceId, path.alarmId, body) }),
  },
  apiRequestHooks(registryDb()),
);
