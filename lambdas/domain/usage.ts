import type { Db } from '../shared/clients';
import type { Caller } from '../shared/http';
import { logger } from '../shared/logger';
import { USAGE_COUNTERS, dayOf, usageRange, type UsageCounter, type UsageCounts, type UsageDay } from '../schemas/usage';
import { addUsage, readUsageDays, type UsageIncrement } from '../stores/usage-store';
import { requireWorkspace } from './workspaces';

const zero = (): UsageCounts => Object.fromEntries(USAGE_COUNTERS.map((name) => [name, 0])) as UsageCounts;

/**
 * Counts gathered over a batch (or a while), by workspace and UTC day, to be written as one
 * UpdateItem each (DESIGN §13: once per batch, never once per point).
 */
export class UsageTally {
  private readonly byDay = new Map<string, UsageIncrement & { counts: UsageCounts }>();

  /** Adds `counts` to a workspace's day (`at`, ms since the epoch: its UTC day). */
  add(workspaceId: string, at: number, counts: Partial<Record<UsageCounter, number>>) {
    const day = dayOf(at);
    const key = `${workspaceId}/${day}`;
    const entry = this.byDay.get(key) ?? { workspaceId, day, counts: zero() };
    for (const name of USAGE_COUNTERS) entry.counts[name] += counts[name] ?? 0;
    this.byDay.set(key, entry);
  }

  /** Adds another tally's counts to this one. */
  merge(other: UsageTally) {
    for (const entry of other.entries()) this.add(entry.workspaceId, Date.parse(entry.day), entry.counts);
  }

  entries(): UsageIncrement[] {
    return [...this.byDay.values()];
  }

  get size() {
    return this.byDay.size;
  }
}

const USAGE_WRITE_ATTEMPTS = 4;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes a tally: one UpdateItem per workspace and day, all at once, each tried again a few times
 * with jittered backoff beyond the SDK's own retries (a write of counts must not be lost to a
 * passing throttle). An ADD is not idempotent, so only writes that failed are tried again.
 * @returns the workspaces' days whose write kept failing (logged), for the caller to keep or retry; none when all were written.
 */
export const recordUsage = async (db: Db, tally: UsageTally): Promise<UsageIncrement[]> => {
  const outcomes = await Promise.all(
    tally.entries().map(async (entry) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await addUsage(db, entry);
          return undefined;
        } catch (error) {
          if (attempt < USAGE_WRITE_ATTEMPTS) {
            await pause(Math.random() * 50 * 2 ** attempt);
            continue;
          }
          logger.error('could not write usage counts', { error: error as Error, workspaceId: entry.workspaceId, day: entry.day, counts: entry.counts });
          return entry;
        }
      }
    }),
  );
  return outcomes.filter((entry): entry is UsageIncrement => entry !== undefined);
};

/**
 * The workspace's usage of a range of UTC days: every day, zeros where nothing was counted, and
 * the totals.
 * @throws NotFoundError when the workspace is not the caller's.
 */
export const getWorkspaceUsage = async (db: Db, caller: Caller, workspaceId: string, query: { start?: string; end?: string }, now = Date.now()) => {
  await requireWorkspace(db, caller, workspaceId);
  const { start, end } = usageRange(query, now);
  const stored = new Map((await readUsageDays(db, workspaceId, start, end)).map((item) => [item.date, item]));
  const days: UsageDay[] = [];
  const totals = zero();
  for (let at = Date.parse(start); at <= Date.parse(end); at += 24 * 3600 * 1000) {
    const date = dayOf(at);
    const item = stored.get(date);
    const day = { date, ...zero() };
    for (const name of USAGE_COUNTERS) {
      day[name] = Number(item?.[name] ?? 0);
      totals[name] += day[name];
    }
    days.push(day);
  }
  return { days, totals };
};

/** A container's count of API requests per workspace, written in batches ({@link apiRequestCounter}). */
export interface ApiRequestCounter {
  /** Counts one request on a workspace's paths, and writes what was counted when the oldest count has waited `flushMs`. */
  count: (workspaceId: string) => Promise<void>;
  /** Writes whatever is counted now. */
  flush: () => Promise<void>;
}

/**
 * Counts a handler container's API requests by workspace and day, and writes them (one UpdateItem
 * per workspace and day) at the end of the first request after the oldest unwritten count has
 * waited `flushMs`, so that a busy container writes once per `flushMs` and not once per request.
 * The bound: `api_requests` lags at most `flushMs` behind a container that keeps serving, and a
 * container that Lambda retires (it gives no notice) takes the counts of its last `flushMs` of
 * requests with it. A workspace's write that fails keeps its counts for the next one.
 */
export const apiRequestCounter = (db: Db, { flushMs, now = Date.now }: { flushMs: number; now?: () => number }): ApiRequestCounter => {
  let pending = new UsageTally();
  let since: number | undefined;
  const flush = async () => {
    if (!pending.size) return;
    const writing = pending;
    pending = new UsageTally();
    since = undefined;
    const failed = await recordUsage(db, writing);
    // Kept for the next write (counts of requests made meanwhile are in `pending` already).
    for (const entry of failed) pending.add(entry.workspaceId, Date.parse(entry.day), entry.counts);
    if (failed.length) since ??= now();
  };
  return {
    count: async (workspaceId) => {
      const at = now();
      pending.add(workspaceId, at, { api_requests: 1 });
      since ??= at;
      if (at - since >= flushMs) await flush();
    },
    flush,
  };
};
