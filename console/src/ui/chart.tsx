import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatChartTime, type ChartData, type SeriesLabel } from '../lib/chart';

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
/** CSS pixels per point below which a series' points are drawn as dots too (a lone point has no line). */
const DOT_SPACE = 8;

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
 * A canvas line chart (uPlot) of the series: 175,000 points draw in well under a second. A series
 * joins its points across the x values of the others (`spanGaps` over its `null`s); the legend,
 * which shows the values under the cursor, reads the time to the microsecond.
 */
export const Chart = ({
  data,
  labels,
  onDrawn,
  testId = 'chart',
  xRange,
}: {
  data: ChartData;
  labels: readonly SeriesLabel[];
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
    if (!box.current) return;
    const started = performance.now();
    const xs = data.x.length;
    const made = new uPlot(
      {
        width: Math.max(320, box.current.clientWidth),
        height: 320,
        scales: { x: xRange ? { time: true, range: () => xRange } : { time: true } },
        series: [
          { value: (_u: uPlot, x: number | null, _s: number, at: number | null) => (at === null || x === null ? '--' : formatChartTime(x)) },
          ...data.series.map((s, i) => ({
            label: labelsNow.current[i]?.label,
            stroke: COLORS[i % COLORS.length],
            spanGaps: true,
            // dots where this series' points in view (estimated from its share of all x) are sparse
            points: { show: (u: uPlot, _si: number, i0: number, i1: number) => ((s.points * (i1 - i0 + 1)) / xs) * DOT_SPACE <= u.bbox.width / uPlot.pxRatio },
          })),
        ],
      },
      [data.x, ...data.series.map((s) => s.values)] as uPlot.AlignedData,
      box.current,
    );
    plot.current = made;
    writeLabels(made, labelsNow.current);
    // uPlot paints on the next frame: time to it, and mark it for bench/console.ts
    const frame = requestAnimationFrame(() => {
      performance.mark('fleetstream:chart-drawn');
      onDrawn?.(performance.now() - started);
    });
    const resize = () => box.current && made.setSize({ width: Math.max(320, box.current.clientWidth), height: 320 });
    addEventListener('resize', resize);
    return () => {
      cancelAnimationFrame(frame);
      removeEventListener('resize', resize);
      plot.current = undefined;
      made.destroy();
    };
  }, [data]);
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
      aria-label={`Chart of ${data.series.length} series, ${data.points} points`}
      data-testid={testId}
      data-points={data.points}
    />
  );
};
