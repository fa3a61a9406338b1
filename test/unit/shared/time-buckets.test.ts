import fc from 'fast-check';
import { Temporal } from 'temporal-polyfill';
import { BUCKET_AMOUNTS, BucketClock, canonicalZone, constantOffsetMinutes, parseEvery } from '../../../lambdas/shared/time-buckets';
import { bucketStartByDefinition } from '../../helpers/buckets';

const HOUR = 3_600_000;
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

/** Zones with DST (both hemispheres, a 30-minute shift, one at midnight), 30- and 45-minute offsets, and none. */
const ZONES = [
  'UTC',
  'Europe/Rome',
  'America/New_York',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'America/Santiago',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Pacific/Chatham',
];

/** The buckets a clock gives instants from `from` to `to`, every `step` ms, as [start, end] pairs. */
const bucketsOver = (clock: BucketClock, from: number, to: number, step: number) => {
  const seen = new Map<number, number>();
  for (let t = from; t < to; t += step) {
    const { start, end } = clock.bucketOf(t);
    seen.set(start, end);
  }
  return [...seen].map(([start, end]) => [iso(start), iso(end)]);
};

const startByDefinition = bucketStartByDefinition;

const everyArb = fc.constantFrom(
  ...(Object.entries(BUCKET_AMOUNTS) as Array<['m' | 'h' | 'd', readonly number[]]>).flatMap(([unit, amounts]) => amounts.map((amount) => ({ amount, unit }))),
);
// 2000–2040: decades of transitions, the rules of each zone changing in between.
const instantArb = fc.integer({ min: at('2000-01-01T00:00:00Z'), max: at('2040-01-01T00:00:00Z') });

describe('calendar days', () => {
  it('gives Europe/Rome’s spring-forward day 23 hours and its fall-back day 25, from local midnight to local midnight', () => {
    const clock = new BucketClock({ amount: 1, unit: 'd' }, 'Europe/Rome');

    expect(bucketsOver(clock, at('2026-03-28T12:00:00Z'), at('2026-03-31T12:00:00Z'), HOUR)).toEqual([
      ['2026-03-27T23:00:00.000Z', '2026-03-28T23:00:00.000Z'],
      ['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'],
      ['2026-03-29T22:00:00.000Z', '2026-03-30T22:00:00.000Z'],
      ['2026-03-30T22:00:00.000Z', '2026-03-31T22:00:00.000Z'],
    ]);
    const fallBack = clock.bucketOf(at('2026-10-25T12:00:00Z'));
    expect([iso(fallBack.start), (fallBack.end - fallBack.start) / HOUR]).toEqual(['2026-10-24T22:00:00.000Z', 25]);
  });

  it('gives America/New_York the same: 23 hours on 2026-03-08, 25 on 2026-11-01', () => {
    const clock = new BucketClock({ amount: 1, unit: 'd' }, 'America/New_York');
    const spring = clock.bucketOf(at('2026-03-08T12:00:00Z'));
    const fall = clock.bucketOf(at('2026-11-01T12:00:00Z'));

    expect([iso(spring.start), (spring.end - spring.start) / HOUR]).toEqual(['2026-03-08T05:00:00.000Z', 23]);
    expect([iso(fall.start), (fall.end - fall.start) / HOUR]).toEqual(['2026-11-01T04:00:00.000Z', 25]);
  });

  it('starts a day whose midnight the clock skips when the clock jumps past it (America/Santiago)', () => {
    // 2026-09-06 00:00 does not exist in Santiago: the clock goes from 23:59:59 to 01:00 (UTC−4 → UTC−3).
    const day = new BucketClock({ amount: 1, unit: 'd' }, 'America/Santiago').bucketOf(at('2026-09-06T12:00:00Z'));

    expect([iso(day.start), (day.end - day.start) / HOUR]).toEqual(['2026-09-06T04:00:00.000Z', 23]);
  });

  it('counts several days from 1970-01-01 in the zone: 7-day buckets start on Thursdays', () => {
    const week = new BucketClock({ amount: 7, unit: 'd' }, 'Europe/Rome').bucketOf(at('2026-03-29T12:00:00Z'));

    expect([iso(week.start), iso(week.end)]).toEqual(['2026-03-25T23:00:00.000Z', '2026-04-01T22:00:00.000Z']);
    expect(new Date(week.start + HOUR).getUTCDay()).toBe(4);
  });
});

