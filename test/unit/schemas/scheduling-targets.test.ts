import { FleetSchedulingQuerySchema } from '../../../lambdas/schemas/dry-run';
import { RolloutSettingsInputSchema } from '../../../lambdas/schemas/rollout-settings';

describe('the target of a fleet-wide scheduling (query)', () => {
  it.each([
    ['no target', {}, true],
    ['a query', { q: 'tags.site = "milan"' }, true],
    ['a group and a fleet', { group: 'grp-0mx1abc', fleet: ['flt-1'] }, true],
    ['a group and a query', { group: 'grp-0mx1abc', q: 'name = "a"' }, false],
    ['an empty query', { q: '' }, false],
    ['a query of 2,001 characters', { q: 'x'.repeat(2001) }, false],
    ['a group ID with a space', { group: 'grp 1' }, false],
  ])('%s is accepted: %s', (_what, query, accepted) => {
    expect(FleetSchedulingQuerySchema.safeParse(query).success).toBe(accepted);
  });

  it('names query.group when both group and q are given', () => {
    const parsed = FleetSchedulingQuerySchema.safeParse({ group: 'grp-1', q: 'name = "a"' });

    expect(parsed.error?.issues).toEqual([expect.objectContaining({ path: ['group'], message: 'Give either group or q, not both.' })]);
  });
});

describe('the continuous setting', () => {
  it.each([
    [{ continuous: true }, true],
    [{ continuous: false, max_per_minute: 5 }, true],
    [{ continuous: 'true' }, false],
    [{ continuous: 1 }, false],
  ])('%j is accepted: %s', (settings, accepted) => {
    expect(RolloutSettingsInputSchema.safeParse(settings).success).toBe(accepted);
  });
});
