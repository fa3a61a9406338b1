import * as z from 'zod';
import { FleetIdSchema } from './common';
import { GroupIdRefSchema } from './group';
import { FleetsQuerySchema } from './job';

/** The 409 of a fleet-wide scheduling on a group (group=) deleted between its check and the rollout's creation. */
export const GROUP_GONE = 'The group (group=) was deleted while the rollout was being created: nothing is scheduled';

/** Longest `q` of a scheduling's target (a continuous rollout keeps it with its workspace's list of them). */
export const TARGET_QUERY_MAX = 2000;

/**
 * The query of a fleet-wide scheduling (jobs and FOTA on fleets): the fleets, and `dry_run`, which
 * asks how many devices the scheduling would target and writes nothing.
 */
export const FleetSchedulingQuerySchema = FleetsQuerySchema.extend({
  group: GroupIdRefSchema.optional().meta({
    description: 'A group of the workspace (its ID): only the devices of the chosen fleets that match its query as it reads now; not with q',
  }),
  q: z
    .string()
    .min(1, 'Must not be empty.')
    .max(TARGET_QUERY_MAX, `Must be at most ${TARGET_QUERY_MAX} characters.`)
    .optional()
    .meta({
      description: `A device query (the search language, at most ${TARGET_QUERY_MAX} characters): only the devices of the chosen fleets that match it; not with group`,
    }),
  dry_run: z
    .string()
    .regex(/^(true|false)$/, 'Must be true or false.')
    .transform((value) => value === 'true')
    .optional()
    .meta({
      type: 'boolean',
      description:
        'true: check the request as the scheduling would (workspace, fleets, target, body, firmware) and answer how many devices it would target now, writing nothing (no rollout, no job, no quota counted)',
    }),
}).superRefine((query, ctx) => {
  if (query.group !== undefined && query.q !== undefined) ctx.addIssue({ code: 'custom', path: ['group'], message: 'Give either group or q, not both.' });
});

/** What a dry run answers: the devices the scheduling would target now, and the fleets it was asked for. */
export const DryRunSchema = z
  .object({
    dry_run: z.literal(true),
    targets: z.int().nonnegative().meta({
      description: 'The devices in the chosen fleets now (every fleet of the workspace when none is named) that match the group or q, when one is given',
    }),
    fleet_ids: z.array(FleetIdSchema).nullable().meta({ description: 'The fleets asked for; null: every fleet of the workspace' }),
  })
  .meta({ id: 'DryRun' });
export type DryRun = z.infer<typeof DryRunSchema>;
