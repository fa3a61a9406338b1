import { CreateFleetBodySchema, FleetListResponseSchema, FleetPathSchema, FleetResponseSchema } from '../fleet';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `fleets` handler's operations. */
export const FLEET_OPERATIONS = {
  listFleets: { path: WorkspacePathSchema, query: PageQuerySchema, response: FleetListResponseSchema },
  createFleet: {
    path: WorkspacePathSchema,
    body: CreateFleetBodySchema,
    response: FleetResponseSchema,
    quota: 'The workspace holds its limit of fleets (limits.fleets)',
  },
  getFleet: { path: FleetPathSchema, response: FleetResponseSchema },
  deleteFleet: {
    path: FleetPathSchema,
    response: FleetResponseSchema,
    conflict: 'The fleet holds devices (move or delete them first), is the workspace’s default fleet, or is being deleted by another request',
  },
} satisfies Operations;
