import * as z from 'zod';
import { JSON_MAX_DEPTH, JSON_RULES } from '../shared/json';
import { StatusStateSchema } from './state';
import { DateSchema, DescriptionSchema, TokenSchema, PathTokenSchema, isWithinJsonDepth } from './common';
import { EventTypeSchema } from './forward';
import { FotaSchema } from './fota';
import { JobObjectSchema, JobSchema } from './job';

/**
 * Largest data point payload, as serialized JSON. Timestream takes records of at most 2 KB,
 * dimensions (workspace, device, tag) and the other measures included: 1.5 KB of payload leaves
 * room for them, so that a point accepted here fits either time-series backend.
 */
export const DATA_PAYLOAD_MAX_BYTES = 1536;
/** Most data points in one publish request (the body must also stay within 64 KB). */
export const DATA_BATCH_MAX = 100;
/** Largest device event payload, as serialized JSON. */
export const EVENT_PAYLOAD_MAX_BYTES = 8 * 1024;
/** Most events in one report. */
export const EVENT_BATCH_MAX = 50;
/**
 * Largest payload of a condition a device opens or closes over MQTT (`payload`, `payloadf`), as
 * serialized JSON: an event's, since an open condition is kept on the registry (one item each,
 * far below DynamoDB's 400 KB) and answered in `#conditions`.
 */
export const CONDITION_PAYLOAD_MAX_BYTES = EVENT_PAYLOAD_MAX_BYTES;
/** Timestream refuses points more than 15 minutes in the future; so does the front door, for every backend. */
export const FUTURE_TOLERANCE_MS = 15 * 60 * 1000;

/** The events a device reports itself; the service emits the others (authentication, data, job, fota, status, …). */
export const DEVICE_EVENT_TYPES = [
  'manifest',
  'cellular_info',
  'gnss_info',
  'os_info',
  'stats_info',
  'private_strong',
  'private_weak',
  'zfs',
] as const satisfies ReadonlyArray<z.infer<typeof EventTypeSchema>>;

// A parsed JSON body holds only JSON values, so any value but a missing one is valid JSON.
const jsonOfAtMost = (bytes: number) =>
  z
    .unknown()
    .refine((value) => value !== undefined, { message: 'Required.', abort: true })
    .refine(isWithinJsonDepth, { message: JSON_RULES.depth(JSON_MAX_DEPTH), abort: true })
    .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= bytes, `Must be at most ${bytes} bytes as JSON.`)
    .meta({ description: `Any JSON value, at most ${bytes} bytes serialized (UTF-8) and ${JSON_MAX_DEPTH} levels deep` });

/** A device timestamp: RFC 3339 with or without an offset; stored in UTC with milliseconds. */
export const DeviceTimestampSchema = z.iso
  .datetime({ offset: true })
  // What JSON Schema can say of "1970 or later" (a pattern on the year); the refinement below is exact.
  .regex(/^(?:19[7-9]\d|[2-9]\d{3})-/, 'Must be 1970 or later.')
  .refine((date) => Date.parse(date) <= Date.now() + FUTURE_TOLERANCE_MS, 'Must not be more than 15 minutes in the future.')
  // Timestream keeps time as milliseconds since the epoch
  .refine((date) => Date.parse(date) >= 0, 'Must be 1970 or later.')
  .transform((date) => new Date(date).toISOString())
  .meta({ description: 'RFC 3339 date, from 1970 to 15 minutes in the future', example: '2021-07-08T14:21:15.915Z' });

/** An array of 1 to `max` items, as the publish and event routes take them. */
const batchOf = <S extends z.ZodType>(item: S, max: number, noun: string) =>
  z.array(item).min(1, `Must hold at least one ${noun}.`).max(max, `Must hold at most ${max} ${noun}s.`);

export const TagSchema = TokenSchema.meta({ description: '1 to 64 letters, digits, "_", "." or "-"', example: 'weather' });

