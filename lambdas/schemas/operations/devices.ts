import { CreateDeviceBodySchema, DeviceListResponseSchema, DevicePathSchema, DeviceResponseSchema, UpdateDeviceBodySchema } from '../device';
import { FleetsQuerySchema } from '../job';
import { PageQueryShape } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `devices` handler's operations. */
export const DEVICE_OPERATIONS = {
  // ?fleet=…&fleet=…: only those fleets' devices, as jobs and FOTA on fleets name them; limit and cursor: a page.
  listDevices: { path: WorkspacePathSchema, query: FleetsQuerySchema.extend(PageQueryShape), response: DeviceListResponseSchema },
  createDevice: {
    path: WorkspacePathSchema,
    body: CreateDeviceBodySchema,
    response: DeviceResponseSchema,
    quota: 'The workspace holds its limit of devices (limits.devices)',
  },
  getDevice: { path: DevicePathSchema, response: DeviceResponseSchema },
  updateDevice: { path: DevicePathSchema, body: UpdateDeviceBodySchema, response: DeviceResponseSchema },
} satisfies Operations;
