import { apiRequestHooks } from '../../domain/limits/api-requests';
import { cancelFota, dryRunFleetFota, getFota, scheduleFleetFota, scheduleFota } from '../../domain/fleet-ops/fota';
import { FOTA_OPERATIONS } from '../../schemas/operations/fota';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';
import { streamJsonWithList } from '../../shared/json-stream';

export const handler = httpHandler(
  'fota',
  FOTA_OPERATIONS,
  {
    getFota: async ({ path }, event) => ok(200, { fota: await getFota(registryDb(), callerOf(event), path.deviceId) }),
    cancelFota: async ({ path }, event) => ok(200, { fota: await cancelFota(registryDb(), callerOf(event), path.deviceId) }),
    scheduleFota: async ({ path: { deviceId, ...firmware }, body }, event) =>
      ok(200, { fota: await scheduleFota(registryDb(), callerOf(event), deviceId, firmware, body.timeout_seconds) }),
    scheduleFleetFota: async ({ path: { workspaceId, ...firmware }, query, body }, event) => {
      const target = { groupId: query.group, q: query.q };
      if (query.dry_run) return ok(200, await dryRunFleetFota(registryDb(), callerOf(event), workspaceId, firmware, query.fleet, target));
      const { fota, devices } = await scheduleFleetFota(registryDb(), callerOf(event), workspaceId, firmware, query.fleet, body.rollout, target);
      return streamJsonWithList(event, 'fota', fota, 'devices', devices);
    },
  },
  apiRequestHooks(registryDb()),
);
