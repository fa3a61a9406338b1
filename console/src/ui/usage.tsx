import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Limits, UsageCounts } from '../lib/api';
import { useOfLimit } from '../lib/guards';
import { formatDay, lastDays, usageCharts, type UsageChart } from '../lib/usage';
import type { PageProps } from './page';
import { Busy, ErrorBox, Field, useLoad } from './components';

const RANGES = [7, 30, 90] as const;

const LIMIT_ROWS: ReadonlyArray<[keyof Limits, string]> = [
  ['workspaces_per_account', 'Workspaces of the account'],
  ['devices', 'Devices'],
  ['fleets', 'Fleets (the default fleet included)'],
  ['api_keys', 'API keys (not revoked)'],
  ['integrations', 'Webhook integrations'],
  ['points_per_device_per_day', 'Data points per device per UTC day'],
  ['requests_per_second_per_key', 'API requests per second per key'],
];

const TOTAL_ROWS: ReadonlyArray<[keyof UsageCounts, string]> = [
  ['points_in', 'Data points received'],
  ['points_stored', 'Data points stored'],
  ['points_refused', 'Data points refused (past a device’s daily limit)'],
  ['api_requests', 'API requests'],
  ['webhook_deliveries', 'Webhook POSTs delivered'],
  ['webhook_failures', 'Webhook POSTs failed'],
];

/** One chart of days (uPlot): a line with a dot per day for each counter. */
const DayChart = ({ x, chart }: { x: Float64Array; chart: UsageChart }) => {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return;
    const plot = new uPlot(
      {
        width: Math.max(320, box.current.clientWidth),
        height: 220,
        scales: { x: { time: true }, y: { range: (_u: uPlot, _min: number, max: number) => [0, Math.max(1, max)] } },
        axes: [{ values: (_u: uPlot, ticks: number[]) => ticks.map(formatDay) }, {}],
        series: [
          { value: (_u: uPlot, v: number | null) => (v === null ? '--' : formatDay(v)) },
          ...chart.series.map((s) => ({ label: s.label, stroke: s.color, points: { show: true } })),
        ],
      },
      [x, ...chart.series.map((s) => s.values)] as uPlot.AlignedData,
      box.current,
    );
    const resize = () => box.current && plot.setSize({ width: Math.max(320, box.current.clientWidth), height: 220 });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [x, chart]);
  return (
    <figure class="usage-chart">
      <figcaption>{chart.title}</figcaption>
      <div
        ref={box}
        class="chart"
        role="img"
        aria-label={`${chart.title} per day: ${chart.series.map((s) => `${s.label} ${s.values.reduce((a, b) => a + b, 0)}`).join(', ')}`}
        data-testid={`usage-chart-${chart.series[0].counter}`}
        data-colors={chart.series.map((s) => `${s.counter}=${s.color}`).join(' ')}
        data-days={x.length}
      />
    </figure>
  );
};

/** A workspace's Usage: its limits, and what it did each UTC day of the chosen range, charted and totalled. */
export const UsagePage = ({ api, workspaceId }: PageProps) => {
  const [days, setDays] = useState<(typeof RANGES)[number]>(30);
  const limits = useLoad(() => api.getLimitsAndUse(workspaceId), [workspaceId]);
  const usage = useLoad(() => api.getUsage(workspaceId, lastDays(days)), [workspaceId, days]);
  // Made once per answer: the charts are drawn again only when the days change.
  const drawn = useMemo(() => (usage.data ? usageCharts(usage.data.days) : undefined), [usage.data]);
  return (
    <>
      <section aria-labelledby="usage-h">
        <h2 id="usage-h">Usage per day (UTC)</h2>
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <Field label="Days">
            <select name="usage-days" value={days} onChange={(e) => setDays(Number(e.currentTarget.value) as (typeof RANGES)[number])}>
              {RANGES.map((n) => (
                <option value={n}>last {n} days</option>
              ))}
            </select>
          </Field>
          <button type="button" onClick={usage.reload}>
            Refresh
          </button>
        </form>
        <ErrorBox error={usage.error} />
        {usage.loading && !usage.data && <Busy label="Loading the usage…" />}
        {drawn?.charts.map((chart) => (
          <DayChart x={drawn.x} chart={chart} />
        ))}
        {usage.data && (
          <table class="list" data-testid="usage-totals">
            <caption>Totals of the {days} days</caption>
            <tbody>
              {TOTAL_ROWS.map(([counter, label]) => (
                <tr>
                  <th scope="row">{label}</th>
                  <td data-counter={counter}>{usage.data!.totals[counter].toLocaleString('en-US')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="limits-h">
        <h2 id="limits-h">Limits</h2>
        <p>
          In use of each limit (“42 of 100”), set by the operator of this deployment. A create past a quota, a data point past a device’s daily limit, or a
          request past the rate is refused with 429.
        </p>
        <ErrorBox error={limits.error} />
        {limits.loading && !limits.data && <Busy label="Loading the limits…" />}
        {limits.data && (
          <table class="list" data-testid="limits">
            <tbody>
              {LIMIT_ROWS.map(([limit, label]) => (
                <tr>
                  <th scope="row">{label}</th>
                  <td data-limit={limit}>{useOfLimit(limits.data!.used?.[limit] ?? undefined, limits.data!.limits[limit])}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
};
