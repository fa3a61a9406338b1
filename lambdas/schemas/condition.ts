import * as z from 'zod';
import { DateSchema, DeviceIdSchema, FleetIdSchema, TokenSchema } from './common';
import { ConditionPayloadSchema, DeviceTimestampSchema, TagSchema } from './device-api';
import { NextSchema, PageQueryShape } from './list';

/** Longest condition uuid a device may give (its own identifier, as ZDM's agents make them). */
export const CONDITION_UUID_MAX = 128;
/** Largest `min_duration_seconds` a list takes: a year. */
export const CONDITION_MIN_DURATION_MAX = 366 * 86_400;

export const CONDITION_STATUSES = ['open', 'closed'] as const;

const ConditionUuidSchema = z
  .string()
  .min(1, 'Must not be empty.')
  .max(CONDITION_UUID_MAX, `Must be at most ${CONDITION_UUID_MAX} characters.`)
  .meta({ description: `The device’s own identifier of the condition, 1 to ${CONDITION_UUID_MAX} characters` });

/** A condition as the API answers it (spec/fleet-state.md §4). */
export const ConditionSchema = z
  .object({
    uuid: z.string().meta({ description: 'The device’s own identifier of the condition' }),
    device_id: DeviceIdSchema,
    fleet_id: FleetIdSchema.meta({ description: 'The device’s fleet when the condition opened' }),
    tag: z.string().meta({ description: 'What the condition is about (`overheat`, `door`, …)' }),
    status: z.enum(CONDITION_STATUSES),
    payload: z.unknown().meta({ description: 'What the device said when it opened the condition (null when nothing)' }),
    finish_payload: z.unknown().meta({ description: 'What the device said when it closed the condition (null while open or when nothing)' }),
    start: DateSchema.meta({ description: 'When the condition opened (the device’s time, or the arrival when it gave none)' }),
    finish: DateSchema.nullable().meta({ description: 'When it closed; null while open' }),
    duration_seconds: z.number().nullable().meta({ description: 'Seconds from start to finish (milliseconds as decimals); null while open' }),
  })
  .meta({ id: 'Condition' });
export type Condition = z.infer<typeof ConditionSchema>;

/** `GET /workspaces/{ws}/conditions`: ZDM's filters, each narrowing the list, and the paging of every list. */
export const ConditionsQuerySchema = z.strictObject({
  ...PageQueryShape,
  tag: TokenSchema.optional().meta({ description: 'Only conditions with this tag' }),
  device: DeviceIdSchema.optional().meta({ description: 'Only the conditions of this device' }),
  status: z.enum(CONDITION_STATUSES).optional().meta({ description: 'Only open, or only closed, conditions' }),
  min_duration_seconds: z
    .string()
    .regex(/^\d{1,8}$/, `Must be an integer from 0 to ${CONDITION_MIN_DURATION_MAX}.`)
    .transform(Number)
    .pipe(z.number().max(CONDITION_MIN_DURATION_MAX, `Must be at most ${CONDITION_MIN_DURATION_MAX}.`))
    .optional()
    .meta({
      type: 'integer',
      minimum: 0,
      maximum: CONDITION_MIN_DURATION_MAX,
      description: 'Only conditions that lasted at least this many seconds: closed ones by their duration, open ones by the time since they opened',
    }),
  start: DateSchema.optional().meta({ description: 'RFC 3339 UTC: only conditions that opened at or after it' }),
  end: DateSchema.optional().meta({ description: 'RFC 3339 UTC: only conditions that opened before it' }),
});
export type ConditionsQuery = z.infer<typeof ConditionsQuerySchema>;

export const ConditionsResponseSchema = z.object({ conditions: z.array(ConditionSchema), next: NextSchema });

/** A device opens a condition (HTTPS twin of the MQTT `condition` message's opening). */
export const OpenConditionBodySchema = z
  .strictObject({
    uuid: ConditionUuidSchema,
    tag: TagSchema,
    payload: ConditionPayloadSchema,
    start: DeviceTimestampSchema.optional().meta({ description: 'When it opened; the arrival when omitted' }),
  })
  .meta({ id: 'OpenCondition' });

/** A device closes a condition it opened. */
export const CloseConditionBodySchema = z
  .strictObject({
    uuid: ConditionUuidSchema,
    finish_payload: ConditionPayloadSchema,
    finish: DeviceTimestampSchema.optional().meta({ description: 'When it closed; the arrival when omitted' }),
  })
  .meta({ id: 'CloseCondition' });

/** `POST /device/conditions`: an opening (with `tag`) or a closing (without). */
export const DeviceConditionBodySchema = z.union([OpenConditionBodySchema, CloseConditionBodySchema]).meta({ id: 'DeviceCondition' });
export type DeviceConditionBody = z.infer<typeof DeviceConditionBodySchema>;

export const ConditionResponseSchema = z.object({ condition: ConditionSchema });
