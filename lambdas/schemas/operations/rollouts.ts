import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
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
} satisfies Operations;
