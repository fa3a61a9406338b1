import { CreateDeviceBodySchema, DeviceListResponseSchema, DevicePathSchema, DeviceResponseSchema, UpdateDeviceBodySchema } from '../device';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `devices` handler's operations. */
export const DEVICE_OPERATIONS = {
  listDevices: { path: WorkspacePathSchema, response: DeviceListResponseSchema },
  createDevice: { path: WorkspacePathSchema, body: CreateDeviceBodySchema, response: DeviceResponseSchema },
  getDevice: { path: DevicePathSchema, response: DeviceResponseSchema },
  updateDevice: { path: DevicePathSchema, body: UpdateDeviceBodySchema, response: DeviceResponseSchema },
} satisfies Operations;
