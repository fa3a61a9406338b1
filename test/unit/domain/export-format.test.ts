import { CSV_COLUMNS, CSV_NAMED_COLUMNS, csvField, exportHeader, lineFormatter } from '../../../lambdas/domain/exports/export-format';
import { partBytesOf, PART_BYTES } from '../../../lambdas/domain/exports/export-parts';
import { CreateExportBodySchema } from '../../../lambdas/schemas/export';
import type { RangePoint } from '../../../lambdas/stores/timeseries';
import { parseCsv } from '../../helpers/csv';

const point = (payload: unknown, overrides: Partial<RangePoint> = {}): RangePoint => ({
  device_id: 'dev-a',
  fleet_id: 'flt-a',
  tag: 'weather',
  ms: Date.parse('2026-03-01T10:00:00.123Z'),
  us: 0,
  inMs: Date.parse('2026-03-01T10:00:01.500Z'),
  payload,
  ...overrides,
});

describe('CSV fields (RFC 4180 §2)', () => {
  it.each([
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['one\ntwo', '"one\ntwo"'],
    ['one\r\ntwo', '"one\r\ntwo"'],
    ['', ''],
    ['=1+2', '=1+2'],
  ])('writes %j as %j', (text, field) => {
    expect(csvField(text)).toBe(field);
  });
});

describe('export lines', () => {
  it('starts a CSV file with its header line and an NDJSON file with nothing', () => {
    expect(exportHeader('csv')).toBe('device_id,fleet_id,tag,timestamp_device,timestamp_in,payload\r\n');
    expect(CSV_COLUMNS).toEqual(['device_id', 'fleet_id', 'tag', 'timestamp_device', 'timestamp_in', 'payload']);
    expect(exportHeader('ndjson')).toBe('');
  });

  it.each<[string, unknown]>([
    ['an object with commas, quotes and line breaks', { text: 'a, b', quote: 'say "hi"', lines: 'one\r\ntwo\nthree' }],
    ['a string', 'a lone "string", with a comma'],
    ['an array', ['x', 1, null, { deep: ['"', ','] }]],
    ['a formula-looking string', '=1+2'],
    ['a number', -3.5],
    ['null', null],
    ['unicode', { emoji: '🌡️ 21.5 °C', zero: '\u0000' }],
  ])('writes a CSV record whose payload cell reads back as the payload’s JSON text: %s', (_name, payload) => {
    const line = lineFormatter('csv')(point(payload));

    expect(line.endsWith('\r\n')).toBe(true);
    expect(parseCsv(line)).toEqual([['dev-a', 'flt-a', 'weather', '2026-03-01T10:00:00.123Z', '2026-03-01T10:00:01.500Z', JSON.stringify(payload)]]);
    expect(JSON.parse(parseCsv(line)[0][5])).toEqual(payload);
  });

  it('prints a cloud stamp to the microsecond, as the storage query does, and each point’s own times one after another', () => {
    const format = lineFormatter('ndjson');
    const first = JSON.parse(format(point(1, { us: 42 })));
    const second = JSON.parse(format(point(2, { ms: Date.parse('2026-03-01T10:00:00.124Z'), inMs: Date.parse('2026-03-01T10:00:02.000Z') })));

    expect(first).toEqual({
      timestamp_device: '2026-03-01T10:00:00.123042Z',
      timestamp_in: '2026-03-01T10:00:01.500Z',
      fleet_id: 'flt-a',
      device_id: 'dev-a',
      tag: 'weather',
      payload: 1,
    });
    expect(Object.keys(first)).toEqual(['timestamp_device', 'timestamp_in', 'fleet_id', 'device_id', 'tag', 'payload']);
    expect([second.timestamp_device, second.timestamp_in]).toEqual(['2026-03-01T10:00:00.124Z', '2026-03-01T10:00:02.000Z']);
  });

  it('writes one NDJSON record a line, whatever the payload holds', () => {
    const line = lineFormatter('ndjson')(point({ lines: 'one\ntwo', quote: '"' }));

    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line).payload).toEqual({ lines: 'one\ntwo', quote: '"' });
  });
});

