import type { UsageDay } from './api';

const DAY_MS = 24 * 3600 * 1000;

/** What a retention change makes unreadable: nothing (undefined) unless it shortens the retention. */
export interface RetentionCut {
  /** Points with a device time before this stop being answered. */
  cutoff: string;
  /** Days of data lost between the old and the new cutoff; null when the old retention was forever. */
  lostDays: number | null;
}

/** Whether going from `current` to `next` days (null: forever) cuts data, and which. */
export const retentionCut = (current: number | null, next: number | null, now = Date.now()): RetentionCut | undefined => {
  if (next === null || (current !== null && next >= current)) return undefined;
  return { cutoff: new Date(now - next * DAY_MS).toISOString(), lostDays: current === null ? null : current - next };
};

/** The points stored on the usage days before the cutoff's day (an estimate of what the cut hides: by arrival day). */
export const pointsStoredBefore = (days: readonly UsageDay[], cutoff: string) =>
  days.filter((d) => d.date < cutoff.slice(0, 10)).reduce((sum, d) => sum + d.points_stored, 0);

/** "42 of 100" style: a limit with its current use. */
export const useOfLimit = (used: number | undefined, limit: number) =>
  used === undefined ? limit.toLocaleString('en-US') : `${used.toLocaleString('en-US')} of ${limit.toLocaleString('en-US')}`;
