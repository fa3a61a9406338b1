import { JOB_STATUSES, type JobStatus, type Rollout, type RolloutDevice, type RolloutSettingsInput, type RolloutStatus } from './api';
import type { ErrorDetail } from './errors';
import { desiredKeysText } from './state';

/** A rollout's states that never change again. */
export const ENDED_ROLLOUT_STATUSES: ReadonlySet<RolloutStatus> = new Set(['completed', 'canceled', 'aborted']);

/** Which of pause, resume and cancel apply to a rollout in this state (the API answers 409 to each once it has ended). */
export const rolloutActions = (status: RolloutStatus) => ({
  pause: status === 'in_progress',
  resume: status === 'paused',
  cancel: !ENDED_ROLLOUT_STATUSES.has(status),
});

/**
 * Whether a rollout's counts may still move. A canceled or aborted rollout has ended, but its
 * queued and pending devices are canceled by the next sweep, and devices in progress go on: the
 * counts settle only once nothing is queued, pending or in progress.
 */
export const countsMayMove = (rollout: Pick<Rollout, 'status' | 'counts'>) =>
  !ENDED_ROLLOUT_STATUSES.has(rollout.status) || rollout.counts.queued + rollout.counts.pending + rollout.counts.in_progress > 0;

/** The ended states, in the order the progress bar draws them. */
export const PROGRESS_STATES = ['done', 'failed', 'timed_out', 'canceled'] as const satisfies readonly JobStatus[];

/** How far a rollout has got: its ended devices of `total`, each ended state's share (percent of `total`). */
export const rolloutProgress = ({ total, counts }: Pick<Rollout, 'total' | 'counts'>) => {
  const ended = PROGRESS_STATES.reduce((n, s) => n + counts[s], 0);
  const share = (n: number) => (total > 0 ? (100 * n) / total : 0);
  return {
    ended,
    total,
    percent: share(ended),
    segments: PROGRESS_STATES.map((status) => ({ status, count: counts[status], percent: share(counts[status]) })),
  };
};

const number = new Intl.NumberFormat('en-US');

/** The progress in words, for the bar's accessible name: "12 of 1,000 devices ended: 8 done, 2 failed, 0 timed out, 2 canceled". */
export const progressLabel = (rollout: Pick<Rollout, 'total' | 'counts'>) => {
  const { ended, total, segments } = rolloutProgress(rollout);
  return `${number.format(ended)} of ${number.format(total)} devices ended: ${segments.map((s) => `${number.format(s.count)} ${s.status.replace('_', ' ')}`).join(', ')}`;
};

/** What a rollout schedules: "Job reboot", "FOTA app 1.2.0", "State interval, mode" (the desired keys it sets). */
export const rolloutTitle = (rollout: Pick<Rollout, 'kind' | 'job_name' | 'firmware_id' | 'firmware_version' | 'desired'>) =>
  rollout.kind === 'job'
    ? `Job ${rollout.job_name ?? ''}`
    : rollout.kind === 'state'
      ? `State ${desiredKeysText(rollout.desired)}`
      : `FOTA ${rollout.firmware_id ?? ''} ${rollout.firmware_version ?? ''}`;

/**
 * The states a device of a rollout of this kind goes through, in order: a state rollout's device is
 * never in progress (queued, pending until it reports the keys, done; failed only when its merged
 * desired state would break the 16 KB rule; timed out; canceled before its release).
 */
export const STATE_ROLLOUT_STATUSES = ['queued', 'pending', 'done', 'failed', 'timed_out', 'canceled'] as const satisfies readonly JobStatus[];
export const rolloutStatuses = (kind: Rollout['kind']): readonly JobStatus[] => (kind === 'state' ? STATE_ROLLOUT_STATUSES : JOB_STATUSES);

/** What each state of a device means in a state rollout (the job meanings say "answered", which a state does not). */
export const STATE_ROLLOUT_MEANINGS: Readonly<Partial<Record<JobStatus, string>>> = {
  queued: 'not released yet: its desired state is not changed',
  pending: 'its desired keys are set; it has not reported them yet (it has not applied them)',
  done: 'it reports every desired key of the rollout as set',
  failed: 'its desired state, merged with these keys, would break a rule (16 KB): not changed',
  timed_out: 'not reported within the timeout after its release (its desired keys stay set)',
  canceled: 'canceled before its release (a released device keeps its desired keys)',
};

