import {
  enqueueIngest,
  getDeviceStatus,
  publishData,
  reportEvents,
  reportFotaResult,
  reportJobResult,
  type PublishDataDeps,
} from '../../domain/doors/device-api';
import { publishForward } from '../../domain/webhooks/events';
import { limitsMemory } from '../../domain/limits/limits';
import { pointQuota } from '../../domain/limits/point-quota';
import { DEVICE_API_OPERATIONS } from '../../schemas/operations/device-api';
import { registryDb } from '../../shared/clients';
import { LIMITS_CACHE_SECONDS } from '../../shared/env';
import { ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';
import { CloudStamper } from '../../shared/timestamps';
import { deviceCallerOf } from './device-caller';

const db = registryDb();
// A request's points are claimed exactly (slice 0): its answer says how many the quota refused.
const points = pointQuota(db, { limits: limitsMemory(db, { ttlMs: LIMITS_CACHE_SECONDS * 1000 }), slice: () => 0, max: 100_000 });
const deps: PublishDataDeps = { db, enqueue: enqueueIngest, forward: publishForward, stamper: new CloudStamper(), points };

// The publish and event routes take one item or an array of them.
const many = <T>(body: T | T[]): T[] => (Array.isArray(body) ? body : [body]);

export const handler = httpHandler('device-api', DEVICE_API_OPERATIONS, {
  publishData: async ({ body }, event) => ok(202, await publishData(deps, deviceCallerOf(event), many(body))),
  reportDeviceEvents: async ({ body }, event) => ok(202, await reportEvents(deps, deviceCallerOf(event), many(body))),
  getDeviceStatus: async (_input, event) => ok(200, await getDeviceStatus(deps, deviceCallerOf(event))),
  reportJobResult: async ({ path, body }, event) => ok(200, { job: await reportJobResult(deps, deviceCallerOf(event), path.jobName, body.result) }),
  reportFotaResult: async ({ body }, event) => ok(200, { fota: await reportFotaResult(deps, deviceCallerOf(event), body) }),
});
