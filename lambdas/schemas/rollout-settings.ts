import * as z from 'zod';

/** Longest `timeout_seconds`: a week, as AWS IoT Jobs' in-progress timeout. */
export const TIMEOUT_SECONDS_MAX = 604_800;
/** Most devices a rollout may release in any 60 seconds. */
export const MAX_PER_MINUTE_MAX = 100_000;
/** Largest `min_finished` of an abort rule (far more devices than a workspace holds). */
export const MIN_FINISHED_MAX = 10_000_000;

/** How long a job or FOTA may stay unended after its release before the sweep ends it as `timed_out`. */
export const TimeoutSecondsSchema = z
  .number()
  .int('Must be a whole number of seconds.')
  .min(1, 'Must be at least 1.')
  .max(TIMEOUT_SECONDS_MAX, `Must be at most ${TIMEOUT_SECONDS_MAX} (a week).`)
  .meta({ description: `1 to ${TIMEOUT_SECONDS_MAX} seconds after its release; not ended by then, it is timed_out (within a minute)` });

const MaxPerMinuteSchema = z
  .number()
  .int('Must be a whole number of devices.')
  .min(1, 'Must be at least 1.')
  .max(MAX_PER_MINUTE_MAX, `Must be at most ${MAX_PER_MINUTE_MAX}.`)
  .meta({ description: `1 to ${MAX_PER_MINUTE_MAX}: at most this many devices released in any 60 seconds; the others wait as queued, in snapshot order` });

const ContinuousSchema = z.boolean().meta({
  description:
    'true: the rollout never completes by itself (in_progress until canceled or aborted), and every device that matches its target later (created in or moved into a targeted fleet, re-tagged, renamed) gets it within 60 s, once; false or omitted: the devices of the snapshot only',
});

export const RolloutAbortRuleSchema = z
  .strictObject({
    // More than 0, and no closer to it than 0.01: DynamoDB keeps no number below 1e-130 (5e-324 is a fine double).
    failure_percentage: z
      .number()
      .min(0.01, 'Must be more than 0 (at least 0.01).')
      .max(100, 'Must be at most 100.')
      .meta({ description: 'From 0.01 to 100: the share of ended devices that failed or timed out (in %) at which the rollout aborts' }),
    min_finished: z
      .number()
      .int('Must be a whole number of devices.')
      .min(1, 'Must be at least 1.')
      .max(MIN_FINISHED_MAX, `Must be at most ${MIN_FINISHED_MAX}.`)
      .meta({ description: 'At least 1: the rule applies once this many devices have ended (done, failed or timed_out)' }),
  })
  .meta({ id: 'RolloutAbortRule' });

/**
 * The settings of a fleet-wide scheduling's rollout, as a request gives them (`rollout` in the body);
 * each omitted setting is off.
 */
export const RolloutSettingsInputSchema = z
  .strictObject({
    max_per_minute: MaxPerMinuteSchema.optional(),
    timeout_seconds: TimeoutSecondsSchema.optional(),
    abort: RolloutAbortRuleSchema.optional().meta({ description: 'Abort (cancel every queued and pending device) once enough ended devices failed' }),
    continuous: ContinuousSchema.optional(),
  })
  .meta({ id: 'RolloutSettingsInput' });
export type RolloutSettingsInput = z.infer<typeof RolloutSettingsInputSchema>;

/** A rollout's settings as it answers them: every setting, null when off. */
export const RolloutSettingsSchema = z
  .object({
    max_per_minute: MaxPerMinuteSchema.nullable(),
    timeout_seconds: TimeoutSecondsSchema.nullable(),
    abort: RolloutAbortRuleSchema.nullable(),
    continuous: ContinuousSchema.meta({ description: 'true: a continuous rollout (never completes; devices that match later are added). Additive field' }),
  })
  .meta({ id: 'RolloutSettings' });
export type RolloutSettings = z.infer<typeof RolloutSettingsSchema>;