/** A device state in the rollout page's words: a state rollout's `pending` is who has not applied it. */
export const rolloutStateLabel = (kind: Rollout['kind'], status: JobStatus) =>
  kind === 'state' && status === 'pending' ? 'pending (not applied yet)' : status.replace(/_/g, ' ');

/** A duration in seconds in the largest units that say it exactly: "90 s", "10 min", "1 h 30 min", "7 d". */
export const formatSeconds = (seconds: number) => {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['min', 60],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
  }
  if (rest || !parts.length) parts.push(`${rest} s`);
  return parts.join(' ');
};

/** A rollout's settings in words, each one that is off said so. */
export const describeSettings = (settings: Rollout['settings']) => [
  settings.max_per_minute === null ? 'every device released at once' : `at most ${number.format(settings.max_per_minute)} devices released a minute`,
  settings.timeout_seconds === null ? 'no timeout' : `each device times out ${formatSeconds(settings.timeout_seconds)} after its release`,
  settings.abort === null
    ? 'no abort rule'
    : `aborts once at least ${number.format(settings.abort.min_finished)} devices have ended and ${settings.abort.failure_percentage} % of them failed or timed out`,
];

/** The rollout settings as typed in a scheduling form (text, empty for off). */
export interface RolloutFields {
  maxPerMinute: string;
  timeoutSeconds: string;
  failurePercentage: string;
  minFinished: string;
}
export type RolloutField = keyof RolloutFields;
export const EMPTY_ROLLOUT_FIELDS: RolloutFields = { maxPerMinute: '', timeoutSeconds: '', failurePercentage: '', minFinished: '' };

/** The API's bounds (lambdas/schemas/rollout-settings.ts): the form says what the API would. */
export const TIMEOUT_SECONDS_MAX = 604_800;
export const MAX_PER_MINUTE_MAX = 100_000;
export const MIN_FINISHED_MAX = 10_000_000;

type Checked = { value?: number; error?: string };

/** A whole number within bounds, or nothing when empty; the messages are the API's. */
const wholeNumber = (text: string, max: number, unit: string, maxWords = String(max)): Checked => {
  if (!text.trim()) return {};
  const value = Number(text);
  if (!Number.isFinite(value)) return { error: 'Must be a number.' };
  if (!Number.isInteger(value)) return { error: `Must be a whole number of ${unit}.` };
  if (value < 1) return { error: 'Must be at least 1.' };
  if (value > max) return { error: `Must be at most ${maxWords}.` };
  return { value };
};

/** A timeout in seconds (1 to a week), as a device's scheduling and a rollout take it; nothing when empty. */
export const checkTimeout = (text: string): Checked => wholeNumber(text, TIMEOUT_SECONDS_MAX, 'seconds', `${TIMEOUT_SECONDS_MAX} (a week)`);

/**
 * Checks the rollout settings of a form as the API does: each in its bounds, the abort rule with
 * both of its numbers or neither. Answers the settings to send (undefined: none, as in v3) or
 * the errors by field.
 */
export const checkRolloutFields = (fields: RolloutFields): { settings?: RolloutSettingsInput; errors: Partial<Record<RolloutField, string>> } => {
  const errors: Partial<Record<RolloutField, string>> = {};
  const max = wholeNumber(fields.maxPerMinute, MAX_PER_MINUTE_MAX, 'devices');
  const timeout = checkTimeout(fields.timeoutSeconds);
  const minFinished = wholeNumber(fields.minFinished, MIN_FINISHED_MAX, 'devices');
  let percentage: Checked = {};
  if (fields.failurePercentage.trim()) {
    const value = Number(fields.failurePercentage);
    if (!Number.isFinite(value)) percentage = { error: 'Must be a number.' };
    else if (value < 0.01) percentage = { error: 'Must be more than 0 (at least 0.01).' };
    else if (value > 100) percentage = { error: 'Must be at most 100.' };
    else percentage = { value };
  }
  if (max.error) errors.maxPerMinute = max.error;
  if (timeout.error) errors.timeoutSeconds = timeout.error;
  if (percentage.error) errors.failurePercentage = percentage.error;
  if (minFinished.error) errors.minFinished = minFinished.error;
  const both = 'The abort rule takes both a failure percentage and a minimum of ended devices: give both, or neither.';
  if (fields.failurePercentage.trim() && !fields.minFinished.trim()) errors.minFinished = both;
  if (fields.minFinished.trim() && !fields.failurePercentage.trim()) errors.failurePercentage = both;
  if (Object.keys(errors).length) return { errors };
  const settings: RolloutSettingsInput = {
    ...(max.value !== undefined ? { max_per_minute: max.value } : {}),
    ...(timeout.value !== undefined ? { timeout_seconds: timeout.value } : {}),
    ...(percentage.value !== undefined && minFinished.value !== undefined
      ? { abort: { failure_percentage: percentage.value, min_finished: minFinished.value } }
      : {}),
  };
  return { settings: Object.keys(settings).length ? settings : undefined, errors };
};

