import {
  AcceptedResponseSchema,
  DeviceJobResultPathSchema,
  DeviceStatusSchema,
  FotaResultBodySchema,
  JobResultBodySchema,
  PublishDataBodySchema,
  PublishedResponseSchema,
  ReportEventsBodySchema,
} from '../device-api';
import { FotaResponseSchema } from '../fota';
import { JobResponseSchema } from '../job';
import type { Operations } from '../operation';

/** The `device-api` handler's operations (device token). */
export const DEVICE_API_OPERATIONS = {
  publishData: {
    body: PublishDataBodySchema,
    response: PublishedResponseSchema,
    status: 202,
    quota:
      'Every point of the request is past the device’s points_per_device_per_day for this UTC day (Retry-After: the seconds to midnight UTC); some of them only: 202 with `refused`',
  },
  reportDeviceEvents: { body: ReportEventsBodySchema, response: AcceptedResponseSchema, status: 202 },
  getDeviceStatus: { response: DeviceStatusSchema },
  reportJobResult: {
    path: DeviceJobResultPathSchema,
    body: JobResultBodySchema,
    response: JobResponseSchema,
    conflict: 'The job already ended with another result, or is still queued in its rollout (not yet released)',
    notFound: 'The device has no such job',
  },
  reportFotaResult: {
    body: FotaResultBodySchema,
    response: FotaResponseSchema,
    conflict: 'The report names another firmware than the scheduled one, or another outcome for an ended FOTA, or the FOTA is still queued in its rollout',
    notFound: 'The device has no FOTA scheduled',
  },
} satisfies Operations;
