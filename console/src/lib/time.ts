/**
 * The console's one time zone, and every time it prints in it (Intl only, no zone library): the
 * browser's zone by default, UTC or any IANA zone by choice, kept in localStorage. Every printed
 * time carries its zone's abbreviation (`CST`) or, where the locale has none, its offset (`GMT+1`).
 */

/** The localStorage key of the chosen zone ('' or absent: the browser's). */
export const ZONE_STORAGE_KEY = 'fleetstream.timeZone';

/** The browser's zone (an IANA name). */
export const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** Whether Intl knows `zone` (an IANA name such as `America/Chicago`, or `UTC`). */
export const isZone = (zone: string) => {
  if (!zone) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
};

/** Every IANA zone the browser knows (UTC first), for the zone setting. */
export const knownZones = (): string[] => {
  const all = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return ['UTC', ...all.filter((z) => z !== 'UTC')];
};

type Storage = Pick<globalThis.Storage, 'getItem' | 'setItem' | 'removeItem'>;
const storage = (): Storage | undefined => (typeof localStorage === 'undefined' ? undefined : localStorage);

let setting: string | undefined;
const listeners = new Set<() => void>();

/** The zone setting as chosen: '' for the browser's, else an IANA name (a stored name Intl does not know reads as ''). */
export const zoneSetting = (from: Storage | undefined = storage()): string => {
  if (setting === undefined) {
    const stored = from?.getItem(ZONE_STORAGE_KEY) ?? '';
    setting = isZone(stored) ? stored : '';
  }
  return setting;
};

/** The zone every time of the console is shown in. */
export const consoleZone = () => zoneSetting() || browserZone();

/** Chooses the console's zone ('' : the browser's) and tells every subscriber. @throws Error for a zone Intl does not know. */
export const setZoneSetting = (zone: string, to: Storage | undefined = storage()) => {
  if (zone && !isZone(zone)) throw new Error(`Unknown time zone ${zone}.`);
  setting = zone;
  if (zone) to?.setItem(ZONE_STORAGE_KEY, zone);
  else to?.removeItem(ZONE_STORAGE_KEY);
  for (const listener of listeners) listener();
};

/** Hears every change of the zone setting; answers the unsubscription. */
export const subscribeZone = (listener: () => void) => {
  listeners.add(listener);
  return () => void listeners.delete(listener);
};

/** Forgets the setting read (tests). */
export const resetZoneSetting = () => {
  setting = undefined;
};

const formatters = new Map<string, Intl.DateTimeFormat>();
const formatterOf = (zone: string) => {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    formatters.set(zone, f);
  }
  return f;
};

/** A moment's wall-clock fields in `zone`, and the zone's name there (`CST`, `UTC`, `GMT+5:30`). */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  zoneName: string;
}

/** The wall-clock time of `ms` (ms since the epoch) in `zone`. */
export const wallTime = (ms: number, zone: string): WallTime => {
  const parts: Record<string, string> = {};
  for (const { type, value } of formatterOf(zone).formatToParts(new Date(ms))) parts[type] = value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) % 24,
    minute: Number(parts.minute),
    second: Number(parts.second),
    zoneName: parts.timeZoneName ?? zone,
  };
};

