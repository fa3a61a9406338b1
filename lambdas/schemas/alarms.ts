import * as z from 'zod';
import { DateSchema, DeviceIdRefSchema, FleetIdRefSchema, idRefSchema, idSchema, NameSchema, WorkspaceIdRefSchema } from './common';
import { TagSchema } from './device-api';
import { GroupIdRefSchema } from './group';
import { NextSchema, PageQueryShape } from './list';
import { QueryTextSchema } from './tags';
import { FIELD_PATH } from './timeseries';

/**
 * An e-mail address as SES takes it: zod's default, but with each domain label starting and ending
 * with a letter or digit (zod's allows `a@b-.com`, which no domain is and JSON Schema's `email`
 * format refuses).
 */
const EMAIL = /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

/** The kinds of alarm rules (spec/fleet-state.md §4). */
export const ALARM_KINDS = ['condition', 'offline', 'silent', 'threshold'] as const;
export type AlarmKind = (typeof ALARM_KINDS)[number];

/** Severities, the gravest first (the console sorts by this order). */
export const ALARM_SEVERITIES = ['critical', 'major', 'minor', 'warning'] as const;
export type AlarmSeverity = (typeof ALARM_SEVERITIES)[number];

export const THRESHOLD_OPS = ['>', '>=', '<', '<='] as const;
export type ThresholdOp = (typeof THRESHOLD_OPS)[number];

export const ALARM_STATUSES = ['open', 'acknowledged', 'closed'] as const;
export type AlarmStatus = (typeof ALARM_STATUSES)[number];

/** Longest a rule's condition must hold: a day. */
export const FOR_SECONDS_MAX = 86_400;
/** Shortest `for_seconds` of the kinds a timer sweep detects by the minute (`offline`, `silent`). */
export const FOR_SECONDS_MIN_TIMED = 60;
/** Most e-mail addresses a rule notifies, and most fleets its target names. */
export const ALARM_EMAILS_MAX = 20;
export const ALARM_TARGET_FLEETS_MAX = 100;
/** Longest acknowledgement note. */
export const ALARM_NOTE_MAX = 1024;

export const AlarmRuleIdSchema = idSchema('alr');
export const AlarmRuleIdRefSchema = idRefSchema('alr');
export const AlarmIdSchema = idSchema('alm');
export const AlarmIdRefSchema = idRefSchema('alm');

const KindSchema = z.enum(ALARM_KINDS, `Must be one of ${ALARM_KINDS.join(', ')}.`).meta({
  description:
    '`condition`: a condition (with `tag`) open for `for_seconds`; `offline`: disconnected for `for_seconds`; `silent`: no point (on `tag`) for `for_seconds`; `threshold`: every point on `tag` has `field` `op` `value` for `for_seconds`, until a point on the other side of `clear_value`',
});
const SeveritySchema = z.enum(ALARM_SEVERITIES, `Must be one of ${ALARM_SEVERITIES.join(', ')}.`);
const OpSchema = z.enum(THRESHOLD_OPS, `Must be one of ${THRESHOLD_OPS.join(', ')}.`);
const ForSecondsSchema = z
  .number()
  .int('Must be a whole number of seconds.')
  .min(0, 'Must be at least 0.')
  .max(FOR_SECONDS_MAX, `Must be at most ${FOR_SECONDS_MAX} (a day).`)
  .meta({
    description: `How long the rule's condition must hold before an alarm opens, 0–${FOR_SECONDS_MAX} s (at least ${FOR_SECONDS_MIN_TIMED} for offline and silent)`,
  });
const FieldSchema = z
  .string()
  .regex(FIELD_PATH, 'Must be a path of payload keys: up to 8 names of 1 to 64 letters, digits, "_" or "-", joined by dots (temp, env.temp).')
  .meta({ description: 'The numeric payload field a threshold rule compares, by its path of keys (`temp`, `env.temp`)', example: 'temp' });
const NumberSchema = z.number().meta({ description: 'A number' });

/** A rule's target: the devices of the named fleets (all when none) that match the group's query and `q`, all together. */
export const AlarmTargetSchema = z
  .strictObject({
    fleets: z.array(FleetIdRefSchema).max(ALARM_TARGET_FLEETS_MAX, `At most ${ALARM_TARGET_FLEETS_MAX} fleets.`).optional(),
    group: GroupIdRefSchema.optional(),
    q: QueryTextSchema.optional(),
  })
  .meta({ id: 'AlarmTargetInput', description: 'Which devices the rule watches (its parts AND together); omitted: every device of the workspace' });

export const AlarmNotifySchema = z
  .strictObject({
    emails: z
      .array(z.email({ pattern: EMAIL, error: 'Must be an e-mail address.' }).max(254, 'Must be at most 254 characters.'))
      .max(ALARM_EMAILS_MAX, `At most ${ALARM_EMAILS_MAX} addresses.`)
      .default([]),
    integrations: z.boolean().default(true).meta({ description: "Whether each transition is an `alarm` event to the workspace's integrations (default true)" }),
  })
  .meta({ id: 'AlarmNotifyInput', description: 'Who is told: e-mail on open and close, and the integrations on every transition' });

/** The fields of a rule a request may give (a create all, a change some). */
const ruleFields = {
  name: NameSchema,
  severity: SeveritySchema,
  target: AlarmTargetSchema.nullable(),
  tag: TagSchema.nullable(),
  field: FieldSchema.nullable(),
  op: OpSchema.nullable(),
  value: NumberSchema.nullable(),
  clear_value: NumberSchema.nullable().meta({ description: 'A threshold rule closes at a point on the other side of this (default `value`): hysteresis' }),
  for_seconds: ForSecondsSchema,
  notify: AlarmNotifySchema,
  enabled: z.boolean().meta({ description: 'A disabled rule watches nothing and closes its alarms' }),
};