/** Where the API's 400 names a rollout setting (`body.rollout.abort.min_finished`), the form's field. */
const API_FIELDS: Readonly<Record<string, RolloutField>> = {
  'body.rollout.max_per_minute': 'maxPerMinute',
  'body.rollout.timeout_seconds': 'timeoutSeconds',
  'body.rollout.abort': 'failurePercentage',
  'body.rollout.abort.failure_percentage': 'failurePercentage',
  'body.rollout.abort.min_finished': 'minFinished',
};

/** The API's 400 details that name a rollout setting, by the form's field. */
export const rolloutFieldErrors = (details: readonly ErrorDetail[]): Partial<Record<RolloutField, string>> => {
  const errors: Partial<Record<RolloutField, string>> = {};
  for (const { field, message } of details) {
    const at = API_FIELDS[field];
    if (at) errors[at] = errors[at] ? `${errors[at]} ${message}` : message;
  }
  return errors;
};

/**
 * What a device of a rollout reported, in a line: a FOTA's message; a failed job's `error` when it
 * is text, else its result as JSON; a dash when nothing.
 */
export const describeOutcome = (device: Pick<RolloutDevice, 'result' | 'message'>) => {
  if (device.message) return device.message;
  if (!device.result) return '—';
  const { error } = device.result;
  return typeof error === 'string' && Object.keys(device.result).length === 1 ? error : JSON.stringify(device.result);
};

/** What a 409 of pause, resume or cancel means on the rollout page. */
export const ROLLOUT_CONFLICT_HINT = 'This rollout has ended, so it can no longer be paused, resumed or canceled. The page now shows it as it is.';

/** The states a device ended in badly: what the rollout page lists first. */
export const BAD_END_STATES = ['failed', 'timed_out', 'canceled'] as const satisfies readonly JobStatus[];

/** The device filter of the rollout page: the states that ended badly, one state, or every state. */
export type DeviceFilter = 'bad' | 'all' | JobStatus;

/** The filter a rollout's device list starts with: the states that ended badly when a device is in one, else every state. */
export const defaultDeviceFilter = (counts: Rollout['counts']): DeviceFilter => (BAD_END_STATES.some((s) => counts[s] > 0) ? 'bad' : 'all');

/** The states a filter asks the API for (`?status=…`, in this order); undefined: every state. */
export const filterStates = (filter: DeviceFilter): readonly JobStatus[] | undefined =>
  filter === 'all' ? undefined : filter === 'bad' ? BAD_END_STATES : [filter];

/** How many of a rollout's devices a filter selects, by its counts. */
export const filterCount = (filter: DeviceFilter, rollout: Pick<Rollout, 'total' | 'counts'>) =>
  filterStates(filter)?.reduce((n, s) => n + rollout.counts[s], 0) ?? rollout.total;

/**
 * Whether the first page of a rollout's devices (at most `pageSize` of them, in `filter`) shows
 * other numbers than the counts say: fewer devices than it should, or, when the page holds every
 * device the filter selects, another number in some state. The list comes from an index read after
 * the counts, so a refresh reads both again while this holds ({@link readRolloutView}).
 */
export const listLags = (
  devices: readonly Pick<RolloutDevice, 'status'>[],
  filter: DeviceFilter,
  rollout: Pick<Rollout, 'total' | 'counts'>,
  pageSize: number,
) => {
  const wanted = filterCount(filter, rollout);
  if (wanted > pageSize) return devices.length < pageSize;
  if (devices.length !== wanted) return true;
  const states = filterStates(filter) ?? (Object.keys(rollout.counts) as JobStatus[]);
  return states.some((s) => devices.filter((d) => d.status === s).length !== rollout.counts[s]);
};

