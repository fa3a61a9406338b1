import { TimeseriesQuerySchema } from '../../../lambdas/schemas/timeseries';

const parse = (query: Record<string, string | string[]>) => TimeseriesQuerySchema.safeParse(query);

describe('storage query parameters', () => {
  it('defaults to the first 100 records, newest first', () => {
    expect(parse({}).data).toEqual({ from: 0, size: 100, sort: '-timestamp_device' });
  });

  it.each([
    [{ start: '2021-07-08T14:21:15.915Z' }, { start: '2021-07-08T14:21:15.915Z' }],
    [{ start: '2021-07-08T16:21:15+02:00' }, { start: '2021-07-08T14:21:15.000Z' }],
    [{ end: '2021-07-08T14:21:15.9150001Z' }, { end: '2021-07-08T14:21:15.915001Z' }],
    [{ end: '2021-07-08T14:21:15.9159990001Z' }, { end: '2021-07-08T14:21:15.916Z' }],
    [{ end: '2021-07-08T14:21:15.915000Z' }, { end: '2021-07-08T14:21:15.915Z' }],
    // microseconds, as cloud stamps have them: a client pages on from the last stamp it read
    [
      { start: '2021-07-08T14:21:15.915042Z', end: '2021-07-08T14:21:15.9155Z' },
      { start: '2021-07-08T14:21:15.915042Z', end: '2021-07-08T14:21:15.915500Z' },
    ],
    [
      { from: '0', size: '0' },
      { from: 0, size: 0 },
    ],
    [
      { from: '12', size: '175000' },
      { from: 12, size: 175000 },
    ],
    [{ sort: 'timestamp_device' }, { sort: 'timestamp_device' }],
    // well-formed IDs that may not exist are the lookup's to answer (an empty page), not a 400
    [{ device: ['sensor-1', 'dev-doesnotexist1'] }, { device: ['sensor-1', 'dev-doesnotexist1'] }],
    // an empty range is a question with an empty answer; only start after end is refused
    [
      { start: '2026-02-01T00:00:00Z', end: '2026-02-01T00:00:00Z' },
      { start: '2026-02-01T00:00:00.000Z', end: '2026-02-01T00:00:00.000Z' },
    ],
    [{ device: ['dev-aaaaaaaaaaaaaaaaaaaa', 'dev-bbbbbbbbbbbbbbbbbbbb'] }, { device: ['dev-aaaaaaaaaaaaaaaaaaaa', 'dev-bbbbbbbbbbbbbbbbbbbb'] }],
    [{ tag: ['temp', 'a.b-c_d'] }, { tag: ['temp', 'a.b-c_d'] }],
  ])('accepts %j', (query, expected) => {
    expect(parse(query).data).toMatchObject(expected);
  });

  it.each([
    ['start', { start: '2021-07-08' }],
    ['start', { start: '2021-07-08T14:21:15' }],
    ['end', { end: 'now' }],
    ['from', { from: '-1' }],
    ['from', { from: '1e3' }],
    ['from', { from: '' }],
    ['from', { from: '1000000001' }],
    ['size', { size: '175001' }],
    ['size', { size: '0x10' }],
    ['sort', { sort: 'timestamp_in' }],
    ['device', { device: ['sensor 1'] }],
    ['device', { device: ['x'.repeat(65)] }],
    ['start', { start: '2026-02-02T00:00:00Z', end: '2026-02-01T00:00:00Z' }],
    ['start', { start: '2026-02-01T01:00:00+02:00', end: '2026-01-31T22:59:59.999Z' }],
    ['start', { start: '2026-02-01T00:00:00.000002Z', end: '2026-02-01T00:00:00.000001Z' }],
    ['start', { start: 'yesterday', end: '2026-02-01T00:00:00Z' }],
    ['device', { device: Array.from({ length: 101 }, (_, i) => `dev-${String(i).padStart(20, '0')}`) }],
    ['tag', { tag: ['has space'] }],
    ['tag', { tag: ['x'.repeat(65)] }],
  ])('refuses a bad %s: %j', (parameter, query) => {
    const result = parse(query as Record<string, string | string[]>);

    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path[0])).toEqual([parameter]);
  });
});
