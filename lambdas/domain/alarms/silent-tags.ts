import type { DetectedRule } from './detection';

/**
 * The device attribute that keeps, per data tag a `silent` rule names, the arrival of the
 * device's newest point on it (to within a minute: domain/data/tag-seen.ts), beside its
 * `last_seen_at` (any tag).
 */
export const LAST_SEEN_TAGS = 'last_seen_tags';

/** What a `silent` rule's watch reads of a device: its newest point, and its newest per named tag. */
export interface SeenDevice {
  last_seen_at?: unknown;
  last_seen_tags?: unknown;
}

/**
 * When a device last published what a `silent` rule watches: on the rule's `tag` when it names one,
 * else on any; undefined for a device that never published (on that tag). The caller counts a
 * silence on a tag never published from its timer's start (the device's first point, or its
 * newest when a backfill started it).
 */
export const silentSince = (rule: Pick<DetectedRule, 'tag'>, device: SeenDevice): string | undefined => {
  if (typeof device.last_seen_at !== 'string') return undefined;
  if (rule.tag === null) return device.last_seen_at;
  const tags = device.last_seen_tags as Record<string, unknown> | undefined;
  const onTag = tags?.[rule.tag];
  return typeof onTag === 'string' ? onTag : undefined;
};

/** The tags the workspace's enabled `silent` rules name: the tags whose points' arrival is kept per device. */
export const silentTagsOf = (rules: readonly DetectedRule[]) =>
  new Set(rules.flatMap((r) => (r.enabled && r.kind === 'silent' && r.tag !== null ? [r.tag] : [])));
