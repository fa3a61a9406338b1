import type { UsageCounts, UsageDay } from './api';

const DAY_MS = 24 * 3600 * 1000;

/** A UTC day, YYYY-MM-DD. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The usage query of the last `days` UTC days, today included. */
export const lastDays = (days: number, now = Date.now()) => ({ start: utcDay(now - (days - 1) * DAY_MS), end: utcDay(now) });

/**
 * Each counter's colour, by what it means: what came in (blue), what succeeded (green), what failed
 * or was refused (red), so that failures are never drawn in a success colour.
 */
export const COUNTER_COLORS: Readonly<Record<keyof UsageCounts, string>> = {
  points_in: '#1f77b4',
  points_stored: '#2ca02c',
  points_refused: '#d62728',
  api_requests: '#1f77b4',
  webhook_deliveries: '#2ca02c',
  webhook_failures: '#d62728',
};

/** One chart of the Usage page: its title and its lines, one value per day. */
export interface UsageChart {
  title: string;
  series: Array<{ counter: keyof UsageCounts; label: string; values: number[]; color: string }>;
}

/** What each chart draws, in order: the data points, the API's requests, the webhooks' POSTs. */
export const USAGE_CHARTS: ReadonlyArray<{ title: string; counters: ReadonlyArray<[keyof UsageCounts, string]> }> = [
  {
    title: 'Data points',
    counters: [
      ['points_in', 'received'],
      ['points_stored', 'stored'],
      ['points_refused', 'refused'],
    ],
  },
  { title: 'API requests', counters: [['api_requests', 'requests']] },
  {
    title: 'Webhook POSTs',
    counters: [
      ['webhook_deliveries', 'delivered'],
      ['webhook_failures', 'failed'],
    ],
  },
];

/**
 * The Usage page's charts: a shared x of the days (Unix seconds of each UTC midnight, as uPlot's
 * time scale reads them) and each chart's lines.
 */
export const usageCharts = (days: readonly UsageDay[]): { x: Float64Array; charts: UsageChart[] } => ({
  x: Float64Array.from(days, (d) => Date.parse(`${d.date}T00:00:00Z`) / 1000),
  charts: USAGE_CHARTS.map(({ title, counters }) => ({
    title,
    series: counters.map(([counter, label]) => ({ counter, label, values: days.map((d) => d[counter]), color: COUNTER_COLORS[counter] })),
  })),
});

/** A day on the chart's axis and in its legend: `Mon 24 Nov` (UTC, like the days). */
export const formatDay = (seconds: number) =>
  new Date(seconds * 1000).toLocaleDateString('en-GB', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' });
