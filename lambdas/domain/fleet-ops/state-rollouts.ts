/**
 * The fleet-wide desired state (fleet-state.md §3): `PATCH /workspaces/{ws}/state` as a rollout of
 * kind `state` on the rollout machinery (domain/fleet-ops/rollouts.ts). Each targeted device gets
 * an item of its own in the rollout (`STATEROL#<rol>`, the job item's sibling): `queued` until
 * released, then `pending` once the rollout's desired keys are set on the device (domain/state
 * setDesired, no version check), `done` once its reported state equals them (at release, or when a
 * report comes: domain/fleet-ops/state-reports.ts), or `timed_out`/`canceled` by the sweep.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Db } from '../../shared/clients';
import { WRITE_CONCURRENCY } from '../../shared/env';
import { NotFoundError, ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { nowIso } from '../../shared/ids';
import { settleAll } from '../../shared/settle';
import type { RolloutSettingsInput } from '../../schemas/rollout-settings';
import type { DeviceTarget } from '../../stores/job-store';
import { putStateOnDevicePages, transitionStateExecution } from '../../stores/state-execution-store';
import { eventTimestamp } from '../webhooks/events';
import { setDesired } from '../state/device-state';
import { validateChanges } from '../state/document';
import { countTargets, requireTargets, resolveTarget, type TargetQuery } from './fleet-targets';
import { scheduleOnFleets } from './rollouts';

/** A desired document of a state rollout: top-level keys, null removing one. */
export type DesiredKeys = Record<string, unknown>;

/**
 * Whether a reported state holds the rollout's desired keys: each key deep-equal to its value as
 * stored (JSON), a key the rollout removes (null) absent or null. Pure.
 */
export const reportsDesired = (reported: Record<string, unknown> | undefined, desired: DesiredKeys) =>
  Object.entries(desired).every(([key, value]) =>
    value === null ? reported?.[key] === undefined || reported[key] === null : isDeepStrictEqual(reported?.[key], JSON.parse(JSON.stringify(value))),
  );

/** One device of a state rollout being released: where it is, and what the rollout sets. */
export interface StateRelease {
  workspaceId: string;
  deviceId: string;
  rolloutId: string;
  desired: DesiredKeys;
}

/**
 * Releases one device of a state rollout whose item is already `pending`: sets the rollout's
 * desired keys on the device (a merge, no version check: the live `#state` and the `status` event
 * follow from the device item's change), then ends it `done` at once when the device already
 * reports them (a report that comes later is seen on the registry stream). A device deleted
 * meanwhile ends `canceled`; one whose desired state would break the document rules once merged
 * (its 16 KB) ends `failed`, with the rule as its message.
 * @returns its state in the rollout now.
 */
export const releaseDesired = async (db: Db, { workspaceId, deviceId, rolloutId, desired }: StateRelease) => {
  const end = async (to: 'done' | 'canceled' | 'failed', message?: string) =>
    (await transitionStateExecution(db, deviceId, rolloutId, {
      from: ['pending'],
      to,
      at: nowIso(),
      set: { event_ts: eventTimestamp(), message },
      known: { rollout_id: rolloutId },
    }))
      ? to
      : 'pending';
  let reported: Record<string, unknown>;
  try {
    ({ reported } = await setDesired(db, { workspaceId, deviceId }, desired, { field: 'desired', by: rolloutId }));
  } catch (error) {
    if (error instanceof NotFoundError) return end('canceled');
    // Merged with what the device's desired state holds already, it breaks a rule (its 16 KB): that device fails, the others go on.
    if (error instanceof ValidationError) return end('failed', error.details[0]?.message ?? error.message);
    throw error;
  }
  return reportsDesired(reported, desired) ? end('done') : 'pending';
};

/**
 * Releases the devices of each stored page that the scheduling made `pending` (`released`), a page
 * at a time, `WRITE_CONCURRENCY` at once, then yields the page: the answer names a device once its
 * desired state is set.
 */
async function* releasedPages(db: Db, pages: AsyncIterable<DeviceTarget[]>, released: Map<string, string>, desired: DesiredKeys) {
  for await (const page of pages) {
    const due = page.flatMap((device) => {
      const rolloutId = released.get(device.device_id);
      released.delete(device.device_id);
      return rolloutId ? [{ workspaceId: device.workspace_id, deviceId: device.device_id, rolloutId, desired }] : [];
    });
    const results = await settleAll(due, WRITE_CONCURRENCY, (release) => releaseDesired(db, release));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    yield page;
  }
}

/**
 * Sets `desired` on every device of the chosen fleets (all when none) that matches the target, as
 * a rollout of kind `state` (rollouts.ts scheduleOnFleets: rate, timeout, abort, continuous): the
 * rollout is recorded first, then each device's item, `pending` (its desired keys then set) or
 * `queued` past a rate-limited rollout's first minute (the sweep releases it). The devices are given
 * as they are released or queued.
 * @throws ValidationError naming `body.desired.<key>` for a document that breaks the state rules, or
 * for a malformed query; NotFoundError when the workspace, a named fleet or the group is not the
 * caller's; ConflictError for a group deleted meanwhile;
 * QuotaExceededError (`rollouts_per_day`); nothing is written then.
 */
export const scheduleFleetState = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  desired: DesiredKeys,
  fleetIds?: string[],
  settings: RolloutSettingsInput = {},
  target: TargetQuery = {},
) => {
  // The devices made pending, by ID, until their page is stored (their rollout's ID with them).
  const released = new Map<string, string>();
  validateChanges(desired, 'body.desired');
  const { rollout, devices } = await scheduleOnFleets(
    db,
    caller,
    workspaceId,
    fleetIds,
    settings,
    {
      kind: 'state',
      subject: { value: desired },
      write: (pages, stateOf, count) =>
        releasedPages(
          db,
          putStateOnDevicePages(
            db,
            (device, index) => {
              const { rollout_id, ...state } = stateOf(device, index);
              if (state.status === 'pending') released.set(device.device_id, rollout_id!);
              return { ...state, ...device, rollout_id: rollout_id! };
            },
            pages,
            WRITE_CONCURRENCY,
            count,
          ),
          released,
          desired,
        ),
    },
    target,
  );
  return { state_change: { rollout_id: rollout.id }, devices };
};

/**
 * A fleet-wide state change's dry run: the checks `scheduleFleetState` makes before writing (the
 * document's rules too), then how many devices it would target now; nothing is written.
 * @throws ValidationError naming `body.desired.<key>`; NotFoundError when the workspace, a named fleet or the group is not the caller's; ValidationError for a malformed query.
 */
export const dryRunFleetState = async (db: Db, caller: Caller, workspaceId: string, desired: DesiredKeys, fleetIds?: string[], target: TargetQuery = {}) => {
  validateChanges(desired, 'body.desired');
  await requireTargets(db, caller, workspaceId, fleetIds);
  const { query } = await resolveTarget(db, workspaceId, target);
  return countTargets(db, workspaceId, fleetIds, query);
};
