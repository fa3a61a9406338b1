import { LRUCache } from 'lru-cache';
import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { claimAuthenticationSample } from '../../stores/authentication-sample-store';

// The minute each device's sample was last claimed (or found claimed) by this container: a device
// flooded with forged tokens costs the table one write a minute per container, not one per token.
// The table's conditional write is what holds across containers; this only spares it.
const claimedMinutes = new LRUCache<string, number>({ max: 10_000 });

/**
 * Whether an `authentication` event of an unverified token (not signed with the device's key)
 * naming this device may be forwarded: true for the first such token of the device in a minute,
 * across every container of both doors (a conditional write on the device's sample item, with a
 * TTL), false for the others. A failing write answers false: the event is an observation, and the
 * refusal is counted anyway.
 */
export const takeAuthenticationSample = async (db: Db, deviceId: string, now: Date) => {
  const minute = Math.floor(now.getTime() / 60_000);
  if ((claimedMinutes.get(deviceId) ?? Number.NEGATIVE_INFINITY) >= minute) return false;
  claimedMinutes.set(deviceId, minute);
  return claimAuthenticationSample(db, deviceId, minute).catch((error: unknown) => {
    logger.warn('authentication sample not claimed', { deviceId, error: error as Error });
    return false;
  });
};
