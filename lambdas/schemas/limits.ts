import * as z from 'zod';

/** The quotas counted on the workspace item: things a workspace creates and holds (a delete or revoke gives a place back). */
export const COUNTED_LIMITS = ['devices', 'fleets', 'api_keys', 'integrations', 'identities', 'firmware_versions', 'groups', 'alarm_rules'] as const;
export type CountedLimit = (typeof COUNTED_LIMITS)[number];

/** The quotas counted on the workspace item per UTC day: things a workspace starts, whose cost is spent once started. */
export const DAILY_LIMITS = ['exports_per_day', 'rollouts_per_day'] as const;
export type DailyLimit = (typeof DAILY_LIMITS)[number];

/** A device's quotas per UTC day, counted on its locator item (domain/limits/device-quota.ts). */
export const DEVICE_LIMITS = ['points_per_device_per_day', 'events_per_device_per_day', 'up_messages_per_device_per_day'] as const;
export type DeviceLimit = (typeof DEVICE_LIMITS)[number];

/** Every limit set per workspace (spec/operations.md §5), in the order they are shown. */
export const WORKSPACE_LIMIT_NAMES = [...COUNTED_LIMITS, ...DAILY_LIMITS, ...DEVICE_LIMITS, 'requests_per_second_per_key'] as const;
export type WorkspaceLimitName = (typeof WORKSPACE_LIMIT_NAMES)[number];

/** The limits set per account, counted on the account item: how many workspaces it holds. */
export const ACCOUNT_LIMIT_NAMES = ['workspaces_per_account'] as const;
export type AccountLimitName = (typeof ACCOUNT_LIMIT_NAMES)[number];

/** Every limit, the workspace's then its account's: what `GET /workspaces/{id}/limits` answers. */
export const LIMIT_NAMES = [...WORKSPACE_LIMIT_NAMES, ...ACCOUNT_LIMIT_NAMES] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** A quota checked in the transaction that creates what it counts: on the workspace item, or on the account item. */
export type QuotaName = CountedLimit | DailyLimit | AccountLimitName;

/**
 * The values an operator may give each limit. A workspace always holds its `default` fleet, and an
 * account its first workspace, so they may hold at least one; the forwarder reads a workspace's
 * integrations on every batch, so they stay in the hundreds.
 */
export const LIMIT_RANGES: Readonly<Record<LimitName, { min: number; max: number; what: string }>> = {
  devices: { min: 0, max: 10_000_000, what: 'devices in the workspace' },
  fleets: { min: 1, max: 100_000, what: 'fleets in the workspace, its default fleet included' },
  api_keys: { min: 0, max: 10_000, what: 'API keys of the workspace that are not revoked' },
  integrations: { min: 0, max: 100, what: 'webhook integrations in the workspace' },
  identities: { min: 0, max: 100_000_000, what: 'device identities of the workspace that are not revoked' },
  firmware_versions: { min: 0, max: 100_000, what: 'firmware versions registered in the workspace' },
  groups: { min: 0, max: 100_000, what: 'device groups (saved queries) in the workspace' },
  alarm_rules: { min: 0, max: 10_000, what: 'alarm rules in the workspace' },
  exports_per_day: { min: 0, max: 100_000, what: 'data exports started per UTC day' },
  rollouts_per_day: { min: 0, max: 100_000, what: 'rollouts (fleet-wide jobs and FOTA) started per UTC day' },
  points_per_device_per_day: { min: 0, max: 100_000_000, what: 'data points stored per device per UTC day' },
  events_per_device_per_day: { min: 0, max: 100_000_000, what: 'events a device reports per UTC day, by either door' },
  up_messages_per_device_per_day: {
    min: 0,
    max: 100_000_000,
    what: 'other messages a device sends per UTC day (j/up requests and results, and their HTTPS twins)',
  },
  requests_per_second_per_key: { min: 1, max: 100_000, what: 'management and storage requests per API key (or console session) in each second' },
  workspaces_per_account: { min: 1, max: 100_000, what: 'workspaces of the account' },
};

/**
 * The defaults of a deployment that says nothing else (`cdk.json` context `limits`, docs/limits.md): what a workspace (and an account) gets until the operator sets its own.
 */
export const LIMIT_DEFAULTS: Readonly<Limits> = {
  devices: 10_000,
  fleets: 1_000,
  api_keys: 20,
  integrations: 10,
  identities: 20_000,
  firmware_versions: 1_000,
  groups: 1_000,
  alarm_rules: 100,
  exports_per_day: 100,
  rollouts_per_day: 1_000,
  points_per_device_per_day: 100_000,
  events_per_device_per_day: 10_000,
  up_messages_per_device_per_day: 10_000,
  requests_per_second_per_key: 100,
  workspaces_per_account: 100,
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

const limitsOf = <N extends LimitName>(names: readonly N[]) =>
  z.strictObject(Object.fromEntries(names.map((name) => [name, limitSchema(name)])) as Record<N, ReturnType<typeof limitSchema>>);

/** A workspace's limits, every one of them, its account's included. */
export const LimitsSchema = limitsOf(LIMIT_NAMES).meta({ id: 'Limits' });
export type Limits = Record<LimitName, number>;

/** Some limits: a deployment's defaults in part (`cdk.json` context `limits`). */
export const LimitOverridesSchema = LimitsSchema.partial();
export type LimitOverrides = Partial<Limits>;

/** What an operator sets for one workspace. */
export const WorkspaceLimitOverridesSchema = limitsOf(WORKSPACE_LIMIT_NAMES).partial();
export type WorkspaceLimitOverrides = Partial<Record<WorkspaceLimitName, number>>;

/** What an operator sets for one account. */
export const AccountLimitOverridesSchema = limitsOf(ACCOUNT_LIMIT_NAMES).partial();
export type AccountLimitOverrides = Partial<Record<AccountLimitName, number>>;

/** What the quotas hold now: the counted ones, today's for the daily ones, and the account's workspaces. */
export const QuotaUseSchema = z
  .strictObject(
    Object.fromEntries(
      [...COUNTED_LIMITS, ...DAILY_LIMITS, ...ACCOUNT_LIMIT_NAMES].map((name) => [
        name,
        z
          .int()
          .nonnegative()
          .nullable()
          .meta({ description: `How much of ${name} is in use (today's, for a daily quota); null: not counted yet` }),
      ]),
    ) as Record<QuotaName, z.ZodNullable<z.ZodInt>>,
  )
  .meta({ id: 'QuotaUse' });

export const LimitsResponseSchema = z.object({
  limits: LimitsSchema,
  used: QuotaUseSchema.meta({ description: 'Beside each quota, what it holds now (an addition: "42 of 100 devices")' }),
});
