import { apiRequestHooks } from '../../domain/limits/api-requests';
import { getWorkspaceLimitsAndUse } from '../../domain/limits/limits-views';
import { getWorkspaceUsage } from '../../domain/limits/usage';
import { LIMITS_OPERATIONS } from '../../schemas/operations/limits';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'limits',
  LIMITS_OPERATIONS,
  {
    getWorkspaceLimits: async ({ path }, event) => ok(200, await getWorkspaceLimitsAndUse(registryDb(), callerOf(event), path.workspaceId)),
    getWorkspaceUsage: async ({ path, query }, event) => ok(200, { usage: await getWorkspaceUsage(registryDb(), callerOf(event), path.workspaceId, query) }),
  },
  apiRequestHooks(registryDb()),
);
