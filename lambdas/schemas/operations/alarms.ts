import {
  AcknowledgeAlarmBodySchema,
  AlarmListQuerySchema,
  AlarmListResponseSchema,
  AlarmPathSchema,
  AlarmResponseSchema,
  AlarmRuleListResponseSchema,
  AlarmRulePathSchema,
  AlarmRuleResponseSchema,
  CreateAlarmRuleBodySchema,
  UpdateAlarmRuleBodySchema,
} from '../alarms';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `alarms` handler's operations: alarm rules and their alarms (spec/fleet-state.md §4). */
export const ALARM_OPERATIONS = {
  listAlarmRules: { path: WorkspacePathSchema, query: PageQuerySchema, response: AlarmRuleListResponseSchema },
  createAlarmRule: {
    path: WorkspacePathSchema,
    body: CreateAlarmRuleBodySchema,
    response: AlarmRuleResponseSchema,
    status: 201,
    quota: 'The workspace holds its limit of alarm rules (limits.alarm_rules)',
  },
  getAlarmRule: { path: AlarmRulePathSchema, response: AlarmRuleResponseSchema },
  updateAlarmRule: {
    path: AlarmRulePathSchema,
    body: UpdateAlarmRuleBodySchema,
    response: AlarmRuleResponseSchema,
    conflict: 'The rule changed meanwhile: read it again and retry',
  },
  deleteAlarmRule: { path: AlarmRulePathSchema, response: AlarmRuleResponseSchema, conflict: 'The rule changed meanwhile: retry' },
  listAlarms: { path: WorkspacePathSchema, query: AlarmListQuerySchema, response: AlarmListResponseSchema },
  acknowledgeAlarm: {
    path: AlarmPathSchema,
    body: AcknowledgeAlarmBodySchema,
    response: AlarmResponseSchema,
    conflict: 'The alarm is closed',
  },
} satisfies Operations;
