import { LimitsResponseSchema } from '../limits';
import type { Operations } from '../operation';
import { UsageQuerySchema, UsageResponseSchema } from '../usage';
import { WorkspacePathSchema } from '../workspace';

/** The `limits` handler's operations: a workspace's limits and usage (spec/operations.md §5). */
export const LIMITS_OPERATIONS = {
  getWorkspaceLimits: { path: WorkspacePathSchema, response: LimitsResponseSchema },
  getWorkspaceUsage: { path: WorkspacePathSchema, query: UsageQuerySchema, response: UsageResponseSchema },
} satisfies Operations;
