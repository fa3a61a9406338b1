import * as z from 'zod';

/** Event types of the interface (spec, Events). */
export const EVENT_TYPES = [
  'authentication',
  'authorization',
  'cellular_info',
  'connection',
  'data',
  'disconnection',
  'fota',
  'gnss_info',
  'job',
  'manifest',
  'os_info',
  'private_strong',
  'private_weak',
  'reset',
  'stats_info',
  'status',
  'timestamp',
  'zfs',
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

/**
 * A data point on its way to webhooks (one forward-queue message). The forwarder adds the
 * entry `id` when it batches.
 */
export const DataMessageSchema = z.object({
  kind: z.literal('data'),
  workspace_id: z.string(),
  fleet_id: z.string(),
  device_id: z.string(),
  /** Deprecated in the interface, still sent. */
  device_name: z.string(),
  timestamp_device: z.string(),
  timestamp_in: z.string(),
  tag: z.string(),
  payload: z.unknown(),
});

/** A device or service event on its way to webhooks (one forward-queue message). */
export const EventMessageSchema = z.object({
  kind: z.literal('event'),
  /** RFC 3339 with fractional seconds. */
  ts: z.string(),
  workspace_id: z.string(),
  fleet_id: z.string(),
  device_id: z.string(),
  type: EventTypeSchema,
  direction: z.enum(['d2c', 'c2d']),
  payload: z.unknown(),
});

export const ForwardMessageSchema = z.discriminatedUnion('kind', [DataMessageSchema, EventMessageSchema]);
export type DataMessage = z.infer<typeof DataMessageSchema>;
export type EventMessage = z.infer<typeof EventMessageSchema>;
export type ForwardMessage = z.infer<typeof ForwardMessageSchema>;

/**
 * Many data points, or many events, of one workspace in one forward-queue message: what the
 * producers send since packing (README, "Ingest"), so that a message carries hundreds of entries
 * rather than one. The forwarder also reads single messages (queued or in the DLQ from before).
 */
export const ForwardPackSchema = z.object({
  kind: z.literal('pack'),
  entries: z.array(ForwardMessageSchema).min(1),
});
export type ForwardPack = z.infer<typeof ForwardPackSchema>;

/** Any forward-queue message: a pack, or a single data point or event. */
export const ForwardQueueMessageSchema = z.union([ForwardPackSchema, ForwardMessageSchema]);
