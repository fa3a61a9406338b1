import {
  DEFAULT_RANGE,
  formatIso,
  formatOffset,
  formatTick,
  formatTime,
  fromWallInput,
  isZone,
  rangeBounds,
  REFRESH_CHOICES,
  resetZoneSetting,
  setZoneSetting,
  subscribeZone,
  toWallInput,
  zoneLabel,
  zoneOffsetMinutes,
  zoneSetting,
  ZONE_STORAGE_KEY,
} from '../../../console/src/lib/time';

const memory = () => {
  const items = new Map<string, string>();
  return {
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
    removeItem: (k: string) => void items.delete(k),
    items,
  };
};

describe('times in one zone, with its name', () => {
  const at = Date.parse('2026-11-25T19:36:05.123Z');

  it('prints a moment in the chosen zone with its abbreviation or offset', () => {
    expect(formatTime(at, 'America/Chicago')).toBe('2026-11-25 13:36:05 CST');
    expect(formatTime(at, 'UTC')).toBe('2026-11-25 19:36:05 UTC');
    expect(formatTime(at, 'Asia/Kolkata')).toBe('2026-11-26 01:06:05 GMT+5:30');
    expect(formatTime(at, 'America/Chicago', { fraction: 3 })).toBe('2026-11-25 13:36:05.123 CST');
    expect(formatTime(at, 'UTC', { fraction: 6, micros: at * 1000 + 42 })).toBe('2026-11-25 19:36:05.123042 UTC');
    // summer time has its own name
    expect(formatTime(Date.parse('2026-07-01T12:00:00Z'), 'America/Chicago')).toBe('2026-07-01 07:00:00 CDT');
  });

  it('prints the API’s ISO times in the zone, a dash for none, and the text itself when it is no time', () => {
    expect(formatIso('2026-11-25T19:36:05Z', 'America/Chicago')).toBe('2026-11-25 13:36:05 CST');
    expect(formatIso(null, 'UTC')).toBe('—');
    expect(formatIso('soon', 'UTC')).toBe('soon');
  });

  it('knows each zone’s offset, across DST, and names it', () => {
    expect(zoneOffsetMinutes(at, 'America/Chicago')).toBe(-360);
    expect(zoneOffsetMinutes(Date.parse('2026-07-01T12:00:00Z'), 'America/Chicago')).toBe(-300);
    expect(zoneOffsetMinutes(at, 'Asia/Kolkata')).toBe(330);
    expect([formatOffset(-360), formatOffset(330), formatOffset(0)]).toEqual(['UTC−06:00', 'UTC+05:30', 'UTC']);
    expect(zoneLabel('America/Chicago', at)).toBe('America/Chicago, CST');
    expect(zoneLabel('UTC', at)).toBe('UTC');
    expect([isZone('Europe/Berlin'), isZone('UTC'), isZone('Mars/Olympus'), isZone('')]).toEqual([true, true, false, false]);
  });

  it('reads a form’s wall time in the zone and writes it back, a DST jump included', () => {
    expect(new Date(fromWallInput('2026-11-25T13:36', 'America/Chicago')!).toISOString()).toBe('2026-11-25T19:36:00.000Z');
    expect(new Date(fromWallInput('2026-07-01T07:00', 'America/Chicago')!).toISOString()).toBe('2026-07-01T12:00:00.000Z');
    expect(new Date(fromWallInput('2026-11-25T13:36', 'UTC')!).toISOString()).toBe('2026-11-25T13:36:00.000Z');
    // the first hour after the spring jump (2026-03-08 03:00 CDT) and the repeated hour in the autumn (its first: CDT)
    expect(new Date(fromWallInput('2026-03-08T03:30', 'America/Chicago')!).toISOString()).toBe('2026-03-08T08:30:00.000Z');
    expect(new Date(fromWallInput('2026-11-01T01:30', 'America/Chicago')!).toISOString()).toBe('2026-11-01T06:30:00.000Z');
    expect(fromWallInput('', 'UTC')).toBeUndefined();
    expect(fromWallInput('yesterday', 'UTC')).toBeUndefined();
    expect(toWallInput(at, 'America/Chicago')).toBe('2026-11-25T13:36');
    expect(toWallInput(at, 'Asia/Kolkata')).toBe('2026-11-26T01:06');
  });

  it('writes axis ticks as precisely as their spacing needs, in the zone', () => {
    const ts = at / 1000;
    expect(formatTick(ts, 'America/Chicago', 10)).toBe('13:36:05');
    expect(formatTick(ts, 'America/Chicago', 600)).toBe('13:36');
    expect(formatTick(ts, 'UTC', 600)).toBe('19:36');
    expect(formatTick(Date.parse('2026-11-26T06:00:00Z') / 1000, 'America/Chicago', 1800)).toBe('11-26 00:00');
    expect(formatTick(ts, 'America/Chicago', 6 * 3600)).toBe('11-25 13:36');
    expect(formatTick(ts, 'America/Chicago', 86_400)).toBe('2026-11-25');
  });
});

