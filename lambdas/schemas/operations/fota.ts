import { DeviceFotaPathSchema, FotaResponseSchema, ScheduleFleetFotaPathSchema, ScheduleFotaPathSchema } from '../fota';
import { FleetsQuerySchema } from '../job';
import type { Operations } from '../operation';

/** The `fota` handler's operations. */
export const FOTA_OPERATIONS = {
  getFota: { path: DeviceFotaPathSchema, response: FotaResponseSchema },
  scheduleFota: { path: ScheduleFotaPathSchema, response: FotaResponseSchema },
  scheduleFleetFota: { path: ScheduleFleetFotaPathSchema, query: FleetsQuerySchema, response: FotaResponseSchema },
} satisfies Operations;
