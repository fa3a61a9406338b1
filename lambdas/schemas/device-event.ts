import * as z from 'zod';
import { DeviceIdSchema, FleetIdSchema, WorkspaceIdSchema } from './common';

/** Most events one page of a device's event log holds. */
export const DEVICE_EVENTS_LIMIT_MAX = 200;
/** A page's size when the request names none. */
export const DEVICE_EVENTS_LIMIT_DEFAULT = 50;

/** `GET …/devices/{id}/events`: a page of the device's event log, newest first. */
export const DeviceEventsQuerySchema = z.strictObject({
  limit: z
    .string()
    .regex(/^\d{1,6}$/, `Must be an integer from 1 to ${DEVICE_EVENTS_LIMIT_MAX}.`)
    .transform(Number)
    .pipe(z.number().min(1, 'Must be at least 1.').max(DEVICE_EVENTS_LIMIT_MAX, `Must be at most ${DEVICE_EVENTS_LIMIT_MAX}.`))
    .optional()
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: DEVICE_EVENTS_LIMIT_MAX,
      description: `Integer from 1 to ${DEVICE_EVENTS_LIMIT_MAX}: at most this many events (default ${DEVICE_EVENTS_LIMIT_DEFAULT})`,
    }),
  before: z.iso.datetime().optional().meta({ description: 'RFC 3339 UTC: only events whose `ts` is before it (the `next` of the previous page)' }),
});
export type DeviceEventsQuery = z.infer<typeof DeviceEventsQuerySchema>;

/** One entry of a device's event log: an event as webhooks receive it (or a `condition` opened or closed), kept 30 days. */
export const DeviceEventSchema = z
  .object({
    ts: z.string().meta({ description: 'When it happened, RFC 3339 UTC (microseconds where the event has them)' }),
    type: z.string().meta({ description: 'The event type (`connection`, `disconnection`, `job`, `fota`, `status`, …), or `condition`' }),
    direction: z.enum(['d2c', 'c2d']),
    workspace_id: WorkspaceIdSchema,
    fleet_id: FleetIdSchema,
    device_id: DeviceIdSchema,
    payload: z.unknown().meta({ description: 'The event’s payload (`{"truncated": true, "size": n}` past 8 KB of JSON)' }),
  })
  .meta({ id: 'DeviceEvent' });
export type DeviceEvent = z.infer<typeof DeviceEventSchema>;

export const DeviceEventsResponseSchema = z.object({
  events: z.array(DeviceEventSchema),
  next: z.string().nullable().meta({ description: 'The `before` of the next (older) page, or null when this page is the last' }),
});
