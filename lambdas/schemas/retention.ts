import * as z from 'zod';

/** Where a re-stamp stopped: the shard of the workspace it was reading and the last item it re-stamped there. */
export const RestampCursorSchema = z.strictObject({
  shard: z.int().min(0),
  after: z.strictObject({ pk: z.string(), sk: z.string() }).optional(),
});
export type RestampCursor = z.infer<typeof RestampCursorSchema>;

/**
 * A message of the retention queue: re-stamp the expiry of a workspace's stored points after its
 * data retention changed (`version`, the workspace's retention version it was sent for), not
 * before `not_before` (ms since the epoch), resuming at `cursor` when an earlier run stopped.
 */
export const RestampJobSchema = z.strictObject({
  kind: z.literal('restamp'),
  account_id: z.string().min(1),
  workspace_id: z.string().min(1),
  version: z.int().min(1),
  not_before: z.number(),
  cursor: RestampCursorSchema.optional(),
});
export type RestampJob = z.infer<typeof RestampJobSchema>;

/**
 * A message of the retention queue: purge a deleted device's stored points (`device_id`), or
 * every point of a deleted workspace (none), not before `not_before` (ms since the epoch: points
 * the ingest was still writing have landed), resuming at `cursor` when an earlier run stopped.
 */
export const PurgeJobSchema = z.strictObject({
  kind: z.literal('purge'),
  account_id: z.string().min(1),
  workspace_id: z.string().min(1),
  device_id: z.string().min(1).optional(),
  not_before: z.number(),
  cursor: RestampCursorSchema.optional(),
});
export type PurgeJob = z.infer<typeof PurgeJobSchema>;

/** Any message of the retention queue. */
export const RetentionJobSchema = z.discriminatedUnion('kind', [RestampJobSchema, PurgeJobSchema]);
export type RetentionJob = z.infer<typeof RetentionJobSchema>;
