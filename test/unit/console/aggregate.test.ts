import { aggregateChart, EVERY_CHOICES, everyFor } from '../../../console/src/lib/aggregate';
import { EVERY_VALUES } from '../../../lambdas/schemas/timeseries';

const DAY = 86_400_000;

describe('the console’s bucket length for a range', () => {
  it('offers exactly the lengths the API takes', () => {
    expect(EVERY_CHOICES.map((c) => c.every)).toEqual([...EVERY_VALUES]);
  });

  it('draws a day in 2-minute buckets, a week in 12 minutes, a month in hours, a year in 12 hours', () => {
    expect([everyFor(DAY), everyFor(7 * DAY), everyFor(30 * DAY), everyFor(31 * DAY), everyFor(365 * DAY)]).toEqual(['2m', '12m', '1h', '1h', '12h']);
    expect(everyFor(60_000)).toBe('1m');
    expect(everyFor(100 * 365 * DAY)).toBe('31d');
  });

  it('keeps a month of ten devices within one answer of 10,000 buckets', () => {
    const every = everyFor(31 * DAY, 10);
    const length = EVERY_CHOICES.find((c) => c.every === every)!.ms;

    expect(every).toBe('1h');
    expect(Math.ceil((31 * DAY) / length) * 10).toBeLessThanOrEqual(10_000);
    expect(everyFor(31 * DAY, 40)).toBe('3h');
  });
});

describe('an aggregation as chart columns', () => {
  it('makes a line per device of its averages, null where a device has no bucket', () => {
    const chart = aggregateChart(
      [
        { start: '2026-01-01T00:00:00.000Z', device_id: 'dev-a', avg: 1, count: 2 },
        { start: '2026-01-01T00:00:00.000Z', device_id: 'dev-b', avg: 5, count: 1 },
        { start: '2026-01-01T01:00:00.000Z', device_id: 'dev-a', avg: 2, count: 1 },
        { start: '2026-01-01T02:00:00.000Z', device_id: 'dev-b', avg: null, count: 2 },
      ],
      'climate',
      'level',
    );

    expect([...chart.x]).toEqual([0, 3600, 7200].map((s) => Date.parse('2026-01-01T00:00:00Z') / 1000 + s));
    expect(chart.series.map((s) => [s.deviceId, s.tag, s.field, s.values, s.points])).toEqual([
      ['dev-a', 'climate', 'level', [1, 2, null], 2],
      ['dev-b', 'climate', 'level', [5, null, null], 1],
    ]);
    expect(chart.points).toBe(3);
  });
});
