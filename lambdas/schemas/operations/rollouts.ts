import * as z from 'zod';
import { DryRunSchema, FleetSchedulingQuerySchema, GROUP_GONE } from '../dry-run';
import { PageQuerySchema } from '../list';
import { ROLLOUTS_PER_DAY, type Operations } from '../operation';
import { ChangeFleetStateBodySchema, FleetStatePathSchema, StateChangeResponseSchema } from '../state-rollout';
import {
  ListRolloutDevicesQuerySchema,
  RolloutDevicesResponseSchema,
  RolloutListResponseSchema,
  RolloutPathSchema,
  RolloutResponseSchema,
  RolloutsPathSchema,
} from '../rollout';

const control = { path: RolloutPathSchema, response: RolloutResponseSchema, conflict: 'The rollout has ended (completed, canceled or aborted)' };

/** The `rollouts` handler's operations. */
export const ROLLOUT_OPERATIONS = {
  listRollouts: { path: RolloutsPathSchema, query: PageQuerySchema, response: RolloutListResponseSchema },
  getRollout: { path: RolloutPathSchema, response: RolloutResponseSchema },
  listRolloutDevices: { path: RolloutPathSchema, query: ListRolloutDevicesQuerySchema, response: RolloutDevicesResponseSchema },
  pauseRollout: control,
  resumeRollout: control,
  cancelRollout: control,
  // fleet-state.md §3: the fleet-wide desired state, a rollout of kind `state`; `dry_run=true` answers the count (DryRun), having written nothing.
  changeFleetState: {
    path: FleetStatePathSchema,
    query: FleetSchedulingQuerySchema,
    body: ChangeFleetStateBodySchema,
    response: z.union([StateChangeResponseSchema, DryRunSchema]),
    conflict: GROUP_GONE,
    quota: ROLLOUTS_PER_DAY,
  },
} satisfies Operations;
