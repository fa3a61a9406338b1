import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatChartTime, type ChartData, type SeriesLabel } from '../lib/chart';
import { axisGroups, formatValue, gapThreshold, nearestPoint, pointIndexes, seriesGaps, seriesStats } from '../lib/chart-axes';
import { formatTick, zoneLabel } from '../lib/time';

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
/** CSS pixels per point below which a series' points are drawn as dots too (a lone point has no line). */
const DOT_SPACE = 8;
const HEIGHT = 320;

/** Writes the labels into uPlot's legend, each entry with its tooltip (the legend is built once, with the plot). */
const writeLabels = (plot: uPlot, labels: readonly SeriesLabel[]) => {
  const rows = plot.root.querySelectorAll<HTMLElement>('.u-legend .u-series');
  labels.forEach(({ label, title }, i) => {
    plot.series[i + 1].label = label;
    const row = rows[i + 1];
    if (!row) return;
    row.title = title;
    const text = row.querySelector('.u-label');
    if (text) text.textContent = label;
  });
};

/**
 * A canvas line chart (uPlot) of the series, in the console's time zone (its axis says which):
 * 175,000 points draw in well under a second.
 *
 * - Axes: one y axis per payload field (the nearest thing to a unit; see lib/chart-axes.ts), on
 *   alternate sides, each labelled with its fields.
 * - Legend: at the hovered time, every series' value: its own point there, or else its point
 *   nearest in time (with that point's time), never a blank; and each series' min, max and mean
 *   over the chart's points.
 * - Gaps: a series joins its own points across the other series' x values, and breaks where two of
 *   its points are further apart than GAP_FACTOR times its usual spacing (a device that stopped).
 */
export const Chart = ({
  data,
  labels,
  zone,
  onDrawn,
  testId = 'chart',
  xRange,
}: {
  data: ChartData;
  labels: readonly SeriesLabel[];
  /** The IANA zone of the time axis and the legend's times. */
  zone: string;
  onDrawn?: (ms: number) => void;
  testId?: string;
  /** The time axis's bounds (Unix seconds), when the chart shows a range of its own rather than its points' extent. */
  xRange?: [number, number];
}) => {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const labelsNow = useRef(labels);
  labelsNow.current = labels;
  useEffect(() => {
    const root = box.current;
    if (!root) return;
    const started = performance.now();
    const x = data.x;
    const xs = x.length;
    const { groups, axisOf } = axisGroups(data.series);
    const indexes = data.series.map((s) => pointIndexes(s.values));
    const thresholds = indexes.map((points) => gapThreshold(points, x));
    const stats = data.series.map((s) => seriesStats(s.values));
    const timeLabel = `Time (${zoneLabel(zone, xs ? x[xs - 1] * 1000 : Date.now())})`;
    let ticks: string[] = [];
    const statsText = (i: number) => `min ${formatValue(stats[i].min)} · max ${formatValue(stats[i].max)} · mean ${formatValue(stats[i].mean)}`;
    const made = new uPlot(
      {
        width: Math.max(320, root.clientWidth),
        height: HEIGHT,
        // the time axis's ticks fall on the zone's whole hours and days
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), zone),
        scales: {
          x: xRange ? { time: true, range: () => xRange } : { time: true },
          ...Object.fromEntries(groups.map((g) => [g.scale, { auto: true }])),
        },
        axes: [
          {
            label: timeLabel,
            values: (_u, splits, _axis, _space, incr) => (ticks = splits.map((ts) => formatTick(ts, zone, incr))),
          },
          ...groups.map((g, k) => ({
            scale: g.scale,
            side: k % 2 ? 1 : 3,
            label: g.fields.join(', '),
            // a grid for the first axis alone; each axis in its first series' colour when there are several
            grid: { show: k === 0 },
            stroke: groups.length > 1 ? COLORS[g.series[0] % COLORS.length] : undefined,
          })),
        ],
        series: [
          { label: timeLabel, value: (_u: uPlot, ts: number | null) => (ts === null ? '--' : formatChartTime(ts, zone)) },
          ...data.series.map((s, i) => ({
            label: labelsNow.current[i]?.label,
            stroke: COLORS[i % COLORS.length],
            scale: groups[axisOf[i]].scale,
            spanGaps: false,
            // the line breaks only at this series' own long gaps (canvas pixels of the points either side)
            gaps: (u: uPlot, _si: number, idx0: number, idx1: number) =>
              seriesGaps(indexes[i], x, thresholds[i], idx0, idx1).map(([a, b]): [number, number] => [
                Math.round(u.valToPos(a, 'x', true)),
                Math.round(u.valToPos(b, 'x', true)),
              ]),
            value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) => {
              if (idx === null) return statsText(i);
              const at = nearestPoint(indexes[i], x, idx);
              if (at < 0) return `— · ${statsText(i)}`;
              const value = formatValue(s.values[at]!);
              return `${at === idx ? value : `${value} (at ${formatChartTime(x[at], zone)})`} · ${statsText(i)}`;
            },
            // dots where this series' points in view (estimated from its share of all x) are sparse
            points: { show: (u: uPlot, _si: number, i0: number, i1: number) => ((s.points * (i1 - i0 + 1)) / xs) * DOT_SPACE <= u.bbox.width / uPlot.pxRatio },
          })),
        ],
      },
      [x, ...data.series.map((s) => s.values)] as uPlot.AlignedData,
      root,
    );
    plot.current = made;
    writeLabels(made, labelsNow.current);
    // what the axes say, for the tests and screen readers (uPlot draws them on the canvas)
    root.dataset.axes = String(groups.length);
    root.dataset.axisLabels = groups.map((g) => g.fields.join(', ')).join('|');
    root.dataset.xLabel = timeLabel;
    // uPlot paints on the next frame: time to it, and mark it for bench/console.ts
    const frame = requestAnimationFrame(() => {
      root.dataset.xTicks = ticks.join('|');
      performance.mark('fleetstream:chart-drawn');
      onDrawn?.(performance.now() - started);
    });
    const resize = () => box.current && made.setSize({ width: Math.max(320, box.current.clientWidth), height: HEIGHT });
    addEventListener('resize', resize);
    return () => {
      cancelAnimationFrame(frame);
      removeEventListener('resize', resize);
      plot.current = undefined;
      made.destroy();
    };
  }, [data, zone]);
  // names that come after the plot relabel its legend; the canvas is not drawn again
  const key = labels.map((l) => `${l.label}\n${l.title}`).join('\n');
  useEffect(() => {
    if (plot.current) writeLabels(plot.current, labels);
  }, [key]);
  return (
    <div
      ref={box}
      class="chart"
      role="img"
      aria-label={`Chart of ${data.series.length} series, ${data.points} points; times in ${zone}`}
      data-testid={testId}
      data-points={data.points}
      data-zone={zone}
    />
  );
};
