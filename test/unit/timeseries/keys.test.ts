import fc from 'fast-check';
import { compareTime, type Time } from '../../../lambdas/shared/timestamps';
import {
  isPackKey,
  KEY_PART,
  keyTime,
  keyTimeOf,
  legacyVersionOf,
  packKey,
  queryPartitions,
  SHARDS,
  seriesPartition,
} from '../../../lambdas/stores/timeseries/keys';

const time = fc.record({
  ms: fc.integer({ min: Date.parse('0000-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') }),
  us: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 999 })),
});

describe('time-series keys', () => {
  it('writes a whole millisecond as RFC 3339 and a cloud stamp with its microseconds after %', () => {
    const ms = Date.parse('2021-07-08T14:21:15.915Z');

    expect(keyTime({ ms, us: 0 })).toBe('2021-07-08T14:21:15.915Z');
    expect(keyTime({ ms, us: 7 })).toBe('2021-07-08T14:21:15.915Z%007');
    expect(keyTimeOf('2021-07-08T14:21:15.915Z%007#!abc')).toEqual({ ms, us: 7 });
    expect(keyTimeOf('2021-07-08T14:21:15.915Z#dev-a#temp')).toEqual({ ms, us: 0 });
  });

  it('sorts key times as bytes exactly as the instants they name, whatever follows them in a sort key', () => {
    fc.assert(
      fc.property(time, time, fc.constantFrom('#!0123', '#dev-a#t', '#A#0'), (a: Time, b: Time, rest: string) => {
        const bytes = Buffer.compare(Buffer.from(`${keyTime(a)}${rest}`), Buffer.from(`${keyTime(b)}${rest}`));
        expect(Math.sign(bytes)).toBe(Math.sign(compareTime(a, b)));
        expect(keyTimeOf(keyTime(a))).toEqual(a);
      }),
      { numRuns: 2000 },
    );
  });

  it('sorts a pack before every point of its earliest time, and selects it with a bound at that time', () => {
    const earliest = { ms: Date.parse('2021-07-08T14:21:15.915Z'), us: 42 };
    const { pk, sk } = packKey('wks-1', earliest, '0123456789abcdef');
    const pointsAtThatTime = ['-', '.', '0', 'A', '_', 'a'].map((first) => `${keyTime(earliest)}#${first}#tag`);

    expect(pk).toMatch(/^TS#wks-1#[0-7]$/);
    expect(isPackKey(sk)).toBe(true);
    expect(pointsAtThatTime.every((point) => sk < point && !isPackKey(point))).toBe(true);
    expect(sk >= keyTime(earliest)).toBe(true);
    expect(sk < keyTime({ ...earliest, us: 43 })).toBe(true);
  });

  it('spreads packs over every shard of their workspace', () => {
    const counts = new Array(SHARDS).fill(0);
    for (let i = 0; i < 800; i++) counts[Number(packKey('wks-1', { ms: i, us: 0 }, i.toString(16).padStart(16, '0')).pk.split('#')[2])]++;

    expect(Math.min(...counts)).toBeGreaterThan(800 / SHARDS / 2);
  });

  it('reads the arrival of an item from before packs, or the earliest there is when it was unversioned', () => {
    expect(legacyVersionOf('2021-07-08T14:21:15.915Z#dev-a#temp#2021-07-08T14:21:16.002Z#0003#abcdef01')).toEqual({
      inMs: Date.parse('2021-07-08T14:21:16.002Z'),
      sequence: 3,
      tail: 'abcdef01',
    });
    expect(legacyVersionOf('2021-07-08T14:21:15.915Z#dev-a#temp')).toEqual({ inMs: -Infinity, sequence: 0, tail: '' });
    // IDs and tags cannot hold the `:` of a timestamp, so none passes for a version.
    expect(KEY_PART.test('2021-07-08T14-21-16.002Z-0000-abcdef01')).toBe(true);
    expect(legacyVersionOf(`2021-07-08T14:21:15.915Z#${'d'.repeat(100)}#2021-07-08T14-21-16.002Z-0000-abcdef01`).inMs).toBe(-Infinity);
  });

  it('reads every shard of the workspace', () => {
    expect(queryPartitions('wks-1')).toEqual([...Array(SHARDS).keys()].map((s) => seriesPartition('wks-1', s)));
  });
});
