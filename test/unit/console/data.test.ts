import type { TimeseriesRecord } from '../../../console/src/lib/api';
import { extractSeries, formatChartTime, numericFields, parseTimestamp, seriesLabels, shortName, timestampParser } from '../../../console/src/lib/chart';
import { parseConfig } from '../../../console/src/lib/config';
import { readDeviceNames } from '../../../console/src/lib/device-names';
import { exportFileName, recordsToCsv, recordsToJson } from '../../../console/src/lib/export';
import { parseJsonObject, parseList } from '../../../console/src/lib/json-input';
import { parseRoute, routeHash, type Route } from '../../../console/src/lib/router';
import { filterRows, sortRows, toggleSort, visibleRange } from '../../../console/src/lib/table';

const record = (device: string, tag: string, at: string, payload: unknown): TimeseriesRecord => ({
  timestamp_device: at,
  timestamp_in: at,
  fleet_id: 'flt-1',
  device_id: device,
  tag,
  payload,
});

describe('CSV and JSON export', () => {
  it('writes a header, CRLF lines, the payload as JSON, and quotes what must be quoted', () => {
    const csv = recordsToCsv([record('dev-1', 'a,b', '2026-01-01T00:00:00.000Z', { t: 1, s: 'say "hi"' })]);
    expect(csv).toBe(
      'timestamp_device,timestamp_in,fleet_id,device_id,tag,payload\r\n' +
        '2026-01-01T00:00:00.000Z,2026-01-01T00:00:00.000Z,flt-1,dev-1,"a,b","{""t"":1,""s"":""say \\""hi\\""""}"\r\n',
    );
  });

  it('defuses a formula in a cell but leaves negative numbers alone', () => {
    const csv = recordsToCsv([record('dev-1', '=cmd', 't', -3.5), record('dev-1', '@x', 't', '+1')]);
    const lines = csv.split('\r\n');
    expect(lines[1].split(',')).toEqual(['t', 't', 'flt-1', 'dev-1', "'=cmd", '-3.5']);
    // a string payload "+1" is JSON "\"+1\"": it starts with a quote, no formula
    expect(lines[2].split(',').slice(4)).toEqual(["'@x", '"""+1"""']);
  });

  it('exports JSON as the storage query answers it, and names files safely', () => {
    const records = [record('dev-1', 't', '2026-01-01T00:00:00.000Z', 1)];
    expect(JSON.parse(recordsToJson(records))).toEqual({ result: records });
    expect(exportFileName('wks-1', '2026-01-01T00:00:00.000Z', undefined, 'csv')).toBe('wks-1_2026-01-01T00-00-00.000Z.csv');
  });
});

