import type { Db } from '../../shared/clients';
import { NotFoundError, ThrottledError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { logger } from '../../shared/logger';
import { OPEN_STATUSES } from '../../schemas/job';
import { deleteDeviceRecords, findDeviceTombstone, markDeletionFinished } from '../../stores/device-deletion-store';
import { getDeviceOfWorkspace } from '../../stores/device-store';
import { listIdentitiesOfDevice } from '../../stores/identity-store';
import { getFotaOfDevice, listJobsOfDevice, transitionFota, transitionJob } from '../../stores/job-store';
import { listStateExecutionsOfDevice, transitionStateExecution } from '../../stores/state-execution-store';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import { closeDeviceSession, type SessionCloser } from '../doors/mqtt-sessions';
import { requireWorkspace } from '../tenancy/workspaces';
import { eventTimestamp } from '../webhooks/events';
import { withFleetName } from './devices';

/** What a device's deletion does besides the registry's writes, for tests and later features. */
export interface DeviceDeletionHooks {
  /** How the device's open MQTT session is closed (IoT Core's DeleteConnection; locally the broker). */
  sessions?: SessionCloser;
  /**
   * Closes the device's open alarms and deletes its alarm timers (spec/fleet-state.md §4:
   * domain/alarms/deleted-devices.ts): called once the device is deleted, and again when a DELETE is retried.
   */
  closeAlarms?: (workspaceId: string, deviceId: string) => Promise<void>;
  /**
   * `?purge=data`: queues the purge of the device's stored data points (`../data/purge.ts`), once
   * it is deleted and before its deletion is marked finished (a DELETE retried after a failure
   * queues it again). Checked before anything is written: it throws when the store cannot purge.
   */
  purgeData?: { check: () => void; enqueue: (accountId: string, workspaceId: string, deviceId: string) => Promise<void> };
}

const MAX_ATTEMPTS = 8;

/**
 * Ends the device's jobs, FOTA and state rollouts' items that have not ended (queued, pending, in progress) as `canceled`,
 * through the usual conditional transition: their rollouts count them so (the registry stream's
 * counts), a queued one is never released, and, marked `device_deleted`, none becomes an event.
 * A job that ended meanwhile is left as it ended.
 */
const cancelOpenWork = async (db: Db, deviceId: string) => {
  const at = new Date().toISOString();
  const transition = () => ({ from: OPEN_STATUSES, to: 'canceled' as const, at, set: { event_ts: eventTimestamp(), device_deleted: true } });
  const jobs = (await listJobsOfDevice(db, deviceId)).filter((job) => OPEN_STATUSES.includes(job.status));
  for (const job of jobs) await transitionJob(db, deviceId, job.name, transition());
  const fota = await getFotaOfDevice(db, deviceId);
  if (fota && OPEN_STATUSES.includes(fota.status)) await transitionFota(db, deviceId, transition());
  // Its places in state rollouts (fleet-state.md §3) too, so that they can complete.
  const states = [...(await listStateExecutionsOfDevice(db, deviceId, 'queued')), ...(await listStateExecutionsOfDevice(db, deviceId, 'pending'))];
  for (const state of states) await transitionStateExecution(db, deviceId, state.rollout_id, transition());
  return jobs.length + (fota && OPEN_STATUSES.includes(fota.status) ? 1 : 0) + states.length;
};

/** What follows the registry's writes: the session closed, the open work canceled, the alarms closed. Idempotent. */
const finishDeletion = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, since: Date, hooks: DeviceDeletionHooks) => {
  await closeDeviceSession(db, deviceId, since, hooks.sessions);
  const canceled = await cancelOpenWork(db, deviceId);
  await hooks.closeAlarms?.(workspaceId, deviceId);
  await hooks.purgeData?.enqueue(caller.accountId, workspaceId, deviceId);
  await markDeletionFinished(db, deviceId, new Date().toISOString());
  logger.info('device deleted', { workspace_id: workspaceId, device_id: deviceId, canceled });
};

/**
 * Deletes a device (spec/fleet-state.md §5) and answers it as it was. In one transaction its item
 * goes (it leaves lists, searches, groups and fleet-wide schedulings), its locator becomes a
 * tombstone (every door refuses its tokens, connections and messages from then on; its ID is never
 * used again), its identities go, and its workspace frees its places in the quotas of devices and
 * identities. Then its open MQTT session is closed, its open jobs and FOTA end `canceled` (counted
 * so in their rollouts) and its open alarms close, and with `?purge=data` the purge of its stored
 * points is queued; the tombstone records that this is done. A
 * DELETE retried after a failure in those steps does them again, then answers 404 as for any
 * deleted device (one retried after they were done writes nothing).
 * @throws NotFoundError when the workspace or the device is not the caller's (or was deleted).
 * @throws ThrottledError when the device keeps changing under the deletion.
 */
export const deleteDevice = async (db: Db, caller: Caller, workspaceId: string, deviceId: string, hooks: DeviceDeletionHooks = {}) => {
  hooks.purgeData?.check();
  let workspace = await requireWorkspace(db, caller, workspaceId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const device = await getDeviceOfWorkspace(db, workspaceId, deviceId);
    if (!device) {
      const tombstone = await findDeviceTombstone(db, deviceId);
      if (tombstone?.account_id === caller.accountId && tombstone.workspace_id === workspaceId && tombstone.finished_at === undefined) {
        await finishDeletion(db, caller, workspaceId, deviceId, new Date(tombstone.deleted_at), hooks);
      }
      throw new NotFoundError(`Device ${deviceId} not found.`);
    }
    const [answer, identities] = await Promise.all([withFleetName(db, workspace, device), listIdentitiesOfDevice(db, workspaceId, deviceId)]);
    const at = new Date();
    const outcome = await deleteDeviceRecords(db, workspace, device, identities, at.toISOString());
    if (outcome === 'deleted') {
      await finishDeletion(db, caller, workspaceId, deviceId, at, hooks);
      return answer;
    }
    // Moved, renamed, given an identity, or the workspace's counts changed meanwhile: read again.
    const fresh = await getWorkspaceOfAccount(db, caller.accountId, workspaceId);
    if (!fresh) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
    workspace = fresh;
  }
  throw new ThrottledError('The device kept changing during its deletion; retry the request.');
};
