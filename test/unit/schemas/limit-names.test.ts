import {
  ACCOUNT_LIMIT_NAMES,
  AccountLimitOverridesSchema,
  LIMIT_DEFAULTS,
  LIMIT_NAMES,
  LIMIT_RANGES,
  LimitsSchema,
  WORKSPACE_LIMIT_NAMES,
  WorkspaceLimitOverridesSchema,
} from '../../../lambdas/schemas/limits';

describe('the limits', () => {
  it('gives every limit a default within its range, and the answer takes exactly the defaults', () => {
    for (const name of LIMIT_NAMES) {
      expect([name, LIMIT_DEFAULTS[name] >= LIMIT_RANGES[name].min && LIMIT_DEFAULTS[name] <= LIMIT_RANGES[name].max]).toEqual([name, true]);
    }
    expect(LimitsSchema.parse(LIMIT_DEFAULTS)).toEqual(LIMIT_DEFAULTS);
  });

  it('keeps the limits of v3 and the first quotas, and adds the new ones beside them', () => {
    expect(LIMIT_NAMES).toEqual(
      expect.arrayContaining(['devices', 'fleets', 'api_keys', 'integrations', 'points_per_device_per_day', 'requests_per_second_per_key']),
    );
    expect(LIMIT_NAMES).toEqual(
      expect.arrayContaining([
        'identities',
        'firmware_versions',
        'exports_per_day',
        'rollouts_per_day',
        'events_per_device_per_day',
        'up_messages_per_device_per_day',
        'workspaces_per_account',
      ]),
    );
  });

  it('sets each limit on one holder only: a workspace’s on a workspace, an account’s on an account', () => {
    expect(WORKSPACE_LIMIT_NAMES.filter((name) => (ACCOUNT_LIMIT_NAMES as readonly string[]).includes(name))).toEqual([]);
    expect(WorkspaceLimitOverridesSchema.safeParse({ workspaces_per_account: 3 }).success).toBe(false);
    expect(AccountLimitOverridesSchema.safeParse({ devices: 3 }).success).toBe(false);
    expect(AccountLimitOverridesSchema.parse({ workspaces_per_account: 3 })).toEqual({ workspaces_per_account: 3 });
    expect(AccountLimitOverridesSchema.safeParse({ workspaces_per_account: 0 }).success).toBe(false);
  });
});
