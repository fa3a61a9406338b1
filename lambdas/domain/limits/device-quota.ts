import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { WORKSPACE_LIMIT_DEFAULTS } from '../../shared/env';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { onShutdown } from '../../shared/shutdown';
import { dayOf } from '../../schemas/usage';
import type { DeviceLimit } from '../../schemas/limits';
import { claimDeviceCount, returnDeviceCount, type DeviceCounter, type DeviceLocator } from '../../stores/device-store';
import type { LimitsMemory } from './limits';

/** What a device may do of what it just sent (points, events, other messages): the first `accepted`, not the `refused` others. */
export interface QuotaDecision {
  accepted: number;
  refused: number;
  workspace_id: string;
  /** The device's limit of that count, when this decision looked it up (always when it refused some). */
  limit?: number;
  /** The device's locator, when this decision read it (a claim): where the device is now. */
  locator?: DeviceLocator;
}

/** The limit of each of a device's daily counts. */
export const DEVICE_LIMIT_OF: Readonly<Record<DeviceCounter, DeviceLimit>> = {
  points: 'points_per_device_per_day',
  events: 'events_per_device_per_day',
  up_messages: 'up_messages_per_device_per_day',
};

export interface DeviceQuotaOptions {
  /** The container's memory of workspaces' limits (the counter's `…_per_device_per_day`). */
  limits: LimitsMemory;
  /**
   * How many a claim takes at least, for a device whose limit is `limit`: 0 claims exactly what
   * each request brings (the HTTPS door's points and events); more lets one write serve many small
   * batches (the MQTT door's one point or message a publish), at the price of what a crashed
   * container held unused.
   */
  slice: (limit: number) => number;
  /** Devices remembered at most. */
  max: number;
  now?: () => number;
}

/** Give-backs in flight at once when a container ends (within its shutdown's 400 ms). */
const GIVE_BACK_CONCURRENCY = 32;

/** The MQTT door's slice (and the HTTPS door's for other messages): a hundredth of the device's daily limit (at least what a batch brings). */
export const hundredthOf = (limit: number) => Math.ceil(limit / 100);

interface Held {
  day: string;
  /** Claimed and not used yet. */
  left: number;
  account_id: string;
  workspace_id: string;
  /** The limit the device was found full at, this day: no claim is tried again until it is raised. */
  fullAt?: number;
}

/**
 * A container's share of its devices' daily count of `counter` (data points, events, other
 * messages: each `…_per_device_per_day`, UTC days). Each device's count of the day lives on its
 * locator; a container claims there in slices (one write for many batches:
 * {@link DeviceQuotaOptions.slice}), keeps what it has not used yet, and gives back at once what a
 * claim took past the device's limit (or past a slice of it: a device's first claim in a container,
 * before its workspace is known, asks for a slice of the default). However many containers claim
 * at once, the counts they are given add up to at most the limit, so a device never gets more than
 * its limit in a day. What a container holds unused of the day it gives back when it ends (Lambda's
 * SIGTERM: {@link onShutdown}), the devices holding most first, as many as its shutdown's time
 * allows; what a crashed container held is lost for that day (a device may be refused up to a slice
 * per such container before its limit). A device found full costs no write until the day ends or
 * its limit is raised.
 */
export const deviceQuota = (db: Db, counter: DeviceCounter, { limits, slice, max, now = Date.now }: DeviceQuotaOptions) => {
  const held = new LRUCache<string, Held>({ max });
  const limitName = DEVICE_LIMIT_OF[counter];
  const limitOf = async (accountId: string, workspaceId: string) => (await limits(accountId, workspaceId))[limitName];

  // A claim in flight per device: another take of the device waits for it, then uses what it left.
  const claiming = new Map<string, Promise<unknown>>();
  /**
   * Decides how many of the `n` things a device sent at `at` (ms since the epoch: its UTC day) it
   * may have (the first ones), and counts them. Takes of one device run one at a time.
   * @returns the decision, or undefined when the device does not exist.
   */
  const take = async (deviceId: string, n: number, at = now()): Promise<QuotaDecision | undefined> => {
    for (let waiting = claiming.get(deviceId); waiting; waiting = claiming.get(deviceId)) await waiting.catch(() => undefined);
    const decided = decide(deviceId, n, at);
    claiming.set(deviceId, decided);
    try {
      return await decided;
    } finally {
      if (claiming.get(deviceId) === decided) claiming.delete(deviceId);
    }
  };
  const decide = async (deviceId: string, n: number, at: number): Promise<QuotaDecision | undefined> => {
    const day = dayOf(at);
    const mine = held.get(deviceId);
    const today = mine && mine.day >= day ? mine : undefined;
    if (today && today.left >= n) {
      today.left -= n;
      return { accepted: n, refused: 0, workspace_id: today.workspace_id };
    }
    const current = today?.fullAt !== undefined ? await limitOf(today.account_id, today.workspace_id) : undefined;
    if (today && current !== undefined && current <= today.fullAt!) {
      const accepted = today.left;
      today.left = 0;
      return { accepted, refused: n - accepted, workspace_id: today.workspace_id, limit: current };
    }
    const have = today?.left ?? 0;
    // A device seen before is claimed for by its workspace's limit; a new one by the deployment's default.
    const known = mine ? await limitOf(mine.account_id, mine.workspace_id) : WORKSPACE_LIMIT_DEFAULTS[limitName];
    const want = Math.max(n - have, slice(known));
    const claim = await claimDeviceCount(db, deviceId, counter, today?.day ?? day, want);
    if (!claim) {
      held.delete(deviceId);
      return undefined;
    }
    const { account_id, workspace_id } = claim.locator;
    const limit = await limitOf(account_id, workspace_id);
    // What this claim may keep: the limit less what was claimed before it, within what it asked,
    // and no more than a slice of this device's own limit (a first claim guessed the default's).
    const granted = Math.max(0, Math.min(want, limit - (claim.total - want)));
    const kept = Math.min(granted, Math.max(n - have, slice(limit)));
    if (kept < want) {
      await returnDeviceCount(db, deviceId, counter, claim.day, want - kept).catch((error: unknown) => {
        // Kept counted: the device is refused that much sooner today, never let past its limit.
        logger.warn('could not give back a device’s count claimed and not kept', { deviceId, counter, error: error as Error });
      });
    }
    const available = have + kept;
    const accepted = Math.min(n, available);
    // Full once what stays claimed (the total less what was given back) reaches the limit.
    const full = claim.total - (want - kept) >= limit;
    held.set(deviceId, { day: claim.day, left: available - accepted, account_id, workspace_id, ...(full ? { fullAt: limit } : {}) });
    return { accepted, refused: n - accepted, workspace_id, limit, locator: claim.locator };
  };
  onShutdown(async () => {
    const today = dayOf(now());
    const unused = [...held.entries()].filter(([, mine]) => mine.day === today && mine.left > 0).sort(([, a], [, b]) => b.left - a.left);
    held.clear();
    await settleAll(unused, GIVE_BACK_CONCURRENCY, ([deviceId, mine]) => returnDeviceCount(db, deviceId, counter, mine.day, mine.left));
  });
  return take;
};
export type DeviceQuota = ReturnType<typeof deviceQuota>;
