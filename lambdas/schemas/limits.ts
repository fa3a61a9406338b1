import * as z from 'zod';

/** The quotas counted on the workspace item: things a workspace creates and holds. */
export const COUNTED_LIMITS = ['devices', 'fleets', 'api_keys', 'integrations'] as const;
export type CountedLimit = (typeof COUNTED_LIMITS)[number];

/** Every per-workspace limit (spec/operations.md §5), in the order they are shown. */
export const LIMIT_NAMES = [...COUNTED_LIMITS, 'points_per_device_per_day', 'requests_per_second_per_key'] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/**
 * The values an operator may give each limit. A workspace always holds its `default` fleet, so it
 * may hold at least one fleet; the forwarder reads a workspace's integrations on every batch, so
 * they stay in the hundreds.
 */
export const LIMIT_RANGES: Readonly<Record<LimitName, { min: number; max: number; what: string }>> = {
  devices: { min: 0, max: 10_000_000, what: 'devices in the workspace' },
  fleets: { min: 1, max: 100_000, what: 'fleets in the workspace, its default fleet included' },
  api_keys: { min: 0, max: 10_000, what: 'API keys of the workspace that are not revoked' },
  integrations: { min: 0, max: 100, what: 'webhook integrations in the workspace' },
  points_per_device_per_day: { min: 0, max: 100_000_000, what: 'data points stored per device per UTC day' },
  requests_per_second_per_key: { min: 1, max: 100_000, what: 'management and storage requests per API key (or console session) in each second' },
};

/**
 * The defaults of a deployment that says nothing else (`cdk.json` context `limits`, docs/limits.md): what a workspace gets until the operator sets its own.
 */
export const LIMIT_DEFAULTS: Readonly<Limits> = {
  devices: 10_000,
  fleets: 1_000,
  api_keys: 20,
  integrations: 10,
  points_per_device_per_day: 100_000,
  requests_per_second_per_key: 100,
};

const limitSchema = (name: LimitName) => {
  const { min, max, what } = LIMIT_RANGES[name];
  return z
    .number()
    .int(`Must be a whole number.`)
    .min(min, `Must be at least ${min}.`)
    .max(max, `Must be at most ${max}.`)
    .meta({ description: `Most ${what} (${min}–${max})` });
};

/** A workspace's limits, every one of them. */
export const LimitsSchema = z
  .strictObject(Object.fromEntries(LIMIT_NAMES.map((name) => [name, limitSchema(name)])) as Record<LimitName, ReturnType<typeof limitSchema>>)
  .meta({ id: 'Limits' });
export type Limits = Record<LimitName, number>;

/** Some of a workspace's limits: what an operator set for it, or a deployment's defaults in part. */
export const LimitOverridesSchema = LimitsSchema.partial();
export type LimitOverrides = Partial<Limits>;

export const LimitsResponseSchema = z.object({ limits: LimitsSchema });