describe('chart data', () => {
  it('finds numeric leaves by dotted path; a bare number is `value`', () => {
    expect(numericFields({ a: 1, b: { c: 2, d: 'x', e: [3] }, f: true, g: Number.NaN })).toEqual([
      ['a', 1],
      ['b.c', 2],
      ['b.e.0', 3],
    ]);
    expect(numericFields(7)).toEqual([['value', 7]]);
  });

  it('sorts by device time, one series per device, tag and field, null where a series has no point', () => {
    const data = extractSeries([
      record('d2', 't', '2026-01-01T00:00:02.000Z', { v: 20 }),
      record('d1', 't', '2026-01-01T00:00:01.000Z', { v: 1 }),
      record('d1', 't', '2026-01-01T00:00:02.000Z', { v: 2 }),
      record('d1', 'x', '2026-01-01T00:00:03.000Z', 'not a number'),
    ]);
    const start = Date.parse('2026-01-01T00:00:01.000Z') / 1000;
    expect(Array.from(data.x)).toEqual([start, start + 1, start + 2]);
    expect(data.series.map(({ deviceId, fleetId, tag, field, points }) => ({ deviceId, fleetId, tag, field, points }))).toEqual([
      { deviceId: 'd1', fleetId: 'flt-1', tag: 't', field: 'v', points: 2 },
      { deviceId: 'd2', fleetId: 'flt-1', tag: 't', field: 'v', points: 1 },
    ]);
    expect(data.series[0].values).toEqual([1, 2, null]);
    expect(data.series[1].values).toEqual([null, 20, null]);
    expect(data.points).toBe(3);
  });

  it('gives each of three devices at its own times a series with real values and nulls, never NaN', () => {
    const base = Date.parse('2026-11-25T10:00:00.000Z');
    const records = ['d1', 'd2', 'd3'].flatMap((device, k) =>
      Array.from({ length: 4 }, (_, i) => record(device, 't', new Date(base + i * 60_000 + k * 20_000).toISOString(), { v: 10 * k + i })),
    );
    const data = extractSeries(records);
    expect(data.x).toHaveLength(12);
    for (const [k, series] of data.series.entries()) {
      expect(series.values.filter((v) => v !== null)).toEqual([10 * k, 10 * k + 1, 10 * k + 2, 10 * k + 3]);
      expect(series.values.filter((v) => v === null)).toHaveLength(8);
      expect(series.values.some((v) => Number.isNaN(v))).toBe(false);
    }
  });

  it('keeps two points of one millisecond apart by their microseconds, and ms-only times beside them', () => {
    const data = extractSeries([
      record('d1', 't', '2026-11-25T10:00:00.123457Z', { v: 2 }),
      record('d1', 't', '2026-11-25T10:00:00.123456Z', { v: 1 }),
      record('d1', 't', '2026-11-25T10:00:00.123Z', { v: 0 }),
      record('d1', 't', '2026-11-25T10:00:00.124Z', { v: 3 }),
    ]);
    const second = Date.parse('2026-11-25T10:00:00Z') / 1000;
    expect(data.x).toHaveLength(4);
    expect(data.x[1] - data.x[0]).toBeCloseTo(0.000456, 6);
    expect(data.x[2] - data.x[1]).toBeCloseTo(0.000001, 6);
    expect(data.x[0]).toBe(second + 0.123);
    expect(data.series[0].values).toEqual([0, 1, 2, 3]);
    expect(data.points).toBe(4);
  });

  it('leaves out a record whose time cannot be read', () => {
    const data = extractSeries([record('d1', 't', 'yesterday', { v: 1 }), record('d1', 't', '2026-01-01T00:00:00Z', { v: 2 })]);
    expect(data.series[0].values).toEqual([2]);
  });

  it('draws at most the series cap and counts the rest as dropped', () => {
    const records = Array.from({ length: 5 }, (_, i) => record(`d${i}`, 't', '2026-01-01T00:00:00.000Z', { v: i }));
    const data = extractSeries(records, 3);
    expect(data.series).toHaveLength(3);
    expect(data.dropped).toBe(2);
  });

  it.each([
    ['2026-11-25T10:00:00Z', 0],
    ['2026-11-25T10:00:00.1Z', 0.1],
    ['2026-11-25T10:00:00.123Z', 0.123],
    ['2026-11-25T10:00:00.123456Z', 0.123456],
    ['2026-11-25T10:00:00.123456789Z', 0.123456],
    ['2026-11-25t10:00:00.123456z', 0.123456],
    ['2026-11-25T12:00:00.123456+02:00', 0.123456],
    ['2026-11-25T05:30:00.5-04:30', 0.5],
  ])('reads %s to the microsecond', (text, fraction) => {
    // a double holds today's Unix seconds to about 0.24 µs
    const second = Date.parse('2026-11-25T10:00:00Z') / 1000;
    expect(parseTimestamp(text) - second).toBeCloseTo(fraction, 6);
  });

  it.each([
    '',
    'yesterday',
    '2026-11-25',
    '2026-11-25T10:00:00',
    '2026-11-25T10:00:00.Z',
    '2026-11-25T10:61:00Z',
    '2026-11-25T10:00:0xZ',
    '2026-13-25T10:00:00Z',
  ])('reads %j as no time (NaN)', (text) => {
    expect(parseTimestamp(text)).toBeNaN();
  });

  it('reads times across hours and days with one parser as Date.parse does, to the millisecond', () => {
    const parse = timestampParser();
    const base = Date.parse('2026-12-31T22:59:58.000Z');
    for (let ms = 0; ms < 3 * 3600_000; ms += 997_003) {
      const text = new Date(base + ms).toISOString();
      expect(parse(text)).toBeCloseTo(Date.parse(text) / 1000, 6);
    }
  });

  it('extracts 175,000 points into typed columns', () => {
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const records = Array.from({ length: 175_000 }, (_, i) => record('d1', 't', new Date(base + i * 1000).toISOString(), { v: i }));
    const data = extractSeries(records);
    expect(data.x).toHaveLength(175_000);
    expect(data.points).toBe(175_000);
    expect(data.series[0].values[174_999]).toBe(174_999);
  });

  it('labels series by device name, the ID where the name is unknown or shared', () => {
    const series = extractSeries([
      record('dev-a', 't', '2026-01-01T00:00:00Z', { v: 1 }),
      record('dev-b', 't', '2026-01-01T00:00:00Z', { v: 1 }),
      record('dev-c', 't', '2026-01-01T00:00:00Z', { v: 1 }),
      record('dev-d', 't', '2026-01-01T00:00:00Z', { v: 1 }),
    ]).series;
    const names = new Map([
      ['dev-a', 'attic'],
      ['dev-b', 'pump'],
      ['dev-c', 'pump'],
      ['dev-x', 'not charted'],
    ]);
    expect(seriesLabels(series, names)).toEqual([
      { label: 'attic · t · v', title: 'Device attic (dev-a), tag t, field v' },
      { label: 'pump (dev-b) · t · v', title: 'Device pump (dev-b), tag t, field v' },
      { label: 'pump (dev-c) · t · v', title: 'Device pump (dev-c), tag t, field v' },
      { label: 'dev-d · t · v', title: 'Device dev-d, tag t, field v' },
    ]);
  });

  it('cuts a long device name in the legend, keeping its tag and field in view, and says it whole in the tooltip', () => {
    const long = `boiler-${'x'.repeat(121)}`;
    const series = extractSeries([record('dev-a', 't', '2026-01-01T00:00:00Z', { v: 1 })]).series;

    expect(seriesLabels(series, new Map([['dev-a', long]]))).toEqual([
      { label: `${long.slice(0, 39)}… · t · v`, title: `Device ${long} (dev-a), tag t, field v` },
    ]);
    expect(shortName('attic')).toBe('attic');
    expect(shortName('x'.repeat(41))).toHaveLength(40);
  });

  it('shows a chart time in the console’s zone with its abbreviation, its milliseconds, or its microseconds when it has them', () => {
    const x = Date.parse('2026-11-25T10:00:00.123Z') / 1000;
    expect(formatChartTime(x, 'UTC')).toBe('2026-11-25 10:00:00.123 UTC');
    expect(formatChartTime(x, 'America/Chicago')).toBe('2026-11-25 04:00:00.123 CST');
    expect(formatChartTime(parseTimestamp('2026-11-25T10:00:00.123456Z'), 'America/Chicago')).toBe('2026-11-25 04:00:00.123456 CST');
    expect(formatChartTime(parseTimestamp('2026-11-25T10:00:00.000001Z'), 'Asia/Kolkata')).toBe('2026-11-25 15:30:00.000001 GMT+5:30');
  });
});

