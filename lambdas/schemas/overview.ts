import * as z from 'zod';
import { DateSchema, FleetIdSchema, WorkspaceIdSchema } from './common';
import { RolloutSchema } from './rollout';

/** The default and bounds of the overview's silence threshold, in seconds. */
export const SILENT_AFTER_DEFAULT = 900;
export const SILENT_AFTER_MIN = 60;
export const SILENT_AFTER_MAX = 30 * 86_400;

export const OverviewQuerySchema = z.strictObject({
  silent_after: z
    .string()
    .regex(/^\d{1,8}$/, `Must be an integer from ${SILENT_AFTER_MIN} to ${SILENT_AFTER_MAX}.`)
    .transform(Number)
    .pipe(z.number().min(SILENT_AFTER_MIN, `Must be at least ${SILENT_AFTER_MIN}.`).max(SILENT_AFTER_MAX, `Must be at most ${SILENT_AFTER_MAX}.`))
    .optional()
    .meta({
      type: 'integer',
      minimum: SILENT_AFTER_MIN,
      maximum: SILENT_AFTER_MAX,
      description: `Seconds without a data point after which a device counts as silent (default ${SILENT_AFTER_DEFAULT})`,
    }),
});

/** How many desired keys the overview names under `non_compliant`. */
export const NON_COMPLIANT_KEYS_MAX = 20;

const count = (description: string) => z.int().nonnegative().meta({ description });

/** How many devices run each firmware version (`unknown`: no version known). */
const FirmwareSpreadSchema = z.array(z.object({ version: z.string(), devices: count('Devices that run it') }));

export const OverviewCountsSchema = z.object({
  devices: count('Devices'),
  online: count('Devices connected over MQTT now'),
  offline: count('Devices not connected (devices − online)'),
  silent: count('Devices, connected or not, whose newest data point arrived longer ago than `silent_after` (never sent one: not counted)'),
  never_seen: count('Devices that never sent a data point'),
  firmware: FirmwareSpreadSchema.meta({ description: 'Firmware versions, most devices first; `unknown` counts devices with none known' }),
});

export const OverviewSchema = z
  .object({
    workspace_id: WorkspaceIdSchema,
    at: DateSchema.meta({ description: 'When it was counted' }),
    silent_after: z.int().meta({ description: 'The silence threshold used, in seconds' }),
    totals: OverviewCountsSchema,
    fleets: z.array(OverviewCountsSchema.extend({ fleet_id: FleetIdSchema, fleet_name: z.string() })).meta({ description: 'Per fleet, in fleet ID order' }),
    rollouts: z.array(RolloutSchema).meta({ description: 'Rollouts not ended (in progress or paused), newest first, with their counts' }),
    webhooks: z
      .array(
        z.object({
          id: z.string(),
          name: z.string(),
          enabled: z.boolean(),
          consecutive_failures: count('Failed deliveries since the last success'),
          last_error: z.string().nullable(),
          last_error_at: DateSchema.nullable(),
          last_delivery_at: DateSchema.nullable(),
        }),
      )
      .meta({ description: 'Integrations whose last delivery failed (consecutive_failures > 0), most failures first' }),
    non_compliant: z
      .object({
        devices: count('Devices whose reported state differs from the desired one on at least one key (a non-empty `delta`)'),
        keys: z
          .array(z.object({ key: z.string(), devices: count('Devices whose reported value of the key differs from the desired one') }))
          .meta({ description: `The desired keys not yet applied, most devices first (at most ${NON_COMPLIANT_KEYS_MAX})` }),
      })
      .meta({ description: 'Devices not yet compliant with their desired state (fleet-state.md §3)' }),
    open_alarms: z
      .object({
        critical: count('Alarms not closed (open or acknowledged) of critical severity'),
        major: count('… of major severity'),
        minor: count('… of minor severity'),
        warning: count('… of warning severity'),
        total: count('Alarms not closed, every severity'),
      })
      .meta({
        description:
          'The alarms not closed (open or acknowledged, fleet-state.md §4) by severity, counted as they open and close (one read of 16 counter items, not of the alarms)',
      }),
  })
  .meta({ id: 'Overview' });
export type Overview = z.infer<typeof OverviewSchema>;
export type OverviewCounts = z.infer<typeof OverviewCountsSchema>;

export const OverviewResponseSchema = z.object({ overview: OverviewSchema });
