import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { logger } from '../../shared/logger';
import { onShutdown } from '../../shared/shutdown';
import { USAGE_COUNTERS, dayOf, usageRange, type UsageCounter, type UsageCounts, type UsageDay } from '../../schemas/usage';
import { addUsage, readUsageDays, type UsageIncrement } from '../../stores/usage-store';
import { requireWorkspace } from '../tenancy/workspaces';

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

/** Counts a container keeps and writes in batches ({@link usageBuffer}). */
export interface UsageBuffer {
  /** Adds counts; writes all that is kept when no write was made in the last `flushMs`. */
  add: (tally: UsageTally) => Promise<void>;
  /** Writes whatever is kept now. */
  flush: () => Promise<void>;
}

/**
 * Counts a container writes at most once per `flushMs` (one UpdateItem per workspace and day), as
 * the forwarder writes its statuses: counts added when the last write is `flushMs` old or more are
 * written at once, with whatever was kept; counts added sooner are kept for the first add after
 * that. The API handlers' `api_requests` use it (USAGE_FLUSH_SECONDS), and the forwarder's webhook
 * POSTs (FORWARDER_CACHE_SECONDS). The bound: a container that keeps working writes its counts
 * within `flushMs`; what it added in the `flushMs` after its last write waits for its next
 * invocation, or for the container's end ({@link onShutdown}: Lambda's SIGTERM to a container whose
 * module registered the shutdown extension), and is lost only if the container crashes first. A
 * workspace's day whose write fails is kept for the next one. `flushMs` 0 writes at every add.
 */
export const usageBuffer = (db: Db, { flushMs, now = Date.now }: { flushMs: number; now?: () => number }): UsageBuffer => {
  let pending = new UsageTally();
  let written = Number.NEGATIVE_INFINITY;
  const flush = async () => {
    if (!pending.size) return;
    const writing = pending;
    pending = new UsageTally();
    written = now();
    const failed = await recordUsage(db, writing);
    // Kept for the next write (counts added meanwhile are in `pending` already).
    for (const entry of failed) pending.add(entry.workspaceId, Date.parse(entry.day), entry.counts);
  };
  onShutdown(flush);
  return {
    add: async (tally) => {
      if (!tally.size) return;
      pending.merge(tally);
      if (now() - written >= flushMs) await flush();
    },
    flush,
  };
};
