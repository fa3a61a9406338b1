import { apiRequestHooks } from '../../domain/limits/api-requests';
import { cancelRollout, getRollout, listRolloutDevices, listRollouts, pauseRollout, resumeRollout } from '../../domain/fleet-ops/rollouts';
import { dryRunFleetState, scheduleFleetState } from '../../domain/fleet-ops/state-rollouts';
import { ROLLOUT_OPERATIONS } from '../../schemas/operations/rollouts';
import { registryDb } from '../../shared/clients';
import { callerOf, ok, type ApiEvent } from '../../shared/http';
import { streamJsonWithList, streamList } from '../../shared/json-stream';
import { httpHandler, type RouteInput } from '../../shared/middleware';

// The fleet-wide desired state: its answer names every device as its item is written (streamed, as jobs on fleets).
const changeFleetState = async ({ path, query, body }: RouteInput<typeof ROLLOUT_OPERATIONS.changeFleetState>, event: ApiEvent) => {
  const target = { groupId: query.group, q: query.q };
  if (query.dry_run) return ok(200, await dryRunFleetState(registryDb(), callerOf(event), path.workspaceId, body.desired, query.fleet, target));
  const { state_change, devices } = await scheduleFleetState(registryDb(), callerOf(event), path.workspaceId, body.desired, query.fleet, body.rollout, target);
  return streamJsonWithList(event, 'state_change', state_change, 'devices', devices);
};

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
    changeFleetState,
  },
  apiRequestHooks(registryDb()),
);