/** One data point as a device publishes it. */
export const DataPointInputSchema = z
  .strictObject({
    tag: TagSchema,
    payload: jsonOfAtMost(DATA_PAYLOAD_MAX_BYTES),
    timestamp_device: DeviceTimestampSchema.optional().meta({ description: 'When the device produced the point; arrival time when omitted' }),
  })
  .meta({ id: 'DataPointInput' });
export type DataPointInput = z.infer<typeof DataPointInputSchema>;

export const DataPointBatchSchema = batchOf(DataPointInputSchema, DATA_BATCH_MAX, 'data point');

/** What the publish route reads: one data point, or an array of them. */
export const PublishDataBodySchema = z.union([DataPointInputSchema, DataPointBatchSchema]).meta({ id: 'PublishData' });

export const AcceptedResponseSchema = z
  .object({
    accepted: z.number().int().meta({ description: 'Data points or events queued' }),
    timestamp_in: DateSchema.meta({ description: 'Arrival time, the timestamp_in of the data points' }),
  })
  .meta({ id: 'Accepted' });

/** An answer of the v3 fields and how many of the request the device's daily quota refused (an addition). */
const acceptedAndRefused = (id: string, refused: string) =>
  AcceptedResponseSchema.extend({ refused: z.number().int().min(0).meta({ description: refused }) }).meta({ id });

/** The events route's answer. */
export const ReportedResponseSchema = acceptedAndRefused(
  'Reported',
  'Events not forwarded: past the device’s events_per_device_per_day for this UTC day (the last ones of the request). 0 when none',
);

/** The publish route's answer. */
export const PublishedResponseSchema = acceptedAndRefused(
  'Published',
  'Data points not stored: past the device’s points_per_device_per_day for this UTC day (the last ones of the request). 0 when none',
);

/** A condition's optional payload (MQTT `condition` messages): any JSON value of at most CONDITION_PAYLOAD_MAX_BYTES. */
export const ConditionPayloadSchema = jsonOfAtMost(CONDITION_PAYLOAD_MAX_BYTES).optional();

/** One event as a device reports it. */
export const DeviceEventInputSchema = z
  .strictObject({
    type: z.enum(DEVICE_EVENT_TYPES),
    payload: jsonOfAtMost(EVENT_PAYLOAD_MAX_BYTES),
    ts: DeviceTimestampSchema.optional().meta({ description: 'When the event occurred; arrival time when omitted' }),
  })
  .meta({ id: 'DeviceEventInput' });
export type DeviceEventInput = z.infer<typeof DeviceEventInputSchema>;

export const DeviceEventBatchSchema = batchOf(DeviceEventInputSchema, EVENT_BATCH_MAX, 'event');

/** What the event route reads: one event, or an array of them. */
export const ReportEventsBodySchema = z.union([DeviceEventInputSchema, DeviceEventBatchSchema]).meta({ id: 'ReportEvents' });

/**
 * A pending FOTA's value as the device gets it: the scheduled firmware and, when the version was
 * registered and its image uploaded (operations.md §3), how to download it. Without an image it is
 * the v3 value.
 */
const DeviceFotaValueSchema = FotaSchema.shape.value.extend({
  fw_version: z.string().optional().meta({ description: 'The version again, under the name device agents read (with a download only)' }),
  url: z.string().optional().meta({ description: 'A presigned S3 GET of the image, minted for this answer and valid for an hour' }),
  sha256: z.string().optional().meta({ description: 'SHA-256 of the image, 64 lowercase hex digits' }),
  size: z.int().optional().meta({ description: 'Bytes of the image' }),
  expires_at: DateSchema.optional().meta({ description: 'When the URL stops working' }),
});

/** What a device has to do: its pending jobs and its pending firmware update. */
export const DeviceStatusSchema = z
  .object({
    jobs: z.array(JobSchema.pick({ name: true, value: true, scheduled_at: true })),
    fota: FotaSchema.pick({ scheduled_at: true }).extend({ value: DeviceFotaValueSchema }).nullable().meta({ description: 'The pending FOTA, or null' }),
    state: StatusStateSchema.meta({ description: 'The device’s desired state and its version (additive field; spec/fleet-state.md §3)' }),
  })
  .meta({ id: 'DeviceStatus' });
