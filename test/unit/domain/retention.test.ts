import { restampFrom, retentionCutoff, withinRetention } from '../../../lambdas/domain/data/retention';
import { expiresAt } from '../../../lambdas/stores/timeseries/keys';

const NOW = Date.parse('2026-06-15T12:00:00.000Z');
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('read-time retention', () => {
  const range = { workspaceId: 'wks-1' };

  it('leaves a range alone when points are kept forever', () => {
    expect(withinRetention({ ...range, start: iso(0) }, null, NOW)).toEqual({ ...range, start: iso(0) });
    expect(withinRetention(range, undefined, NOW)).toBe(range);
    expect(retentionCutoff(null, NOW)).toBeUndefined();
  });

  it('moves the start up to now minus the retention, whether the range had one or not', () => {
    expect(withinRetention(range, 30, NOW)).toEqual({ ...range, start: iso(NOW - 30 * DAY) });
    expect(withinRetention({ ...range, start: iso(NOW - 90 * DAY), end: iso(NOW) }, 30, NOW)).toEqual({ ...range, start: iso(NOW - 30 * DAY), end: iso(NOW) });
  });

  it('keeps a start that is already within the retention, to the microsecond', () => {
    const start = '2026-06-10T00:00:00.000123Z';
    expect(withinRetention({ ...range, start }, 30, NOW).start).toBe(start);
    expect(withinRetention({ ...range, start: iso(NOW - DAY) }, 1, NOW).start).toBe(iso(NOW - DAY));
  });

  it('leaves a range that ends before the cutoff empty: its start passes its end', () => {
    const narrowed = withinRetention({ ...range, start: iso(NOW - 60 * DAY), end: iso(NOW - 40 * DAY) }, 30, NOW);

    expect(Date.parse(narrowed.start!)).toBeGreaterThan(Date.parse(narrowed.end!));
  });
});

describe('what a retention change owes its re-stamp', () => {
  it('is every item when either setting keeps points forever, or an earlier change still owes every item', () => {
    expect(restampFrom(null, 30, NOW, undefined)).toBe('');
    expect(restampFrom(30, null, NOW, undefined)).toBe('');
    expect(restampFrom(30, 90, NOW, '')).toBe('');
  });

  it('is the items the longer setting keeps, from a span before, or what an earlier change owes when that is earlier', () => {
    const from90 = iso(NOW - 90 * DAY - 10_000);

    expect(restampFrom(30, 90, NOW, undefined)).toBe(from90);
    expect(restampFrom(90, 30, NOW, undefined)).toBe(from90);
    expect(restampFrom(90, 30, NOW, iso(NOW - 400 * DAY))).toBe(iso(NOW - 400 * DAY));
    expect(restampFrom(90, 30, NOW, iso(NOW - DAY))).toBe(from90);
  });
});

describe('an item’s expiry', () => {
  it('is its latest point plus the retention, in whole seconds rounded up', () => {
    expect(expiresAt(NOW + 1, 30, 0)).toBe(Math.ceil((NOW + 1 + 30 * DAY) / 1000));
  });

  it('is never before the given time: an expiry already past becomes that time (TTL ignores one more than five years past)', () => {
    const old = Date.parse('2001-01-01T00:00:00Z');

    expect(expiresAt(old, 30, NOW)).toBe(NOW / 1000);
  });
});