describe('device names', () => {
  const listing = (devices: { id: string; name: string; fleet_id: string }[], fail?: 'fleets') => {
    const calls: (string[] | undefined)[] = [];
    const list = async (fleets?: string[]) => {
      calls.push(fleets);
      if (fleets && fail === 'fleets') throw new Error('refused');
      return devices.filter((d) => !fleets || fleets.includes(d.fleet_id));
    };
    return { calls, list };
  };
  const devices = [
    { id: 'dev-1', name: 'attic', fleet_id: 'flt-a' },
    { id: 'dev-2', name: 'pump', fleet_id: 'flt-b' },
    { id: 'dev-3', name: 'boiler', fleet_id: 'flt-a' },
    { id: 'dev-4', name: 'other', fleet_id: 'flt-c' },
  ];

  it('reads the names with one list call of the fleets the points were stored under', async () => {
    const { calls, list } = listing(devices);
    const names = await readDeviceNames(
      list,
      new Map([
        ['dev-1', 'flt-a'],
        ['dev-2', 'flt-b'],
      ]),
    );
    expect(calls).toEqual([['flt-a', 'flt-b']]);
    // every device the list answered is named, for later pages
    expect(names).toEqual(
      new Map([
        ['dev-1', 'attic'],
        ['dev-2', 'pump'],
        ['dev-3', 'boiler'],
      ]),
    );
  });

  it('reads the whole list once more only for a device that moved to another fleet since', async () => {
    const { calls, list } = listing(devices);
    const names = await readDeviceNames(
      list,
      new Map([
        ['dev-1', 'flt-a'],
        ['dev-4', 'flt-a'],
      ]),
    );
    expect(calls).toEqual([['flt-a'], undefined]);
    expect(names.get('dev-4')).toBe('other');
  });

  it('falls back to the whole list when the fleets cannot be listed, and throws when that fails too', async () => {
    const { calls, list } = listing(devices, 'fleets');
    expect((await readDeviceNames(list, new Map([['dev-2', 'flt-b']]))).get('dev-2')).toBe('pump');
    expect(calls).toEqual([['flt-b'], undefined]);
    await expect(readDeviceNames(() => Promise.reject(new Error('offline')), new Map([['dev-2', 'flt-b']]))).rejects.toThrow('offline');
  });
});