export const CreateAlarmRuleBodySchema = z
  .strictObject({
    name: ruleFields.name,
    kind: KindSchema,
    severity: ruleFields.severity,
    target: ruleFields.target.optional(),
    tag: ruleFields.tag.optional(),
    field: ruleFields.field.optional(),
    op: ruleFields.op.optional(),
    value: ruleFields.value.optional(),
    clear_value: ruleFields.clear_value.optional(),
    for_seconds: ruleFields.for_seconds.default(0),
    notify: ruleFields.notify.optional(),
    enabled: ruleFields.enabled.default(true),
  })
  .meta({ id: 'CreateAlarmRule' });
export type CreateAlarmRuleBody = z.infer<typeof CreateAlarmRuleBodySchema>;

/** A change: any of the fields but `kind` (a rule of another kind is another rule); null clears an optional one. */
export const UpdateAlarmRuleBodySchema = z
  .strictObject(
    Object.fromEntries(Object.entries(ruleFields).map(([name, schema]) => [name, schema.optional()])) as {
      [K in keyof typeof ruleFields]: z.ZodOptional<(typeof ruleFields)[K]>;
    },
  )
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change.')
  .meta({ id: 'UpdateAlarmRule', minProperties: 1 });
export type UpdateAlarmRuleBody = z.infer<typeof UpdateAlarmRuleBodySchema>;

export const AlarmRuleSchema = z
  .object({
    id: AlarmRuleIdSchema,
    name: z.string(),
    kind: z.enum(ALARM_KINDS),
    severity: z.enum(ALARM_SEVERITIES),
    target: z.object({ fleets: z.array(z.string()), group: z.string().nullable(), q: z.string().nullable() }),
    tag: z.string().nullable(),
    field: z.string().nullable(),
    op: z.enum(THRESHOLD_OPS).nullable(),
    value: z.number().nullable(),
    clear_value: z.number().nullable(),
    for_seconds: z.number().int(),
    notify: z.object({ emails: z.array(z.string()), integrations: z.boolean() }),
    enabled: z.boolean(),
    created_at: DateSchema,
    updated_at: DateSchema,
    last_notification_error: z
      .object({ at: DateSchema, error: z.string(), email: z.string().nullable() })
      .nullable()
      .meta({ description: 'The last notification that could not be sent after its retries (null: none)' }),
  })
  .meta({ id: 'AlarmRule' });
export type AlarmRule = z.infer<typeof AlarmRuleSchema>;

export const AlarmSchema = z
  .object({
    id: AlarmIdSchema,
    rule_id: z.string(),
    rule_name: z.string(),
    kind: z.enum(ALARM_KINDS),
    severity: z.enum(ALARM_SEVERITIES),
    device_id: z.string(),
    fleet_id: z.string(),
    status: z.enum(ALARM_STATUSES),
    opened_at: DateSchema,
    acknowledged_at: DateSchema.nullable(),
    acknowledged_by: z.string().nullable().meta({ description: "The API key's or the console user's name" }),
    note: z.string().nullable().meta({ description: 'The note given with the acknowledgement' }),
    closed_at: DateSchema.nullable(),
    details: z.record(z.string(), z.unknown()).meta({ description: 'What opened (and closed) it: the value, the condition, the last time seen, …' }),
  })
  .meta({ id: 'Alarm' });
export type Alarm = z.infer<typeof AlarmSchema>;

export const AlarmRulePathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, alarmRuleId: AlarmRuleIdRefSchema });
export const AlarmPathSchema = z.strictObject({ workspaceId: WorkspaceIdRefSchema, alarmId: AlarmIdRefSchema });

export const AlarmListQuerySchema = z
  .strictObject({
    status: z.enum(ALARM_STATUSES, `Must be one of ${ALARM_STATUSES.join(', ')}.`).optional(),
    rule: AlarmRuleIdRefSchema.optional(),
    device: DeviceIdRefSchema.optional(),
    severity: SeveritySchema.optional(),
    start: DateSchema.optional().meta({ description: 'Only alarms opened at or after this time' }),
    end: DateSchema.optional().meta({ description: 'Only alarms opened before this time' }),
    ...PageQueryShape,
  })
  .refine((q) => q.start === undefined || q.end === undefined || q.start <= q.end, { message: 'Must not be after end.', path: ['start'] });
export type AlarmListQuery = z.infer<typeof AlarmListQuerySchema>;

export const AcknowledgeAlarmBodySchema = z
  .strictObject({ note: z.string().max(ALARM_NOTE_MAX, `Must be at most ${ALARM_NOTE_MAX} characters.`).optional() })
  .meta({ id: 'AcknowledgeAlarm' });
export type AcknowledgeAlarmBody = z.infer<typeof AcknowledgeAlarmBodySchema>;

export const AlarmRuleResponseSchema = z.object({ alarm_rule: AlarmRuleSchema });
export const AlarmRuleListResponseSchema = z.object({ alarm_rules: z.array(AlarmRuleSchema), next: NextSchema });
export const AlarmResponseSchema = z.object({ alarm: AlarmSchema });
export const AlarmListResponseSchema = z.object({ alarms: z.array(AlarmSchema), next: NextSchema });
