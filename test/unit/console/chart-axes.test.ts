import { axisGroups, formatValue, gapThreshold, nearestPoint, pointIndexes, seriesGaps, seriesStats } from '../../../console/src/lib/chart-axes';

const series = (field: string, values: (number | null)[]) => ({ field, values });

describe('axes', () => {
  it('gives each field an axis of its own (uptime_s in the hundreds no longer flattens value), and the series of one field one axis', () => {
    const { groups, axisOf } = axisGroups([series('value', [1, 100, null]), series('uptime_s', [0, 270, 12]), series('value', [null, 50, 3])]);

    expect(groups.map((g) => [g.scale, g.fields, g.series, g.magnitude])).toEqual([
      ['y0', ['value'], [0, 2], 100],
      ['y1', ['uptime_s'], [1], 270],
    ]);
    expect(axisOf).toEqual([0, 1, 0]);
  });

  it('keeps one axis for one field whatever its devices’ ranges', () => {
    expect(axisGroups([series('level', [1, 4]), series('level', [20, 24]), series('level', [1000, 2000])]).groups).toHaveLength(1);
  });

  it('makes at most four axes: a fifth field joins the axis nearest it in order of magnitude', () => {
    const { groups, axisOf } = axisGroups([series('a', [1]), series('b', [1000]), series('c', [1e6]), series('d', [0.01]), series('e', [2000])]);

    expect(groups.map((g) => g.fields)).toEqual([['a'], ['b', 'e'], ['c'], ['d']]);
    expect(axisOf).toEqual([0, 1, 2, 3, 1]);
  });
});

describe('the legend', () => {
  const x = [0, 10, 20, 30, 40, 100];

  it('has min, max and mean of each series’ points', () => {
    expect(seriesStats([3, null, 1, 8])).toEqual({ min: 1, max: 8, mean: 4, count: 3 });
    expect(seriesStats([null]).count).toBe(0);
    expect(Number.isNaN(seriesStats([]).mean)).toBe(true);
  });

  it('shows every series at the hovered time: its own point there, else its point nearest in time', () => {
    const points = pointIndexes([null, 5, null, null, 7, null]);

    expect([...points]).toEqual([1, 4]);
    expect(nearestPoint(points, x, 1)).toBe(1);
    expect(nearestPoint(points, x, 0)).toBe(1);
    expect(nearestPoint(points, x, 2)).toBe(1);
    expect(nearestPoint(points, x, 3)).toBe(4);
    expect(nearestPoint(points, x, 5)).toBe(4);
    expect(nearestPoint(pointIndexes([null, null]), x, 1)).toBe(-1);
  });

  it('writes values with four significant digits', () => {
    expect([formatValue(21.34567), formatValue(270), formatValue(1234567), formatValue(0), formatValue(Number.NaN)]).toEqual([
      '21.35',
      '270',
      '1.235e+6',
      '0',
      '—',
    ]);
  });
});

describe('gaps', () => {
  it('breaks a line where two of its points are more than five times its usual spacing apart, not at the other series’ x', () => {
    // a point a minute, interleaved with another series' x (the odd indexes), then a silence of 20 minutes
    const x = [0, 30, 60, 90, 120, 150, 180, 1380, 1440];
    const values = [1, null, 2, null, 3, null, 4, 5, 6];
    const points = pointIndexes(values);
    const threshold = gapThreshold(points, x);

    expect(threshold).toBe(300);
    expect(seriesGaps(points, x, threshold)).toEqual([[180, 1380]]);
    // only the gaps in view
    expect(seriesGaps(points, x, threshold, 0, 3)).toEqual([]);
  });

  it('finds no gap in a series of fewer than three points', () => {
    const points = pointIndexes([1, 2]);
    expect(gapThreshold(points, [0, 1000])).toBe(Number.POSITIVE_INFINITY);
    expect(seriesGaps(points, [0, 1000], Number.POSITIVE_INFINITY)).toEqual([]);
  });
});
