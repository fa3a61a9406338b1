import { silentSince, silentTagsOf } from '../../../../lambdas/domain/alarms/silent-tags';
import type { DetectedRule } from '../../../../lambdas/domain/alarms/detection';

const rule = (fields: Partial<DetectedRule>): DetectedRule => ({
  id: 'alr-1',
  kind: 'silent',
  for_seconds: 60,
  enabled: true,
  tag: null,
  target: { fleets: [], group: null, q: null },
  workspace_id: 'wks-1',
  account_id: 'acc-1',
  ...fields,
});

describe('what a silent rule watches of a device (its tag)', () => {
  const device = { last_seen_at: '2026-11-29T10:05:00.000Z', last_seen_tags: { env: '2026-11-29T10:00:00.000Z' } };

  it('reads the newest point on any tag for a rule without one', () => {
    expect(silentSince(rule({}), device)).toBe('2026-11-29T10:05:00.000Z');
  });

  it('reads only the newest point on its tag for a rule with one, none when it never published on it', () => {
    expect(silentSince(rule({ tag: 'env' }), device)).toBe('2026-11-29T10:00:00.000Z');
    expect(silentSince(rule({ tag: 'door' }), device)).toBeUndefined();
    expect(silentSince(rule({ tag: 'env' }), { last_seen_at: '2026-11-29T10:05:00.000Z' })).toBeUndefined();
  });

  it('reads nothing of a device that never published', () => {
    expect(silentSince(rule({}), {})).toBeUndefined();
  });

  it('keeps per device only the tags that enabled silent rules name', () => {
    const named = silentTagsOf([
      rule({ tag: 'env' }),
      rule({ tag: 'env', id: 'alr-2' }),
      rule({ tag: 'door', enabled: false }),
      rule({ tag: 'power', kind: 'condition' }),
      rule({ tag: null }),
    ]);
    expect([...named]).toEqual(['env']);
  });
});
