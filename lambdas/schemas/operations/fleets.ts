import { CreateFleetBodySchema, FleetListResponseSchema, FleetPathSchema, FleetResponseSchema } from '../fleet';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `fleets` handler's operations. */
export const FLEET_OPERATIONS = {
  listFleets: { path: WorkspacePathSchema, response: FleetListResponseSchema },
  createFleet: { path: WorkspacePathSchema, body: CreateFleetBodySchema, response: FleetResponseSchema },
  getFleet: { path: FleetPathSchema, response: FleetResponseSchema },
} satisfies Operations;
