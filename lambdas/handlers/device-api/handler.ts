import {
  admitUpMessage,
  enqueueIngest,
  getDeviceStatus,
  publishData,
  reportEvents,
  reportCondition,
  reportFotaResult,
  reportJobResult,
  type PublishDataDeps,
} from '../../domain/doors/device-api';
import { forwardAndLog } from '../../domain/webhooks/events';
import { getDeviceSideState, reportDeviceState } from '../../domain/state/state-doors';
import { deviceQuota, hundredthOf } from '../../domain/limits/device-quota';
import { limitsMemory } from '../../domain/limits/limits';
import { usageBuffer } from '../../domain/limits/usage';
import { DEVICE_API_OPERATIONS } from '../../schemas/operations/device-api';
import { registryDb } from '../../shared/clients';
import { LIMITS_CACHE_SECONDS, USAGE_FLUSH_SECONDS } from '../../shared/env';
import { ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';
import { registerShutdownExtension } from '../../shared/shutdown';
import { CloudStamper } from '../../shared/timestamps';
import { deviceCallerOf } from './device-caller';

const db = registryDb();
const limits = limitsMemory(db, { ttlMs: LIMITS_CACHE_SECONDS * 1000 });
// A request's points and events are claimed exactly (slice 0): its answer says how many the quota
// refused. A status or a result is one message: claimed in slices, as the MQTT door does.
const upMessages = {
  upMessages: deviceQuota(db, 'up_messages', { limits, slice: hundredthOf, max: 100_000 }),
  usage: usageBuffer(db, { flushMs: USAGE_FLUSH_SECONDS * 1000 }).add,
};
const deps: PublishDataDeps = {
  db,
  enqueue: enqueueIngest,
  forward: forwardAndLog(db),
  stamper: new CloudStamper(),
  points: deviceQuota(db, 'points', { limits, slice: () => 0, max: 100_000 }),
  events: deviceQuota(db, 'events', { limits, slice: () => 0, max: 100_000 }),
  upMessage: (caller) => admitUpMessage(upMessages, caller),
};
// Told of its container's end, to write the messages it counted and give back the slices it holds.
await registerShutdownExtension();

// The publish and event routes take one item or an array of them.
const many = <T>(body: T | T[]): T[] => (Array.isArray(body) ? body : [body]);

export const handler = httpHandler('device-api', DEVICE_API_OPERATIONS, {
  publishData: async ({ body }, event) => ok(202, await publishData(deps, deviceCallerOf(event), many(body))),
  reportDeviceEvents: async ({ body }, event) => ok(202, await reportEvents(deps, deviceCallerOf(event), many(body))),
  getDeviceStatus: async (_input, event) => ok(200, await getDeviceStatus(deps, deviceCallerOf(event))),
  reportJobResult: async ({ path, body }, event) => ok(200, { job: await reportJobResult(deps, deviceCallerOf(event), path.jobName, body.result) }),
  reportFotaResult: async ({ body }, event) => ok(200, { fota: await reportFotaResult(deps, deviceCallerOf(event), body) }),
  getDeviceSideState: async (_input, event) => ok(200, { state: await getDeviceSideState(deps, deviceCallerOf(event)) }),
  reportCondition: async ({ body }, event) => ok(200, { condition: await reportCondition(deps, deviceCallerOf(event), body) }),
  reportDeviceState: async ({ body }, event) => ok(200, { state: await reportDeviceState(deps, deviceCallerOf(event), body.reported) }),
});