/** The zone's offset from UTC at `ms`, in minutes (Chicago in winter: -360). */
export const zoneOffsetMinutes = (ms: number, zone: string) => {
  const w = wallTime(ms, zone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
};

/** An offset in minutes as `UTC−06:00`, `UTC+05:30`, `UTC`. */
export const formatOffset = (minutes: number) => {
  if (!minutes) return 'UTC';
  const abs = Math.abs(minutes);
  return `UTC${minutes < 0 ? '−' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
};

/** The zone's short name at `ms` (`CST`, `UTC`, `GMT+1`). */
export const zoneName = (ms: number, zone: string) => wallTime(ms, zone).zoneName;

/** How an axis or a form names the zone: `America/Chicago, CST` (the name alone when they are the same: `UTC`). */
export const zoneLabel = (zone: string, ms = Date.now()) => {
  const name = zoneName(ms, zone);
  return name === zone ? zone : `${zone}, ${name}`;
};

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * A moment as `2026-11-25 13:36:05 CST` in `zone`. `fraction`: 3 adds the milliseconds, 6 the
 * microseconds (of `micros`, the moment in µs, when it has them: a cloud-stamped point's time).
 */
export const formatTime = (ms: number, zone: string, { fraction = 0, micros }: { fraction?: 0 | 3 | 6; micros?: number } = {}) => {
  const whole = Math.floor(ms);
  const w = wallTime(whole, zone);
  let text = `${w.year}-${pad(w.month)}-${pad(w.day)} ${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
  if (fraction === 3) text += `.${pad(((whole % 1000) + 1000) % 1000, 3)}`;
  if (fraction === 6) {
    const us = micros ?? whole * 1000;
    text += `.${pad(((us % 1_000_000) + 1_000_000) % 1_000_000, 6)}`;
  }
  return `${text} ${w.zoneName}`;
};

/**
 * A time axis tick (`ts` in Unix seconds) in `zone`, as precise as the ticks' spacing (`incr`,
 * seconds) needs: `13:36:05`, `13:36`, `11-25 13:00`, `2026-11-25`.
 */
export const formatTick = (ts: number, zone: string, incr: number) => {
  const w = wallTime(ts * 1000, zone);
  const date = `${pad(w.month)}-${pad(w.day)}`;
  if (incr < 60) return `${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}`;
  if (incr < 3600 * 4) return w.hour === 0 && w.minute === 0 ? `${date} 00:00` : `${pad(w.hour)}:${pad(w.minute)}`;
  if (incr < 86_400) return `${date} ${pad(w.hour)}:${pad(w.minute)}`;
  return `${w.year}-${date}`;
};

/** An ISO time (the API's) in the console's zone, `—` for none. */
export const formatIso = (iso: string | null | undefined, zone = consoleZone()) => {
  if (!iso) return '—';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : formatTime(ms, zone);
};

/** `YYYY-MM-DDTHH:MM` (a `datetime-local` input's value) of `ms` in `zone`. */
export const toWallInput = (ms: number, zone: string) => {
  const w = wallTime(ms, zone);
  return `${w.year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}`;
};

const WALL = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?$/;

/**
 * The moment a wall-clock time (`YYYY-MM-DDTHH:MM[:SS]`) names in `zone` (ms since the epoch);
 * undefined for empty or malformed text. A time a DST jump skips reads with the offset before it;
 * one it repeats, the first of the two.
 */
export const fromWallInput = (text: string, zone: string): number | undefined => {
  const m = WALL.exec(text.trim());
  if (!m) return undefined;
  const asUtc = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0));
  // the offset at the guess, then at the corrected guess (it differs across a DST change)
  let ms = asUtc - zoneOffsetMinutes(asUtc, zone) * 60_000;
  const second = asUtc - zoneOffsetMinutes(ms, zone) * 60_000;
  if (second !== ms && zoneOffsetMinutes(second, zone) === Math.round((asUtc - second) / 60_000)) ms = second;
  return ms;
};

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The Data page's ranges: relative ones up to now, and an absolute one from the form's inputs. */
export const RANGES = [
  { key: '15m', label: 'Last 15 minutes', ms: 15 * MINUTE },
  { key: '1h', label: 'Last hour', ms: HOUR },
  { key: '6h', label: 'Last 6 hours', ms: 6 * HOUR },
  { key: '24h', label: 'Last 24 hours', ms: DAY },
  { key: '7d', label: 'Last 7 days', ms: 7 * DAY },
  { key: '30d', label: 'Last 30 days', ms: 30 * DAY },
  { key: 'absolute', label: 'From … until …', ms: 0 },
] as const;
export type RangeKey = (typeof RANGES)[number]['key'];

/** The range the Data page opens with: a day shows what devices sent today, not three dots of a month. */
export const DEFAULT_RANGE: RangeKey = '24h';

/**
 * The bounds (ISO, `end` excluded) a range selects at `now`: a relative range ends now (no end
 * bound, so that the points still arriving count); an absolute one is the wall times `from` and
 * `until` in `zone` (either may be empty: unbounded).
 */
export const rangeBounds = (key: RangeKey, now: number, zone: string, from = '', until = ''): { start?: string; end?: string } => {
  if (key === 'absolute') {
    const start = fromWallInput(from, zone);
    const end = fromWallInput(until, zone);
    return { start: start === undefined ? undefined : new Date(start).toISOString(), end: end === undefined ? undefined : new Date(end).toISOString() };
  }
  const range = RANGES.find((r) => r.key === key)!;
  return { start: new Date(now - range.ms).toISOString() };
};

/** The Data page's auto-refresh choices: never faster than every 30 s (issue 33's bound for every page). */
export const REFRESH_CHOICES = [
  { key: 'off', label: 'Off', ms: 0 },
  { key: '30s', label: 'Every 30 s', ms: 30_000 },
  { key: '1m', label: 'Every minute', ms: 60_000 },
  { key: '5m', label: 'Every 5 minutes', ms: 300_000 },
] as const;
export type RefreshKey = (typeof REFRESH_CHOICES)[number]['key'];
