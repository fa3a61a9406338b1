import * as z from 'zod';
import {
  DeviceFotaPathSchema,
  FotaResponseSchema,
  ScheduleFleetFotaBodySchema,
  ScheduleFleetFotaPathSchema,
  ScheduleFotaBodySchema,
  ScheduleFotaPathSchema,
} from '../fota';
import { DryRunSchema, FleetSchedulingQuerySchema, GROUP_GONE } from '../dry-run';
import { ROLLOUTS_PER_DAY, type Operations } from '../operation';

// A version never registered is scheduled as in v3, without an artifact.
const NOT_READY =
  'The firmware version is registered (POST …/firmwares/{firmwareId}/versions/{firmwareVersion}) and its image is not uploaded yet: nothing is scheduled';

/** The `fota` handler's operations. */
export const FOTA_OPERATIONS = {
  getFota: { path: DeviceFotaPathSchema, response: FotaResponseSchema },
  cancelFota: { path: DeviceFotaPathSchema, response: FotaResponseSchema, conflict: 'The FOTA already ended (done, failed, timed_out or canceled)' },
  scheduleFota: { path: ScheduleFotaPathSchema, body: ScheduleFotaBodySchema, response: FotaResponseSchema, conflict: NOT_READY },
  scheduleFleetFota: {
    path: ScheduleFleetFotaPathSchema,
    query: FleetSchedulingQuerySchema,
    body: ScheduleFleetFotaBodySchema,
    // `dry_run=true` answers the count instead (DryRun), having written nothing.
    response: z.union([FotaResponseSchema, DryRunSchema]),
    conflict: `${NOT_READY}; or ${GROUP_GONE.charAt(0).toLowerCase()}${GROUP_GONE.slice(1)}`,
    quota: ROLLOUTS_PER_DAY,
  },
} satisfies Operations;