describe('hours and minutes on the wall clock', () => {
  it('gives a spring-forward day 23 hourly buckets and a fall-back day 25, the repeated hour twice', () => {
    const clock = new BucketClock({ amount: 1, unit: 'h' }, 'Europe/Rome');
    const spring = bucketsOver(clock, at('2026-03-28T23:00:00Z'), at('2026-03-29T22:00:00Z'), 15 * 60_000);
    const fall = bucketsOver(clock, at('2026-10-24T22:00:00Z'), at('2026-10-25T23:00:00Z'), 15 * 60_000);

    expect(spring).toHaveLength(23);
    expect(fall).toHaveLength(25);
    // 02:00–03:00 local happens twice: 00:00 UTC (CEST) and 01:00 UTC (CET).
    expect(fall.slice(1, 4)).toEqual([
      ['2026-10-24T23:00:00.000Z', '2026-10-25T00:00:00.000Z'],
      ['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z'],
      ['2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z'],
    ]);
  });

  it('starts a bucket whose wall-clock start is skipped when the clock jumps past it, and never overlaps two', () => {
    const twoHours = bucketsOver(new BucketClock({ amount: 2, unit: 'h' }, 'Europe/Rome'), at('2026-03-28T21:00:00Z'), at('2026-03-29T06:00:00Z'), 30 * 60_000);

    // 00:00 CET, then 02:00, which the clock skips: its bucket starts at 03:00 CEST and lasts an hour.
    expect(twoHours).toEqual([
      ['2026-03-28T21:00:00.000Z', '2026-03-28T23:00:00.000Z'],
      ['2026-03-28T23:00:00.000Z', '2026-03-29T01:00:00.000Z'],
      ['2026-03-29T01:00:00.000Z', '2026-03-29T02:00:00.000Z'],
      ['2026-03-29T02:00:00.000Z', '2026-03-29T04:00:00.000Z'],
      ['2026-03-29T04:00:00.000Z', '2026-03-29T06:00:00.000Z'],
    ]);
  });

  it('starts a bucket at a change of offset: a 12-hour bucket over a fall-back is two, of 3 and 10 hours', () => {
    const halves = bucketsOver(new BucketClock({ amount: 12, unit: 'h' }, 'Europe/Rome'), at('2026-10-24T22:00:00Z'), at('2026-10-25T23:00:00Z'), HOUR);

    expect(halves).toEqual([
      ['2026-10-24T22:00:00.000Z', '2026-10-25T01:00:00.000Z'],
      ['2026-10-25T01:00:00.000Z', '2026-10-25T11:00:00.000Z'],
      ['2026-10-25T11:00:00.000Z', '2026-10-25T23:00:00.000Z'],
    ]);
  });

  it('cuts buckets at a 30-minute change of offset that is no multiple of them (Australia/Lord_Howe)', () => {
    // 2000-03-26 02:00 (UTC+11) the clock went back to 01:30 (UTC+10:30), at 15:00 UTC.
    const buckets = bucketsOver(
      new BucketClock({ amount: 12, unit: 'm' }, 'Australia/Lord_Howe'),
      at('2000-03-25T14:36:00Z'),
      at('2000-03-25T15:12:00Z'),
      60_000,
    );

    expect(buckets).toEqual([
      ['2000-03-25T14:36:00.000Z', '2000-03-25T14:48:00.000Z'],
      ['2000-03-25T14:48:00.000Z', '2000-03-25T15:00:00.000Z'],
      ['2000-03-25T15:00:00.000Z', '2000-03-25T15:06:00.000Z'],
      ['2000-03-25T15:06:00.000Z', '2000-03-25T15:18:00.000Z'],
    ]);
  });

  it('starts hourly buckets at :30 UTC in Asia/Kolkata and at :15 UTC in Asia/Kathmandu, as their clocks show whole hours', () => {
    expect(iso(new BucketClock({ amount: 1, unit: 'h' }, 'Asia/Kolkata').bucketOf(at('2026-01-01T10:00:00Z')).start)).toBe('2026-01-01T09:30:00.000Z');
    expect(iso(new BucketClock({ amount: 1, unit: 'h' }, 'Asia/Kathmandu').bucketOf(at('2026-01-01T10:00:00Z')).start)).toBe('2026-01-01T09:15:00.000Z');
    expect(iso(new BucketClock({ amount: 15, unit: 'm' }, 'Asia/Kathmandu').bucketOf(at('2026-01-01T10:07:00Z')).start)).toBe('2026-01-01T10:00:00.000Z');
  });
});

