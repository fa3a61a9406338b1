import * as z from 'zod';
import { FleetIdSchema } from './common';
import { FleetsQuerySchema } from './job';

/**
 * The query of a fleet-wide scheduling (jobs and FOTA on fleets): the fleets, and `dry_run`, which
 * asks how many devices the scheduling would target and writes nothing.
 */
export const FleetSchedulingQuerySchema = FleetsQuerySchema.extend({
  dry_run: z
    .string()
    .regex(/^(true|false)$/, 'Must be true or false.')
    .transform((value) => value === 'true')
    .optional()
    .meta({
      type: 'boolean',
      description:
        'true: check the request as the scheduling would (workspace, fleets, body, firmware) and answer how many devices it would target now, writing nothing (no rollout, no job, no quota counted)',
    }),
});

/** What a dry run answers: the devices the scheduling would target now, and the fleets it was asked for. */
export const DryRunSchema = z
  .object({
    dry_run: z.literal(true),
    targets: z.int().nonnegative().meta({ description: 'The devices in the chosen fleets now (every fleet of the workspace when none is named)' }),
    fleet_ids: z.array(FleetIdSchema).nullable().meta({ description: 'The fleets asked for; null: every fleet of the workspace' }),
  })
  .meta({ id: 'DryRun' });
export type DryRun = z.infer<typeof DryRunSchema>;
