import * as z from 'zod';

/** Event types of the interface (spec, Events). */
export const EVENT_TYPES = [
  'alarm',
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
 * A data point on its way to webhooks, as the producers hand it to `packForward` (and as single
 * forward-queue messages from before packing held it). Its webhook entry is these fields without
 * `kind`; the forwarder adds the entry `id` when it batches.
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

/** A device or service event on its way to webhooks (as a data point is, above). */
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
 * The first line of a forward-queue message as the producers send it (domain/forward-pack.ts): one
 * workspace's data points, or its events, already rendered as webhook entries, one per line after
 * this header. `tags` holds each data point's tag, in order, for the integrations' tag filters.
 */
export const ForwardEntriesHeaderSchema = z.object({
  kind: z.literal('entries'),
  workspace_id: z.string(),
  of: z.enum(['data', 'event']),
  count: z.number().int().min(1),
  tags: z.array(z.string()).optional(),
});
export type ForwardEntriesHeader = z.infer<typeof ForwardEntriesHeaderSchema>;

/**
 * Many data points, or many events, of one workspace in one JSON forward-queue message: what the
 * producers sent from packing until rendered entries (docs/storage.md, "Ingest"). The forwarder still reads
 * these and single messages (queued or in the DLQ from before).
 */
export const ForwardPackSchema = z.object({
  kind: z.literal('pack'),
  entries: z.array(ForwardMessageSchema).min(1),
});
export type ForwardPack = z.infer<typeof ForwardPackSchema>;

/** A JSON forward-queue message from before rendered entries: a pack, or a single data point or event. */
export const ForwardQueueMessageSchema = z.union([ForwardPackSchema, ForwardMessageSchema]);
