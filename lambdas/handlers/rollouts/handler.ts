import { apiRequestHooks } from '../../domain/limits/api-requests';
import { cancelRollout, getRollout, listRolloutDevices, listRollouts, pauseRollout, resumeRollout } from '../../domain/fleet-ops/rollouts';
import { ROLLOUT_OPERATIONS } from '../../schemas/operations/rollouts';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

export const handler = httpHandler(
  'rollouts',
  ROLLOUT_OPERATIONS,
  {
    listRollouts: async ({ path, query }, event) => streamList(event, 'rollouts', await listRollouts(registryDb(), callerOf(event), path.workspaceId, query)),
    getRollout: async ({ path }, event) => ok(200, { rollout: await getRollout(registryDb(), callerOf(event), path.workspaceId, path.rolloutId) }),
    listRolloutDevices: async ({ path, query }, event) =>
      streamList(event, 'devices', await listRolloutDevices(registryDb(), callerOf(event), path.workspaceId, path.rolloutId, query.status, query)),
    pauseRollout: async ({ path }, event) => ok(200, { rollout: await pauseRollout(registryDb(), callerOf(event), path.workspaceId, path.rolloutId) }),
    resumeRollout: async ({ path }, event) => ok(200, { rollout: await resumeRollout(registryDb(), callerOf(event), path.workspaceId, path.rolloutId) }),
    cancelRollout: async ({ path }, event) => ok(200, { rollout: await cancelRollout(registryDb(), callerOf(event), path.workspaceId, path.rolloutId) }),
  },
  apiRequestHooks(registryDb()),
);