describe('device table', () => {
  const devices = [
    { name: 'Sensor 10', fleet: 'north', seen: '2026-01-02' },
    { name: 'sensor 9', fleet: 'south', seen: '' },
    { name: 'Gateway', fleet: 'north', seen: '2026-01-01' },
  ];
  type Key = 'name' | 'fleet' | 'seen';
  const value = (d: (typeof devices)[number], key: Key) => d[key];

  it('sorts naturally and case-insensitively, both ways, empty values last either way', () => {
    expect(sortRows(devices, { key: 'name', direction: 'asc' }, value).map((d) => d.name)).toEqual(['Gateway', 'sensor 9', 'Sensor 10']);
    expect(sortRows(devices, { key: 'name', direction: 'desc' }, value).map((d) => d.name)).toEqual(['Sensor 10', 'sensor 9', 'Gateway']);
    expect(sortRows(devices, { key: 'seen', direction: 'asc' }, value).map((d) => d.name)).toEqual(['Gateway', 'Sensor 10', 'sensor 9']);
    expect(sortRows(devices, { key: 'seen', direction: 'desc' }, value).map((d) => d.name)).toEqual(['Sensor 10', 'Gateway', 'sensor 9']);
  });

  it('toggles a column ascending then descending, and a new column starts ascending', () => {
    expect(toggleSort<Key>(undefined, 'name')).toEqual({ key: 'name', direction: 'asc' });
    expect(toggleSort<Key>({ key: 'name', direction: 'asc' }, 'name')).toEqual({ key: 'name', direction: 'desc' });
    expect(toggleSort<Key>({ key: 'name', direction: 'desc' }, 'fleet')).toEqual({ key: 'fleet', direction: 'asc' });
  });

  it('keeps rows holding every word of the search, across fields', () => {
    expect(filterRows(devices, 'SENSOR north', (d) => [d.name, d.fleet]).map((d) => d.name)).toEqual(['Sensor 10']);
    expect(filterRows(devices, '  ', (d) => [d.name])).toHaveLength(3);
  });

  it('draws only the rows in view, with overscan, clamped to the list', () => {
    expect(visibleRange(0, 360, 36, 10_000, 5)).toEqual({ start: 0, end: 16 });
    expect(visibleRange(36 * 5000, 360, 36, 10_000, 5)).toEqual({ start: 4995, end: 5016 });
    expect(visibleRange(36 * 9999, 360, 36, 10_000, 5)).toEqual({ start: 9994, end: 10_000 });
    expect(visibleRange(0, 360, 36, 0)).toEqual({ start: 0, end: 0 });
  });

  it('filters and sorts 10,000 devices', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => ({ name: `device ${i}`, fleet: i % 2 ? 'odd' : 'even', seen: '' }));
    const shown = sortRows(
      filterRows(many, 'odd', (d) => [d.fleet]),
      { key: 'name', direction: 'desc' },
      value,
    );
    expect(shown).toHaveLength(5000);
    expect(shown[0].name).toBe('device 9999');
  });
});

