import * as z from 'zod';

/** What is counted per workspace per UTC day (spec/operations.md §5). */
export const USAGE_COUNTERS = [
  'points_in',
  'points_stored',
  'points_refused',
  'api_requests',
  'webhook_deliveries',
  'webhook_failures',
  'events_in',
  'events_refused',
  'up_messages_in',
  'up_messages_refused',
] as const;
export type UsageCounter = (typeof USAGE_COUNTERS)[number];
export type UsageCounts = Record<UsageCounter, number>;

/** Most days one usage answer covers: a year, a leap day included. */
export const USAGE_DAYS_MAX = 366;
/** Days a usage query covers when it names no `start`: the last 30, today included. */
export const USAGE_DEFAULT_DAYS = 30;

const DAY_MS = 24 * 3600 * 1000;

/** A UTC day, `YYYY-MM-DD`, as `Date.parse` reads it (midnight UTC). */
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const DaySchema = z.iso.date('Must be a date YYYY-MM-DD.').meta({ description: 'A UTC day, YYYY-MM-DD', example: '2026-11-26' });

/** The days a usage query covers, inclusive: `end` defaults to today and `start` to USAGE_DEFAULT_DAYS − 1 days before `end`. */
export const usageRange = ({ start, end }: { start?: string; end?: string }, now = Date.now()) => {
  const last = end ?? dayOf(now);
  return { start: start ?? dayOf(Date.parse(last) - (USAGE_DEFAULT_DAYS - 1) * DAY_MS), end: last };
};

/**
 * The usage query: an inclusive range of UTC days, at most USAGE_DAYS_MAX of them (see
 * {@link usageRange} for the defaults). JSON Schema cannot compare two parameters, so the document
 * says the rules in words.
 */
export const UsageQuerySchema = z
  .strictObject({
    start: DaySchema.optional().meta({
      description: `First day (UTC), included; not after end, at most ${USAGE_DAYS_MAX} days back from it. Default: ${USAGE_DEFAULT_DAYS - 1} days before end`,
    }),
    end: DaySchema.optional().meta({ description: 'Last day (UTC), included. Default: today (UTC)' }),
  })
  .superRefine((query, ctx) => {
    // A day that is not a date at all is its own field's error.
    if ([query.start, query.end].some((day) => day !== undefined && Number.isNaN(Date.parse(day)))) return;
    const { start, end } = usageRange(query);
    const days = (Date.parse(end) - Date.parse(start)) / DAY_MS + 1;
    if (days < 1) ctx.addIssue({ code: 'custom', message: 'Must not be after end.', path: ['start'] });
    else if (days > USAGE_DAYS_MAX)
      ctx.addIssue({ code: 'custom', message: `Must make a range of at most ${USAGE_DAYS_MAX} days, start and end included.`, path: ['start'] });
  });
export type UsageQuery = z.output<typeof UsageQuerySchema>;

const count = (description: string) => z.number().int().min(0).meta({ description });

const countsShape = {
  points_in: count('Data points received from the workspace’s devices (stored, refused or a repeat), by either door'),
  points_stored: count('Data points written to the store: received and within their device’s daily quota'),
  points_refused: count('Data points refused because their device had reached points_per_device_per_day'),
  api_requests: count('Management and storage requests on the workspace’s paths, by API keys or console sessions of its account'),
  webhook_deliveries: count('Webhook POSTs answered 2xx'),
  webhook_failures: count('Webhook POSTs that failed (an error status, no answer in time, a refused connection)'),
  events_in: count('Events reported by the workspace’s devices (forwarded or refused), by either door'),
  events_refused: count('Events refused because their device had reached events_per_device_per_day'),
  up_messages_in: count(
    'Other messages of the workspace’s devices: MQTT j/up requests and results, and their HTTPS twins (GET /device/status, job and FOTA results)',
  ),
  up_messages_refused: count('Such messages refused because their device had reached up_messages_per_device_per_day'),
};

export const UsageTotalsSchema = z.object(countsShape).meta({ id: 'UsageTotals' });

export const UsageDaySchema = z.object({ date: DaySchema, ...countsShape }).meta({ id: 'UsageDay' });
export type UsageDay = z.infer<typeof UsageDaySchema>;

export const UsageResponseSchema = z.object({
  usage: z.object({
    days: z.array(UsageDaySchema).meta({ description: 'Every day of the range, oldest first; a day without activity counts zeros' }),
    totals: UsageTotalsSchema,
  }),
});
