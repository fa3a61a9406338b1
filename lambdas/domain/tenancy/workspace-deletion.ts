import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { nowIso } from '../../shared/ids';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { exportsBucket } from '../../shared/env';
import type { FirmwareRecord } from '../../stores/firmware-store';
import { deleteObject, type ObjectRef } from '../../stores/object-store';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';
import {
  deleteMarkedWorkspace,
  deleteWorkspacePartition,
  markWorkspaceDeleting,
  unmarkWorkspaceDeleting,
  workspaceHoldsDevices,
} from '../../stores/workspace-deletion-store';
import { type EnqueuePurge, enqueuePurge, purgeJob } from '../data/purge';
import { imageOf } from '../fleet-ops/firmware';
import { toWorkspace } from './workspaces';

/** S3 deletes in flight at once. */
const OBJECT_DELETES = 16;

/** The S3 objects the items of a page name: firmware images (`FW#…`) and export files (`EXPORT#…`). */
const objectsOf = (items: Array<Record<string, unknown>>): ObjectRef[] =>
  items.flatMap((item): ObjectRef[] => {
    const sk = item.sk as string;
    if (sk.startsWith('FW#')) return [imageOf(item as unknown as FirmwareRecord)];
    if (sk.startsWith('EXPORT#') && typeof item.key === 'string') return [{ bucket: exportsBucket(), key: item.key }];
    return [];
  });

/** Deletes the objects of a page, all of them or throw (S3's DeleteObject of a missing key succeeds). */
const deleteObjectsOf = async (items: Array<Record<string, unknown>>) => {
  const results = await settleAll(objectsOf(items), OBJECT_DELETES, deleteObject);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
};

/**
 * Deletes a workspace that holds no device (spec/fleet-state.md §5) and answers it as it was: its
 * fleets, API keys (they stop working at once, but for the authorizer's cache), integrations,
 * groups, rules, firmware versions and their images, exports and their files, rollouts and usage
 * go with it, and its place in the account's quota of workspaces is free. Race-safe: the workspace
 * is first marked, in a write that holds only while it counts no device, and from then on it
 * answers 404 and takes no create; found holding a device (one written around the count), the mark
 * goes and nothing else changed. Its stored data points go within a sweep: the purge job is
 * queued (`enqueue`) before the workspace's item goes. A DELETE that failed half-way is finished
 * by the next one.
 * @throws NotFoundError when it is not a workspace of the caller's account.
 * @throws ConflictError while it holds devices.
 */
export const deleteWorkspace = async (db: Db, caller: Caller, workspaceId: string, enqueue: EnqueuePurge = enqueuePurge) => {
  const workspace = await getWorkspaceOfAccount(db, caller.accountId, workspaceId);
  if (!workspace) throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  const at = nowIso();
  const marked = await markWorkspaceDeleting(db, caller.accountId, workspaceId, at);
  if (marked === 'gone') throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  const holds = 'Workspace holds devices: delete them first.';
  if (marked === 'devices') throw new ConflictError(holds);
  if (await workspaceHoldsDevices(db, workspaceId)) {
    await unmarkWorkspaceDeleting(db, caller.accountId, workspaceId, at);
    throw new ConflictError(holds);
  }
  const items = await deleteWorkspacePartition(db, workspaceId, deleteObjectsOf);
  const purge = purgeJob(caller.accountId, workspaceId, undefined);
  await enqueue(purge, (purge.not_before - Date.now()) / 1000);
  if (!(await deleteMarkedWorkspace(db, caller.accountId, workspaceId, at))) {
    // Another DELETE took the mark over and finishes (or finished) it.
    throw new NotFoundError(`Workspace ${workspaceId} not found.`);
  }
  logger.info('workspace deleted', { workspace_id: workspaceId, items });
  return toWorkspace(workspace);
};
