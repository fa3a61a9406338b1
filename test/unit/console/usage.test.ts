import type { UsageDay } from '../../../console/src/lib/api';
import { parseRoute, routeHash } from '../../../console/src/lib/router';
import { formatDay, lastDays, usageCharts } from '../../../console/src/lib/usage';

const day = (date: string, counts: Partial<UsageDay> = {}): UsageDay => ({
  date,
  points_in: 0,
  points_stored: 0,
  points_refused: 0,
  api_requests: 0,
  webhook_deliveries: 0,
  webhook_failures: 0,
  ...counts,
});

describe('the Usage page’s data', () => {
  it('asks for the last N UTC days, today included', () => {
    expect(lastDays(7, Date.parse('2026-03-10T23:59:59Z'))).toEqual({ start: '2026-03-04', end: '2026-03-10' });
    expect(lastDays(1, Date.parse('2026-03-01T00:00:00Z'))).toEqual({ start: '2026-03-01', end: '2026-03-01' });
  });

  it('charts each counter per day, on the days’ UTC midnights', () => {
    const { x, charts } = usageCharts([
      day('2026-02-28', { points_in: 12, points_stored: 10, points_refused: 2 }),
      day('2026-03-01', { api_requests: 40, webhook_failures: 1 }),
    ]);

    expect([...x]).toEqual([Date.parse('2026-02-28T00:00:00Z') / 1000, Date.parse('2026-03-01T00:00:00Z') / 1000]);
    expect(charts.map((c) => [c.title, c.series.map((s) => [s.label, s.values])])).toEqual([
      [
        'Data points',
        [
          ['received', [12, 0]],
          ['stored', [10, 0]],
          ['refused', [2, 0]],
        ],
      ],
      ['API requests', [['requests', [0, 40]]]],
      [
        'Webhook POSTs',
        [
          ['delivered', [0, 0]],
          ['failed', [0, 1]],
        ],
      ],
    ]);
  });

  it('draws failures and refusals in the failure colour and successes in the success colour, whatever their place in a chart', () => {
    const colours = Object.fromEntries(usageCharts([day('2026-03-01')]).charts.flatMap((c) => c.series.map((s) => [s.counter, s.color])));

    expect(colours.webhook_failures).toBe('#d62728');
    expect(colours.points_refused).toBe('#d62728');
    expect(colours.webhook_deliveries).toBe('#2ca02c');
    expect(colours.points_stored).toBe('#2ca02c');
  });

  it('names a day as its UTC date, whatever the browser’s zone', () => {
    expect(formatDay(Date.parse('2026-03-01T00:00:00Z') / 1000)).toBe('Sun 1 Mar');
  });

  it('has its own address', () => {
    expect(parseRoute('#/w/wks-1/usage')).toEqual({ page: 'usage', workspaceId: 'wks-1' });
    expect(routeHash({ page: 'usage', workspaceId: 'wks-1' })).toBe('#/w/wks-1/usage');
  });
});