describe('export lines with names (`"names": true`)', () => {
  const names = (p: RangePoint) => (p.device_id === 'dev-a' ? { device_name: 'Boiler, "east"', fleet_name: 'Plant 1' } : { device_name: '', fleet_name: '' });

  it('adds device_name and fleet_name after the columns of a file without names, which stay in their places', () => {
    expect(exportHeader('csv', true)).toBe('device_id,fleet_id,tag,timestamp_device,timestamp_in,payload,device_name,fleet_name\r\n');
    expect(CSV_NAMED_COLUMNS.slice(0, CSV_COLUMNS.length)).toEqual([...CSV_COLUMNS]);
    expect(exportHeader('ndjson', true)).toBe('');
  });

  it('writes the names as CSV cells (quoted as any cell), empty for a device or fleet deleted since', () => {
    const format = lineFormatter('csv', names);
    const named = parseCsv(format(point({ temp: 1 })))[0];
    const gone = parseCsv(format(point(2, { device_id: 'dev-gone' })))[0];

    expect(named).toEqual(['dev-a', 'flt-a', 'weather', '2026-03-01T10:00:00.123Z', '2026-03-01T10:00:01.500Z', '{"temp":1}', 'Boiler, "east"', 'Plant 1']);
    expect(gone.slice(6)).toEqual(['', '']);
  });

  it('adds the names as NDJSON fields after payload (null when deleted since), the record before them as without names', () => {
    const plain = lineFormatter('ndjson')(point(1));
    const named = lineFormatter('ndjson', names)(point(1));
    const gone = JSON.parse(lineFormatter('ndjson', names)(point(1, { device_id: 'dev-gone' })));

    expect(named.startsWith(plain.slice(0, -2))).toBe(true);
    expect(Object.keys(JSON.parse(named))).toEqual([
      'timestamp_device',
      'timestamp_in',
      'fleet_id',
      'device_id',
      'tag',
      'payload',
      'device_name',
      'fleet_name',
    ]);
    expect(JSON.parse(named)).toMatchObject({ device_name: 'Boiler, "east"', fleet_name: 'Plant 1' });
    expect([gone.device_name, gone.fleet_name]).toEqual([null, null]);
  });
});

describe('part sizes', () => {
  it('start at 8 MiB and grow by that much every 1,000 parts, so that 10,000 parts hold 55,000 × 8 MiB (430 GiB)', () => {
    const total = Array.from({ length: 10_000 }, (_, i) => partBytesOf(i + 1)).reduce((a, b) => a + b, 0);

    expect([partBytesOf(1), partBytesOf(1000), partBytesOf(1001), partBytesOf(10_000)]).toEqual([PART_BYTES, PART_BYTES, 2 * PART_BYTES, 10 * PART_BYTES]);
    expect(PART_BYTES).toBeGreaterThanOrEqual(5 * 1024 * 1024);
    expect(total).toBe(55_000 * PART_BYTES);
  });
});

describe('the export request', () => {
  it('needs a format, takes the storage query’s filters, and refuses a start after end, naming each', () => {
    const parsed = CreateExportBodySchema.safeParse({ format: 'csv', start: '2026-03-01T01:00:00+01:00', device: ['dev-1'], tag: ['t'], fleet: ['flt-1'] });
    const bad = (body: unknown) => CreateExportBodySchema.safeParse(body).error?.issues.map((i) => i.path.join('.'));

    expect(parsed.data).toEqual({ format: 'csv', start: '2026-03-01T00:00:00.000Z', device: ['dev-1'], tag: ['t'], fleet: ['flt-1'] });
    expect(bad({})).toEqual(['format']);
    expect(bad({ format: 'json' })).toEqual(['format']);
    expect(bad({ format: 'csv', size: 10 })).toEqual(['']);
    expect(bad({ format: 'csv', start: '2026-03-02T00:00:00Z', end: '2026-03-01T00:00:00Z' })).toEqual(['start']);
    expect(bad({ format: 'csv', device: ['bad!'] })).toEqual(['device.0']);
    expect(bad({ format: 'csv', names: 'yes' })).toEqual(['names']);
    expect(CreateExportBodySchema.parse({ format: 'csv', names: true })).toEqual({ format: 'csv', names: true });
  });
});