/**
 * When a rate-limited rollout releases its next devices, and when its last queued device (the
 * ETA of its releases: one release of `max_per_minute` a minute from `next_release_at`), and with
 * a timeout, when every device will have ended at the latest; undefined when nothing is left to
 * release (no rate, paused, ended, nothing queued). A release time already past (the sweep is due)
 * counts from `now`.
 */
export const releaseForecast = (rollout: Pick<Rollout, 'status' | 'settings' | 'counts' | 'next_release_at'>, now = Date.now()) => {
  const rate = rollout.settings.max_per_minute;
  const { queued } = rollout.counts;
  if (rollout.status !== 'in_progress' || !rate || !rollout.next_release_at || queued === 0) return undefined;
  const next = Math.max(Date.parse(rollout.next_release_at), now);
  const releases = Math.ceil(queued / rate);
  const last = next + (releases - 1) * 60_000;
  const timeout = rollout.settings.timeout_seconds;
  return {
    next: new Date(next).toISOString(),
    nextCount: Math.min(rate, queued),
    releases,
    last: new Date(last).toISOString(),
    endedBy: timeout === null ? undefined : new Date(last + timeout * 1000).toISOString(),
  };
};

/** A time to come in words, from `now`: "in 45 s", "in 12 min", "in 3 h 5 min". */
export const fromNow = (iso: string, now = Date.now()) => {
  const seconds = Math.max(0, Math.round((Date.parse(iso) - now) / 1000));
  return seconds < 60 ? `in ${seconds} s` : `in ${formatSeconds(Math.round(seconds / 60) * 60)}`;
};

/** What the rollout page shows, read together: the rollout (its counts), and the page of its devices read after them. */
export interface RolloutView {
  rollout: Rollout;
  /** The filter the devices were read with: the one chosen, else the default of these counts. */
  filter: DeviceFilter;
  /** The cursors of the device pages before the one shown (none: the first page). */
  cursors: string[];
  devices: { items: RolloutDevice[]; next: string | null };
}

/** Which devices the page wants: a filter chosen by hand (none: the default), and the page (cursors) of the filter it shows. */
export interface ViewWanted {
  chosen?: DeviceFilter;
  filter?: DeviceFilter;
  cursors: readonly string[];
}

/** How many more times a refresh reads counts and devices again while they disagree, and how long it waits before each. */
export const LAG_READS = 5;
export const LAG_READ_MS = 1_000;

/** Waits `ms`, or rejects at once when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** The two reads a rollout view takes (the API client's). */
export interface RolloutReads {
  getRollout: (workspaceId: string, rolloutId: string, signal?: AbortSignal) => Promise<Rollout>;
  listRolloutDevices: (
    workspaceId: string,
    rolloutId: string,
    query: { limit?: number; cursor?: string; status?: readonly JobStatus[] },
    signal?: AbortSignal,
  ) => Promise<{ items: RolloutDevice[]; next: string | null }>;
}

/**
 * Reads what the rollout page shows, one request at a time: the rollout (its counts), then its
 * devices with the filter those counts call for (the default moves to the devices that ended badly
 * once one did; another filter than the page's starts at its first page). The device list comes
 * from an index, a moment behind or (a device that moved between the two reads) ahead of the
 * counts: while the first page shows other numbers than the counts, both are read again, at most
 * {@link LAG_READS} times {@link LAG_READ_MS} apart, so that what is shown agrees. Everything stops
 * when `signal` aborts: the request in flight is canceled and the read rejected.
 */
export const readRolloutView = async (
  api: RolloutReads,
  workspaceId: string,
  rolloutId: string,
  wanted: ViewWanted,
  pageSize: number,
  signal: AbortSignal,
): Promise<RolloutView> => {
  for (let attempt = 0; ; attempt++) {
    const rollout = await api.getRollout(workspaceId, rolloutId, signal);
    const filter = wanted.chosen ?? defaultDeviceFilter(rollout.counts);
    const cursors = filter === wanted.filter ? [...wanted.cursors] : [];
    const devices = await api.listRolloutDevices(workspaceId, rolloutId, { status: filterStates(filter), limit: pageSize, cursor: cursors.at(-1) }, signal);
    if (attempt >= LAG_READS || cursors.length || !listLags(devices.items, filter, rollout, pageSize)) return { rollout, filter, cursors, devices };
    await pause(LAG_READ_MS, signal);
  }
};