describe('buckets, whatever the zone, length and instant (fast-check)', () => {
  it('hold the instant, start where the definition says, and follow each other without gap or overlap', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), everyArb, instantArb, (zone, every, ms) => {
        const clock = new BucketClock(every, zone);
        const bucket = clock.bucketOf(ms);
        const next = clock.bucketOf(bucket.end);
        const before = clock.bucketOf(bucket.start - 1);

        expect(bucket.start).toBeLessThanOrEqual(ms);
        expect(bucket.end).toBeGreaterThan(ms);
        expect(bucket.start).toBe(startByDefinition(ms, every, zone));
        expect(startByDefinition(bucket.end - 1, every, zone)).toBe(bucket.start);
        expect(next.start).toBe(bucket.end);
        expect(before.end).toBe(bucket.start);
      }),
      { numRuns: 400 },
    );
  });

  it('do so around the zones’ transitions too, where buckets are longer or shorter', () => {
    // An instant within 36 hours of one of the zone's transitions of a year.
    const nearTransition = fc
      .record({
        zone: fc.constantFrom(...ZONES.filter((z) => !['UTC', 'Asia/Kolkata', 'Asia/Kathmandu'].includes(z))),
        year: fc.integer({ min: 2000, max: 2039 }),
        which: fc.nat(3),
        offset: fc.integer({ min: -36 * HOUR, max: 36 * HOUR }),
      })
      .map(({ zone, year, which, offset }) => {
        const transitions: number[] = [];
        let t = Temporal.Instant.fromEpochMilliseconds(Date.UTC(year, 0, 1))
          .toZonedDateTimeISO(zone)
          .getTimeZoneTransition('next');
        while (t && t.epochMilliseconds < Date.UTC(year + 1, 0, 1)) {
          transitions.push(t.epochMilliseconds);
          t = t.getTimeZoneTransition('next');
        }
        return { zone, ms: (transitions[which % Math.max(1, transitions.length)] ?? Date.UTC(year, 6, 1)) + offset };
      });
    fc.assert(
      fc.property(nearTransition, everyArb, ({ zone, ms }, every) => {
        const clock = new BucketClock(every, zone);
        const bucket = clock.bucketOf(ms);

        expect(bucket.start).toBe(startByDefinition(ms, every, zone));
        expect(bucket.end).toBeGreaterThan(ms);
        expect(startByDefinition(bucket.end - 1, every, zone)).toBe(bucket.start);
        expect(startByDefinition(bucket.end, every, zone)).toBe(bucket.end);
        expect(clock.bucketOf(bucket.end).start).toBe(bucket.end);
      }),
      { numRuns: 400 },
    );
  });

  it('answer the same whatever the clock saw before, in any order', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), everyArb, fc.array(instantArb, { minLength: 1, maxLength: 20 }), (zone, every, instants) => {
        const shared = new BucketClock(every, zone);
        for (const ms of instants) expect(shared.bucketOf(ms)).toEqual(new BucketClock(every, zone).bucketOf(ms));
      }),
      { numRuns: 150 },
    );
  });
});

describe('parameters', () => {
  it('takes the lengths that tile an hour or a day, and 1 to 31 days, nothing else', () => {
    expect(['1m', '15m', '30m', '1h', '6h', '12h', '1d', '31d'].map(parseEvery)).toEqual([
      { amount: 1, unit: 'm' },
      { amount: 15, unit: 'm' },
      { amount: 30, unit: 'm' },
      { amount: 1, unit: 'h' },
      { amount: 6, unit: 'h' },
      { amount: 12, unit: 'h' },
      { amount: 1, unit: 'd' },
      { amount: 31, unit: 'd' },
    ]);
    for (const bad of ['0m', '7m', '60m', '5h', '24h', '32d', '1w', '1', 'h', '01h', '1.5h', ' 1h']) expect(parseEvery(bad)).toBeUndefined();
  });

  it('knows IANA zones by their names, and no other', () => {
    expect(canonicalZone('Europe/Rome')).toBe('Europe/Rome');
    expect(canonicalZone('UTC')).toBe('UTC');
    expect(canonicalZone('Mars/Olympus_Mons')).toBeUndefined();
    expect(canonicalZone('')).toBeUndefined();
  });

  it('says when a zone’s offset holds over the buckets of a range, and what it is', () => {
    const hour = { amount: 1, unit: 'h' } as const;
    const day = { amount: 1, unit: 'd' } as const;
    expect(constantOffsetMinutes('UTC', day, 0, undefined)).toBe(0);
    expect(constantOffsetMinutes('Asia/Kolkata', hour, at('2026-01-01T00:00:00Z'), undefined)).toBe(330);
    expect(constantOffsetMinutes('Europe/Rome', day, at('2026-04-01T00:00:00Z'), at('2026-10-01T00:00:00Z'))).toBe(120);
    expect(constantOffsetMinutes('Europe/Rome', hour, at('2026-03-01T00:00:00Z'), at('2026-04-01T00:00:00Z'))).toBeUndefined();
    expect(constantOffsetMinutes('Europe/Rome', hour, at('2026-04-01T00:00:00Z'), undefined)).toBeUndefined();
    // The range starts after the day's change, but its first bucket, the day, began before it.
    expect(constantOffsetMinutes('Europe/Rome', day, at('2026-03-29T12:00:00Z'), at('2026-03-31T00:00:00Z'))).toBeUndefined();
    expect(constantOffsetMinutes('Europe/Rome', hour, at('2026-03-29T12:00:00Z'), at('2026-03-31T00:00:00Z'))).toBe(120);
  });
});
