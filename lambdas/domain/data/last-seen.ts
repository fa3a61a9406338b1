import { logger } from '../../shared/logger';
import { settleAll } from '../../shared/settle';
import { markDeviceSeen, SEEN_GRANULARITY_MS } from '../../stores/device-health-store';
import type { Db } from '../../shared/clients';

/** Records when a device's newest data point arrived (the device's `last_seen_at`). */
export type SeenRecorder = (workspaceId: string, deviceId: string, at: string) => Promise<void>;

/**
 * A container's recorder of its devices' `last_seen_at`: it remembers the value each device has
 * stored (as it wrote or found it) and asks DynamoDB only once a point arrives more than
 * {@link SEEN_GRANULARITY_MS} after it; the conditional write (stores/device-health-store.ts)
 * keeps containers from writing more than once a minute between them. So a device costs at most
 * one write a minute and, per container, one conditional request a minute, however many points it
 * sends; its `last_seen_at` lags its newest point by at most a minute. At most `max` devices are
 * remembered (past it the memory starts over).
 */
export const seenRecorder = (db: Db, { max = 100_000 } = {}): SeenRecorder => {
  const stored = new Map<string, number>();
  return async (workspaceId, deviceId, at) => {
    const ms = Date.parse(at);
    const known = stored.get(deviceId);
    if (known !== undefined && ms - known <= SEEN_GRANULARITY_MS) return;
    const now = await markDeviceSeen(db, workspaceId, deviceId, at);
    if (now === undefined) return;
    if (stored.size >= max) stored.clear();
    stored.set(deviceId, Date.parse(now));
  };
};

/** How many devices' `last_seen_at` a batch asks DynamoDB about at once: a batch may name hundreds. */
const SEEN_CONCURRENCY = 8;

/**
 * Records the newest arrival of each device's stored points (one call a device a batch). Best
 * effort: a failure is logged and leaves `last_seen_at` a little older, never fails the batch.
 */
export const recordSeen = async (seen: SeenRecorder, arrivals: Array<{ workspace_id: string; device_id: string; timestamp_in?: string }>) => {
  const newest = new Map<string, { workspaceId: string; at: string }>();
  for (const { workspace_id, device_id, timestamp_in } of arrivals) {
    if (timestamp_in === undefined) continue;
    const current = newest.get(device_id);
    if (!current || Date.parse(current.at) < Date.parse(timestamp_in)) newest.set(device_id, { workspaceId: workspace_id, at: timestamp_in });
  }
  const devices = [...newest];
  const results = await settleAll(devices, SEEN_CONCURRENCY, ([deviceId, { workspaceId, at }]) => seen(workspaceId, deviceId, new Date(at).toISOString()));
  results.forEach((result, i) => {
    if (result.status === 'rejected') logger.warn('a device’s last_seen_at could not be written', { error: result.reason as Error, device_id: devices[i][0] });
  });
};
