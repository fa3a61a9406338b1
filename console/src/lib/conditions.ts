import type { Condition } from './api';

/**
 * A device's conditions as its page lists them: the open ones first (newest first), then the
 * closed ones (newest first), each once even when both reads met it (a close between them).
 */
export const conditionRows = (open: Condition[], closed: Condition[]): Condition[] => {
  const closedKeys = new Set(closed.map((c) => `${c.uuid}@${c.start}`));
  const byStartDesc = (a: Condition, b: Condition) => b.start.localeCompare(a.start);
  return [...open.filter((c) => !closedKeys.has(`${c.uuid}@${c.start}`)).sort(byStartDesc), ...[...closed].sort(byStartDesc)];
};

/** A duration in words a person reads at a glance: `42 s`, `5 min 30 s`, `3 h 20 min`, `2 d 4 h`. */
export const durationText = (seconds: number): string => {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
  return `${Math.floor(s / 86_400)} d${Math.floor((s % 86_400) / 3600) ? ` ${Math.floor((s % 86_400) / 3600)} h` : ''}`;
};

/** How long a condition lasted, or has lasted so far when still open. */
export const conditionDuration = (condition: Condition, now = Date.now()) =>
  condition.duration_seconds ?? Math.max(0, (now - Date.parse(condition.start)) / 1000);
