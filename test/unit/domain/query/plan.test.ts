import { parseQuery, planSearch } from '../../../../lambdas/domain/registry/query';

const plan = (text?: string) => planSearch(text === undefined ? undefined : parseQuery(text));

describe('planSearch', () => {
  it.each([
    [undefined, { kind: 'scan' }],
    ['connected = true', { kind: 'scan' }],
    ['last_seen_at < "2026-11-01T00:00:00Z" AND name = "a"', { kind: 'scan' }],
    ['last_seen_at < "2026-11-01T00:00:00Z" AND firmware_version = "1.1"', { kind: 'index', key: '$firmware_version', values: ['1.1'] }],
    ['firmware_version IN ("1.0", "1.1") AND tags.site = "milan"', { kind: 'index', key: 'site', values: ['milan'] }],
    ['firmware_version != "1.1"', { kind: 'scan' }],
    ['tags.site = "milan"', { kind: 'index', key: 'site', values: ['milan'] }],
    ['connected = true AND tags.site IN ("milan", "rome", "milan")', { kind: 'index', key: 'site', values: ['milan', 'rome'] }],
    ['tags.site IN ("milan", "rome") AND tags.model = "v2"', { kind: 'index', key: 'model', values: ['v2'] }],
    ['tags.a = "1" AND tags.b = "2"', { kind: 'index', key: 'a', values: ['1'] }],
    ['tags.floor = 3', { kind: 'scan' }], // a number matches "3" and "3.0": no one key
    ['tags.site IN ("milan", null)', { kind: 'scan' }], // null matches the devices without the tag
    ['tags.site != "milan" AND tags.site > "a"', { kind: 'scan' }],
  ])('plans %s as %j', (text, expected) => {
    expect(plan(text)).toEqual(expected);
  });
});
