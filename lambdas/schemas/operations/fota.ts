import { DeviceFotaPathSchema, FotaResponseSchema, ScheduleFleetFotaPathSchema, ScheduleFotaPathSchema } from '../fota';
import { FleetsQuerySchema } from '../job';
import type { Operations } from '../operation';

// A version never registered is scheduled as in v3, without an artifact.
const NOT_READY = 'The firmware version is registered (POST …/firmwares/{firmwareId}/versions/{firmwareVersion}) and its image is not uploaded yet: nothing is scheduled';

/** The `fota` handler's operations. */
export const FOTA_OPERATIONS = {
  getFota: { path: DeviceFotaPathSchema, response: FotaResponseSchema },
  scheduleFota: { path: ScheduleFotaPathSchema, response: FotaResponseSchema, conflict: NOT_READY },
  scheduleFleetFota: { path: ScheduleFleetFotaPathSchema, query: FleetsQuerySchema, response: FotaResponseSchema, conflict: NOT_READY },
} satisfies Operations;