describe('form input', () => {
  it('accepts a JSON object and empty text as {}', () => {
    expect(parseJsonObject('{"delay": 5}')).toEqual({ ok: true, value: { delay: 5 } });
    expect(parseJsonObject('  ')).toEqual({ ok: true, value: {} });
  });

  it('refuses what is not an object, naming what it is, and text that is not JSON, with the place', () => {
    expect(parseJsonObject('[1]')).toEqual({ ok: false, error: expect.stringMatching(/not an array/) });
    expect(parseJsonObject('null')).toEqual({ ok: false, error: expect.stringMatching(/not null/) });
    expect(parseJsonObject('"x"')).toEqual({ ok: false, error: expect.stringMatching(/not a string/) });
    const broken = parseJsonObject('{\n  "a": 1,\n  }');
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.error).toMatch(/^Not valid JSON/);
  });

  it('refuses a value over the size cap', () => {
    expect(parseJsonObject(JSON.stringify({ a: 'x'.repeat(100) }), 50)).toEqual({ ok: false, error: expect.stringMatching(/at most 50/) });
  });

  it('splits lists on commas and spaces, without repeats', () => {
    expect(parseList(' a, b  c,,a ')).toEqual(['a', 'b', 'c']);
  });
});

describe('runtime configuration', () => {
  it('reads the contract’s fields and leaves cognitoEndpoint out on AWS', () => {
    expect(parseConfig({ apiUrl: 'https://x.example.com/v3/', region: 'eu-west-1', userPoolId: 'p', userPoolClientId: 'c' })).toEqual({
      apiUrl: 'https://x.example.com/v3',
      region: 'eu-west-1',
      userPoolId: 'p',
      userPoolClientId: 'c',
    });
  });

  it('names every missing or wrong field', () => {
    expect(() => parseConfig({ apiUrl: 'https://x.example.com/', region: 'r' })).toThrow(
      /userPoolId, userPoolClientId, apiUrl \(an absolute URL ending in \/v3\)/,
    );
  });
});

describe('routes', () => {
  it('reads and writes every page, and falls back to the workspaces list', () => {
    const routes: Route[] = [
      { page: 'workspaces' },
      { page: 'signin' },
      { page: 'devices', workspaceId: 'wks-1' },
      { page: 'device', workspaceId: 'wks-1', deviceId: 'dev-1' },
      { page: 'jobs', workspaceId: 'wks-1' },
      { page: 'rollouts', workspaceId: 'wks-1' },
      { page: 'rollout', workspaceId: 'wks-1', rolloutId: 'rol-1' },
      { page: 'firmware', workspaceId: 'wks-1' },
      { page: 'data', workspaceId: 'wks-1' },
      { page: 'integrations', workspaceId: 'wks-1' },
      { page: 'settings', workspaceId: 'wks-1' },
    ];
    for (const route of routes) expect(parseRoute(routeHash(route))).toEqual(route);
    expect(parseRoute('#/nowhere')).toEqual({ page: 'workspaces' });
    expect(parseRoute('#/w/wks-1/unknown')).toEqual({ page: 'devices', workspaceId: 'wks-1' });
  });
});
