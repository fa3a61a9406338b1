import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { markDeviceTagSeen, SEEN_GRANULARITY_MS } from '../../stores/device-health-store';
import { rulesOfWorkspace } from '../alarms/rule-cache';
import { silentTagsOf } from '../alarms/silent-tags';

/** A data message as the ingest stores it: whose, and its points' tags. */
export interface TaggedArrival {
  account_id?: string;
  workspace_id: string;
  device_id: string;
  timestamp_in: string;
  points: ReadonlyArray<{ tag: string }>;
}

/** Records the arrival of a batch's points on the tags that `silent` rules name (domain/alarms/silent-tags.ts). */
export type TagsSeen = (arrivals: readonly TaggedArrival[]) => Promise<void>;

// Device tags asked about at once.
const CONCURRENCY = 8;

/**
 * A container's recorder of devices' newest point per tag that an enabled `silent` rule of their
 * workspace names (the rules from the container's cache: a workspace whose rules name no tag costs
 * its cached read and no write). As `last_seen_at` (domain/data/last-seen.ts): it remembers what
 * each device tag has stored and writes only for a point more than a minute newer, conditionally,
 * so a device costs at most one write a minute per named tag (most workspaces name one), never a
 * write per point. At most `max` device tags are remembered. Best effort: a failure is logged.
 */
export const tagSeenRecorder = (db: Db, { max = 100_000, rules = rulesOfWorkspace } = {}): TagsSeen => {
  const stored = new Map<string, number>();
  return async (arrivals) => {
    const newest = new Map<string, { workspaceId: string; deviceId: string; tag: string; at: number }>();
    for (const arrival of arrivals) {
      if (arrival.account_id === undefined) continue;
      const named = silentTagsOf(await rules({ db }, { account_id: arrival.account_id, workspace_id: arrival.workspace_id }));
      if (!named.size) continue;
      const at = Date.parse(arrival.timestamp_in);
      for (const { tag } of arrival.points) {
        if (!named.has(tag)) continue;
        const key = `${arrival.device_id}\n${tag}`;
        const current = newest.get(key);
        if (!current || current.at < at) newest.set(key, { workspaceId: arrival.workspace_id, deviceId: arrival.device_id, tag, at });
      }
    }
    const due = [...newest].filter(([key, { at }]) => {
      const known = stored.get(key);
      return known === undefined || at - known > SEEN_GRANULARITY_MS;
    });
    const results = await settleAll(due, CONCURRENCY, async ([key, { workspaceId, deviceId, tag, at }]) => {
      const now = await markDeviceTagSeen(db, workspaceId, deviceId, tag, new Date(at).toISOString());
      if (now === undefined) return;
      if (stored.size >= max) stored.clear();
      stored.set(key, Date.parse(now));
    });
    results.forEach((result, i) => {
      if (result.status === 'rejected')
        logger.warn('a device tag’s last point could not be recorded', { error: result.reason as Error, device_id: due[i][1].deviceId });
    });
  };
};

/** Records a batch's arrivals on named tags; best effort: a failure (the rules unreadable) is logged, never fails the batch. */
export const recordTagsSeen = async (seen: TagsSeen, arrivals: readonly TaggedArrival[]) => {
  try {
    await seen(arrivals);
  } catch (error) {
    logger.warn('the arrival of points on silent rules’ tags could not be recorded', { error: error as Error });
  }
};
