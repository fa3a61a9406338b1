import fc from 'fast-check';
import { addMicros, CloudStamper, formatMicros, formatTime, isCloudStamp, parseTime } from '../../../lambdas/shared/timestamps';

const T = Date.parse('2026-11-25T10:00:00.123Z');

describe('timestamps', () => {
  it('reads RFC 3339 to the microsecond, any offset, and rounds finer digits up only when asked', () => {
    expect(parseTime('2026-11-25T10:00:00.123Z')).toEqual({ ms: T, us: 0 });
    expect(parseTime('2026-11-25T11:00:00.123456+01:00')).toEqual({ ms: T, us: 456 });
    expect(parseTime('2026-11-25T10:00:00Z')).toEqual({ ms: T - 123, us: 0 });
    expect(parseTime('2026-11-25T10:00:00.1234561Z')).toEqual({ ms: T, us: 456 });
    expect(parseTime('2026-11-25T10:00:00.1234561Z', true)).toEqual({ ms: T, us: 457 });
    expect(parseTime('2026-11-25T10:00:00.123999001Z', true)).toEqual({ ms: T + 1, us: 0 });
    expect(parseTime('0000-01-01T00:00:00.000001Z')).toEqual({ ms: Date.parse('0000-01-01T00:00:00Z'), us: 1 });
    for (const bad of ['soon', '2026-11-25', '2026-11-25T10:00:00.123', '2026-13-25T10:00:00Z']) expect(parseTime(bad)).toBeUndefined();
  });

  it('prints a whole millisecond as the interface always has, and a cloud stamp with six digits', () => {
    expect(formatTime({ ms: T, us: 0 })).toBe('2026-11-25T10:00:00.123Z');
    expect(formatTime({ ms: T, us: 4 })).toBe('2026-11-25T10:00:00.123004Z');
    expect(formatMicros(T * 1000 + 999)).toBe('2026-11-25T10:00:00.123999Z');
  });

  it('reads back what it prints, for every instant of years 0000–9999', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse('0000-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') }),
        fc.integer({ min: 0, max: 999 }),
        (ms, us) => {
          expect(parseTime(formatTime({ ms, us }))).toEqual({ ms, us });
        },
      ),
    );
  });

  it('moves a time by microseconds across milliseconds, both ways', () => {
    expect(addMicros({ ms: T, us: 999 }, 1)).toEqual({ ms: T + 1, us: 0 });
    expect(addMicros({ ms: T, us: 0 }, -1)).toEqual({ ms: T - 1, us: 999 });
    expect(addMicros({ ms: T, us: 5 }, -10_000_000)).toEqual({ ms: T - 10_000, us: 5 });
  });

  describe('cloud stamper', () => {
    it('stamps a thousand points of one device in one millisecond apart, in order, never on a whole millisecond', () => {
      const stamper = new CloudStamper();
      const stamps = Array.from({ length: 1000 }, () => stamper.next('dev-a', T * 1000 + 1));

      expect(new Set(stamps).size).toBe(1000);
      expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
      expect(stamps.every((s) => isCloudStamp({ ms: Math.floor(s / 1000), us: s % 1000 }))).toBe(true);
      // 999 fit in the millisecond; the thousandth runs into the next.
      expect(stamps[998]).toBe(T * 1000 + 999);
      expect(stamps[999]).toBe((T + 1) * 1000 + 1);
    });

    it('never stamps before the arrival it is given, and keeps devices and milliseconds apart', () => {
      const stamper = new CloudStamper();

      expect(stamper.next('dev-a', T * 1000)).toBe(T * 1000 + 1);
      expect(stamper.next('dev-b', T * 1000 + 500)).toBe(T * 1000 + 500);
      expect(stamper.next('dev-a', (T + 5) * 1000 + 20)).toBe((T + 5) * 1000 + 20);
      // A batch handled late, of an earlier millisecond: its points stay in that millisecond.
      expect(stamper.next('dev-a', T * 1000)).toBe(T * 1000 + 2);
      expect(stamper.next('dev-a', (T + 5) * 1000 + 1)).toBe((T + 5) * 1000 + 21);
    });

    it('forgets the (device, millisecond) used longest ago past its bound', () => {
      const stamper = new CloudStamper(2);
      stamper.next('dev-a', T * 1000 + 10);
      stamper.next('dev-b', T * 1000 + 10);
      stamper.next('dev-c', T * 1000 + 10);

      expect(stamper.next('dev-a', T * 1000 + 1)).toBe(T * 1000 + 1);
      expect(stamper.next('dev-c', T * 1000 + 1)).toBe(T * 1000 + 11);
    });
  });
});
