import { matchesQuery, parseQuery, type SearchableDevice } from '../../../../lambdas/domain/registry/query';

const DEVICE: SearchableDevice = {
  name: 'boiler-7',
  fleet_id: 'flt-a',
  connected: true,
  firmware_version: '1.2.0',
  last_seen_at: '2026-11-02T10:00:00.000Z',
  last_connected_at: null,
  created_at: '2026-10-01T00:00:00.000Z',
  tags: { site: 'milan', floor: '3', note: 'a b' },
  state: { reported: { fw: { major: 2 }, mode: 'eco', on: true } },
};

const matches = (text: string, device: SearchableDevice = DEVICE) => matchesQuery(parseQuery(text), device);

describe('matchesQuery', () => {
  it.each([
    ['tags.site = "milan"', true],
    ['tags.site = "rome"', false],
    ['tags.site != "rome"', true],
    ['tags.site IN ("rome", "milan")', true],
    ['connected = true AND tags.site = "milan"', true],
    ['connected = true AND tags.site = "rome"', false],
    ['connected != true', false],
    ['name = "boiler-7" AND fleet_id = "flt-a"', true],
    ['name < "c"', true],
    ['firmware_version >= "1.10"', true], // strings compare as text, not as versions
    ['firmware_version = "1.2.0"', true],
  ])('on tags, text and booleans: %s → %s', (text, expected) => {
    expect(matches(text)).toBe(expected);
  });

  it.each([
    ['last_seen_at > "2026-11-02T09:00:00Z"', true],
    ['last_seen_at = "2026-11-02T11:00:00+01:00"', true], // the same instant in another offset
    ['last_seen_at < "2026-11-02T10:00:00.001Z"', true],
    ['created_at >= "2026-10-01T02:00:00+02:00"', true],
    ['created_at > "2026-10-01T00:00:00Z"', false],
  ])('compares dates as instants: %s → %s', (text, expected) => {
    expect(matches(text)).toBe(expected);
  });

  it.each([
    ['tags.floor = 3', true],
    ['tags.floor > 2', true],
    ['tags.floor < 2.5', false],
    ['tags.floor = "3"', true],
    ['tags.floor = "3.0"', false],
    ['tags.site > 2', false], // "milan" is no number: it does not compare with one
    ['tags.site != 2', true],
    ['state.reported.fw.major = 2', true],
    ['state.reported.fw.major = "2"', false], // a JSON number is not a string
    ['state.reported.mode = "eco"', true],
    ['state.reported.on = true', true],
    ['state.reported.fw = 2', false], // an object equals no value
    ['EXISTS state.reported.fw', true],
  ])('compares numbers with numbers (a tag holding one counts): %s → %s', (text, expected) => {
    expect(matches(text)).toBe(expected);
  });

  it.each([
    ['tags.model = null', true],
    ['tags.model != "v2"', true],
    ['tags.model IN ("v2", null)', true],
    ['NOT EXISTS tags.model', true],
    ['EXISTS tags.model', false],
    ['tags.model = "v2"', false],
    ['tags.model < "z"', false],
    ['tags.model > "a"', false],
    ['tags.model != null', false],
    ['last_connected_at = null', true],
    ['last_connected_at < "2030-01-01T00:00:00Z"', false],
    ['state.desired.mode = null', true],
    ['state.desired.mode != "eco"', true],
    ['EXISTS state.reported.fw.minor', false],
  ])('a missing field matches only = null, != v, IN (…, null) and NOT EXISTS: %s → %s', (text, expected) => {
    expect(matches(text)).toBe(expected);
  });

  it('reads a device without tags, state, connection or health fields as missing them all', () => {
    const bare: SearchableDevice = { name: 'n', fleet_id: 'f', created_at: '2026-01-01T00:00:00.000Z' };

    expect(
      matches('connected = false AND NOT EXISTS tags.site AND firmware_version = null AND last_seen_at = null AND NOT EXISTS state.reported.x', bare),
    ).toBe(true);
    expect(matches('EXISTS tags.site', bare)).toBe(false);
  });

  it('never reads a tag or state key from the prototype', () => {
    expect(matches('EXISTS tags.constructor')).toBe(false);
    expect(matches('EXISTS state.reported.toString')).toBe(false);
  });
});
