import {
  CreateDeviceBodySchema,
  DeviceListResponseSchema,
  DevicePathSchema,
  DeviceResponseSchema,
  PatchDeviceBodySchema,
  UpdateDeviceBodySchema,
} from '../device';
import { QueryTextSchema } from '../tags';
import { DeleteDeviceQuerySchema } from '../device-deletion';
import { DeviceEventsQuerySchema, DeviceEventsResponseSchema } from '../device-event';
import { ConditionsQuerySchema, ConditionsResponseSchema } from '../condition';
import { FleetsQuerySchema } from '../job';
import { OverviewQuerySchema, OverviewResponseSchema } from '../overview';
import { PageQueryShape } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `devices` handler's operations. */
export const DEVICE_OPERATIONS = {
  // ?fleet=…&fleet=…: only those fleets' devices, as jobs and FOTA on fleets name them; q: those matching a query; limit and cursor: a page.
  listDevices: {
    path: WorkspacePathSchema,
    query: FleetsQuerySchema.extend(PageQueryShape).extend({ q: QueryTextSchema.optional() }),
    response: DeviceListResponseSchema,
  },
  createDevice: {
    path: WorkspacePathSchema,
    body: CreateDeviceBodySchema,
    response: DeviceResponseSchema,
    quota: 'The workspace holds its limit of devices (limits.devices)',
    conflict: 'The fleet is being deleted',
  },
  getDevice: { path: DevicePathSchema, response: DeviceResponseSchema },
  updateDevice: { path: DevicePathSchema, body: UpdateDeviceBodySchema, response: DeviceResponseSchema, conflict: 'The fleet is being deleted' },
  patchDevice: { path: DevicePathSchema, body: PatchDeviceBodySchema, response: DeviceResponseSchema, conflict: 'The fleet is being deleted' },
  // An addition to v3 (spec/fleet-state.md §5): the device as it was; ?purge=data: its data points go too.
  deleteDevice: { path: DevicePathSchema, query: DeleteDeviceQuerySchema, response: DeviceResponseSchema },
  // Additions to v3 (issue 33): a device's event log, newest first, and the workspace at a glance.
  listDeviceEvents: { path: DevicePathSchema, query: DeviceEventsQuerySchema, response: DeviceEventsResponseSchema },
  getOverview: { path: WorkspacePathSchema, query: OverviewQuerySchema, response: OverviewResponseSchema },
  // An addition to v3 (spec/fleet-state.md §4): the workspace's conditions, with ZDM's filters.
  listConditions: { path: WorkspacePathSchema, query: ConditionsQuerySchema, response: ConditionsResponseSchema },
} satisfies Operations;
