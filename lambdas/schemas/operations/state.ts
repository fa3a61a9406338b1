import { DevicePathSchema } from '../device';
import type { Operations } from '../operation';
import { DeviceStateResponseSchema, PatchDeviceStateBodySchema } from '../state';

/** The `state` handler's operations: devices' desired and reported state (spec/fleet-state.md §3). */
export const STATE_OPERATIONS = {
  getDeviceState: { path: DevicePathSchema, response: DeviceStateResponseSchema },
  patchDeviceState: {
    path: DevicePathSchema,
    body: PatchDeviceStateBodySchema,
    response: DeviceStateResponseSchema,
    conflict: '`version` is not the device state’s current version: nothing was written; read the state again',
  },
} satisfies Operations;
