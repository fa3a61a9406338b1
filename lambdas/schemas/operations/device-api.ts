import {
  DeviceJobResultPathSchema,
  DeviceStatusSchema,
  FotaResultBodySchema,
  JobResultBodySchema,
  PublishDataBodySchema,
  PublishedResponseSchema,
  ReportEventsBodySchema,
  ReportedResponseSchema,
} from '../device-api';
import { FotaResponseSchema } from '../fota';
import { ConditionResponseSchema, DeviceConditionBodySchema } from '../condition';
import { DeviceSideStateResponseSchema, ReportDeviceStateBodySchema } from '../state';
import { JobResponseSchema } from '../job';
import type { Operations } from '../operation';

// The status and the results are the HTTPS twins of a device's j/up messages, and count as such.
const UP_MESSAGES = 'The device has sent its limit of messages (limits.up_messages_per_device_per_day) this UTC day (Retry-After: the seconds to midnight UTC)';

/** The `device-api` handler's operations (device token). */
export const DEVICE_API_OPERATIONS = {
  publishData: {
    body: PublishDataBodySchema,
    response: PublishedResponseSchema,
    status: 202,
    quota:
      'Every point of the request is past the device’s points_per_device_per_day for this UTC day (Retry-After: the seconds to midnight UTC); some of them only: 202 with `refused`',
  },
  reportDeviceEvents: {
    body: ReportEventsBodySchema,
    response: ReportedResponseSchema,
    status: 202,
    quota:
      'Every event of the request is past the device’s events_per_device_per_day for this UTC day (Retry-After: the seconds to midnight UTC); some of them only: 202 with `refused`',
  },
  getDeviceStatus: { response: DeviceStatusSchema, quota: UP_MESSAGES },
  // The HTTPS twins of #status's state and of a #state report (spec/fleet-state.md §3).
  getDeviceSideState: { response: DeviceSideStateResponseSchema, quota: UP_MESSAGES },
  reportDeviceState: { body: ReportDeviceStateBodySchema, response: DeviceSideStateResponseSchema, quota: UP_MESSAGES },
  reportJobResult: {
    path: DeviceJobResultPathSchema,
    body: JobResultBodySchema,
    response: JobResponseSchema,
    conflict: 'The job already ended with another result, or is still queued in its rollout (not yet released)',
    notFound: 'The device has no such job',
    quota: UP_MESSAGES,
  },
  // The HTTPS twin of the MQTT `condition` message (spec/fleet-state.md §4).
  reportCondition: {
    body: DeviceConditionBodySchema,
    response: ConditionResponseSchema,
    notFound: 'The device no longer exists, or a closing names a condition it never opened (or closed more than 30 days ago)',
    conflict: 'A closing met the same uuid opened again (at another start) meanwhile: nothing written; send it again',
    quota: UP_MESSAGES,
  },
  reportFotaResult: {
    body: FotaResultBodySchema,
    response: FotaResponseSchema,
    conflict: 'The report names another firmware than the scheduled one, or another outcome for an ended FOTA, or the FOTA is still queued in its rollout',
    notFound: 'The device has no FOTA scheduled',
    quota: UP_MESSAGES,
  },
} satisfies Operations;