export type DeviceStatus = z.infer<typeof DeviceStatusSchema>;

export const DeviceJobResultPathSchema = z.strictObject({ jobName: PathTokenSchema });

/** A job's result; an object with a top-level `error` key (the device clients' convention) makes the job `failed`, any other `done`. */
export const JobResultBodySchema = z
  .strictObject({ result: JobObjectSchema.meta({ description: 'What the job returned ({} when omitted); with a top-level `error` key the job is failed' }) })
  .meta({ id: 'JobResult' });

/** What a device may report of its FOTA: progress (`in_progress`, any number of times), then its outcome. */
export const FOTA_OUTCOMES = ['in_progress', 'done', 'failed'] as const;

export const FotaResultBodySchema = z
  .strictObject({
    status: z.enum(FOTA_OUTCOMES).meta({ description: 'in_progress (downloading, installing: may be sent again with a new message), then done or failed' }),
    firmware_id: TokenSchema.optional().meta({ description: 'When given, must be the scheduled firmware' }),
    firmware_version: TokenSchema.optional().meta({ description: 'When given, must be the scheduled version' }),
    message: DescriptionSchema.optional().meta({ description: 'Progress, why it failed, or other detail; kept on the FOTA and forwarded in the fota event' }),
  })
  .meta({ id: 'FotaResult' });
export type FotaResultBody = z.infer<typeof FotaResultBodySchema>;

/**
 * What the device API puts on the ingest queue: the data points of one request, with what the
 * ingest Lambda needs to store and forward them, and nothing it would have to look up.
 */
export const IngestDataMessageSchema = z
  .object({
    kind: z.literal('data'),
    /**
     * The workspace's account, where the ingest reads the workspace's data retention (absent in
     * messages from before retention: the ingest finds it through the device).
     */
    account_id: z.string().optional(),
    workspace_id: z.string(),
    fleet_id: z.string(),
    device_id: z.string(),
    device_name: z.string(),
    timestamp_in: z.string(),
    /**
     * Unique to the request (absent in messages from before cloud stamps): with a point's place in
     * the request, its origin, which keeps apart two points that were given the same cloud stamp.
     */
    origin: z.string().optional(),
    /** The request's points that its device's daily quota let in; none when it refused them all. */
    points: z.array(z.object({ tag: z.string(), timestamp_device: z.string(), payload: z.unknown() })),
    /** The request's points that the quota refused (absent in messages from before quotas): counted, never stored. */
    refused: z.number().int().min(0).optional(),
  })
  .refine((message) => message.points.length > 0 || (message.refused ?? 0) > 0, {
    message: 'A data message holds points, or counts refused ones.',
    path: ['points'],
  });

/** The events of one report on the ingest queue. */
export const IngestEventsMessageSchema = z
  .object({
    kind: z.literal('events'),
    workspace_id: z.string(),
    fleet_id: z.string(),
    device_id: z.string(),
    /** When the report arrived: the UTC day its events count in (absent in messages from before event quotas: when it is read). */
    timestamp_in: z.string().optional(),
    /** The report's events that its device's daily quota let in; none when it refused them all. */
    events: z.array(z.object({ type: EventTypeSchema, ts: z.string(), payload: z.unknown() })),
    /** The report's events that the quota refused (absent in messages from before event quotas): counted, never forwarded. */
    refused: z.number().int().min(0).optional(),
  })
  .refine((message) => message.events.length > 0 || (message.refused ?? 0) > 0, {
    message: 'An events message holds events, or counts refused ones.',
    path: ['events'],
  });

export const IngestMessageSchema = z.discriminatedUnion('kind', [IngestDataMessageSchema, IngestEventsMessageSchema]);
export type IngestMessage = z.infer<typeof IngestMessageSchema>;
export type IngestDataMessage = z.infer<typeof IngestDataMessageSchema>;
export type IngestEventsMessage = z.infer<typeof IngestEventsMessageSchema>;