describe('the zone setting', () => {
  afterEach(() => resetZoneSetting());

  it('is the browser’s until chosen, is kept in storage, tells subscribers, and refuses an unknown zone', () => {
    const storage = memory();
    const heard: string[] = [];
    const stop = subscribeZone(() => heard.push(zoneSetting(storage)));

    expect(zoneSetting(storage)).toBe('');
    setZoneSetting('UTC', storage);
    setZoneSetting('America/Chicago', storage);
    expect(storage.items.get(ZONE_STORAGE_KEY)).toBe('America/Chicago');
    expect(() => setZoneSetting('Mars/Olympus', storage)).toThrow('Unknown time zone');
    setZoneSetting('', storage);
    stop();
    setZoneSetting('UTC', storage);

    expect(heard).toEqual(['UTC', 'America/Chicago', '']);
    expect(storage.items.get(ZONE_STORAGE_KEY)).toBe('UTC');
  });

  it('reads a stored zone back, and a stored zone Intl does not know as the browser’s', () => {
    const storage = memory();
    storage.setItem(ZONE_STORAGE_KEY, 'Europe/Berlin');
    expect(zoneSetting(storage)).toBe('Europe/Berlin');
    resetZoneSetting();
    storage.setItem(ZONE_STORAGE_KEY, 'Nowhere/Else');
    expect(zoneSetting(storage)).toBe('');
  });
});

describe('ranges and refresh', () => {
  const now = Date.parse('2026-11-25T19:36:05Z');

  it('ends a relative range now (no end bound) and starts it its length before', () => {
    expect(rangeBounds('15m', now, 'UTC')).toEqual({ start: '2026-11-25T19:21:05.000Z' });
    expect(rangeBounds('1h', now, 'UTC')).toEqual({ start: '2026-11-25T18:36:05.000Z' });
    expect(rangeBounds('6h', now, 'UTC').start).toBe('2026-11-25T13:36:05.000Z');
    expect(rangeBounds('24h', now, 'UTC').start).toBe('2026-11-24T19:36:05.000Z');
    expect(rangeBounds('7d', now, 'UTC').start).toBe('2026-11-18T19:36:05.000Z');
    expect(rangeBounds('30d', now, 'UTC').start).toBe('2026-10-26T19:36:05.000Z');
    expect(DEFAULT_RANGE).toBe('24h');
  });

  it('reads an absolute range’s wall times in the console’s zone, either bound optional', () => {
    expect(rangeBounds('absolute', now, 'America/Chicago', '2026-11-25T08:00', '2026-11-25T09:00')).toEqual({
      start: '2026-11-25T14:00:00.000Z',
      end: '2026-11-25T15:00:00.000Z',
    });
    expect(rangeBounds('absolute', now, 'UTC', '', '2026-11-25T09:00')).toEqual({ start: undefined, end: '2026-11-25T09:00:00.000Z' });
  });

  it('refreshes no faster than every 30 s', () => {
    expect(REFRESH_CHOICES.map((c) => c.ms)).toEqual([0, 30_000, 60_000, 300_000]);
    expect(REFRESH_CHOICES.filter((c) => c.ms).every((c) => c.ms >= 30_000)).toBe(true);
  });
});
