import { jest } from '@jest/globals';
import type { Rollout } from '../../../console/src/lib/api';
import { ApiError, describeError } from '../../../console/src/lib/errors';
import { ENDED_JOB_STATUSES, JOB_STATE_MEANINGS, jobOpen, stateLabel } from '../../../console/src/lib/jobs';
import {
  checkRolloutFields,
  checkTimeout,
  countsMayMove,
  defaultDeviceFilter,
  filterCount,
  filterStates,
  fromNow,
  listLags,
  releaseForecast,
  describeOutcome,
  describeSettings,
  EMPTY_ROLLOUT_FIELDS,
  formatSeconds,
  progressLabel,
  readRolloutView,
  LAG_READS,
  ROLLOUT_CONFLICT_HINT,
  rolloutActions,
  rolloutFieldErrors,
  rolloutProgress,
  rolloutTitle,
} from '../../../console/src/lib/rollouts';

const counts = (c: Partial<Rollout['counts']> = {}): Rollout['counts'] => ({
  queued: 0,
  pending: 0,
  in_progress: 0,
  done: 0,
  failed: 0,
  timed_out: 0,
  canceled: 0,
  ...c,
});

describe('a rollout on its page', () => {
  it('offers pause while in progress, resume while paused, cancel until it ends', () => {
    expect(rolloutActions('in_progress')).toEqual({ pause: true, resume: false, cancel: true });
    expect(rolloutActions('paused')).toEqual({ pause: false, resume: true, cancel: true });
    for (const ended of ['completed', 'canceled', 'aborted'] as const) expect(rolloutActions(ended)).toEqual({ pause: false, resume: false, cancel: false });
  });

  it('keeps reading an ended rollout until its queued, pending and in-progress devices have settled', () => {
    expect(countsMayMove({ status: 'in_progress', counts: counts({ done: 4 }) })).toBe(true);
    expect(countsMayMove({ status: 'paused', counts: counts() })).toBe(true);
    // canceled at once; the sweep cancels its queued and pending devices at its next run
    expect(countsMayMove({ status: 'canceled', counts: counts({ queued: 2, done: 2 }) })).toBe(true);
    expect(countsMayMove({ status: 'aborted', counts: counts({ in_progress: 1, failed: 3 }) })).toBe(true);
    expect(countsMayMove({ status: 'canceled', counts: counts({ canceled: 2, done: 2 }) })).toBe(false);
    expect(countsMayMove({ status: 'completed', counts: counts({ done: 4 }) })).toBe(false);
  });

  it('measures progress as the ended devices of the total, a share per ended state', () => {
    const rollout = { total: 1000, counts: counts({ queued: 800, pending: 185, done: 8, failed: 3, timed_out: 1, canceled: 3 }) };
    const progress = rolloutProgress(rollout);
    expect(progress.ended).toBe(15);
    expect(progress.percent).toBeCloseTo(1.5);
    expect(progress.segments).toEqual([
      { status: 'done', count: 8, percent: 0.8 },
      { status: 'failed', count: 3, percent: 0.3 },
      { status: 'timed_out', count: 1, percent: 0.1 },
      { status: 'canceled', count: 3, percent: 0.3 },
    ]);
    expect(progressLabel(rollout)).toBe('15 of 1,000 devices ended: 8 done, 3 failed, 1 timed out, 3 canceled');
    expect(rolloutProgress({ total: 0, counts: counts() })).toMatchObject({ ended: 0, percent: 0 });
  });

  it('names what it schedules and says its settings in words', () => {
    expect(rolloutTitle({ kind: 'job', job_name: 'flash' })).toBe('Job flash');
    expect(rolloutTitle({ kind: 'fota', firmware_id: 'app', firmware_version: '1.2.0' })).toBe('FOTA app 1.2.0');
    expect(rolloutTitle({ kind: 'state', desired: { interval: 60, mode: null } })).toBe('State interval, mode (removed)');
    expect(describeSettings({ max_per_minute: null, timeout_seconds: null, abort: null })).toEqual([
      'every device released at once',
      'no timeout',
      'no abort rule',
    ]);
    expect(describeSettings({ max_per_minute: 1500, timeout_seconds: 5400, abort: { failure_percentage: 20, min_finished: 10 } })).toEqual([
      'at most 1,500 devices released a minute',
      'each device times out 1 h 30 min after its release',
      'aborts once at least 10 devices have ended and 20 % of them failed or timed out',
    ]);
    expect([formatSeconds(1), formatSeconds(90), formatSeconds(600), formatSeconds(604_800), formatSeconds(86_461)]).toEqual([
      '1 s',
      '1 min 30 s',
      '10 min',
      '7 d',
      '1 d 1 min 1 s',
    ]);
  });

  it('shows what each device reported: a failed job’s error, a result, a FOTA’s message', () => {
    expect(describeOutcome({ result: { error: 'flash write failed' } })).toBe('flash write failed');
    expect(describeOutcome({ result: { error: 'e', code: 7 } })).toBe('{"error":"e","code":7}');
    expect(describeOutcome({ result: { written: true } })).toBe('{"written":true}');
    expect(describeOutcome({ message: 'checksum mismatch' })).toBe('checksum mismatch');
    expect(describeOutcome({})).toBe('—');
  });

  it('says what a 409 of pause, resume or cancel means there', () => {
    const conflict = new ApiError(409, 'conflict', 'Rollout rol-1 has ended (aborted).');
    expect(describeError(conflict, { 409: ROLLOUT_CONFLICT_HINT })).toEqual({ title: 'Rollout rol-1 has ended (aborted).', lines: [ROLLOUT_CONFLICT_HINT] });
    // elsewhere, the general hint
    expect(describeError(conflict).lines[0]).toMatch(/reload and try again/);
  });
});

describe('the rollout settings of a scheduling form', () => {
  const fields = (f: Partial<typeof EMPTY_ROLLOUT_FIELDS>) => ({ ...EMPTY_ROLLOUT_FIELDS, ...f });

  it('sends no settings when every field is empty (all at once, as in v3)', () => {
    expect(checkRolloutFields(EMPTY_ROLLOUT_FIELDS)).toEqual({ settings: undefined, errors: {} });
  });

  it('sends the settings typed, the abort rule with both its numbers', () => {
    expect(checkRolloutFields(fields({ maxPerMinute: '100', timeoutSeconds: '3600', failurePercentage: '12.5', minFinished: '10' }))).toEqual({
      settings: { max_per_minute: 100, timeout_seconds: 3600, abort: { failure_percentage: 12.5, min_finished: 10 } },
      errors: {},
    });
    expect(checkRolloutFields(fields({ maxPerMinute: ' 2 ' })).settings).toEqual({ max_per_minute: 2 });
  });

  it.each([
    [{ maxPerMinute: '0' }, 'maxPerMinute', 'Must be at least 1.'],
    [{ maxPerMinute: '-5' }, 'maxPerMinute', 'Must be at least 1.'],
    [{ maxPerMinute: '100001' }, 'maxPerMinute', 'Must be at most 100000.'],
    [{ maxPerMinute: '2.5' }, 'maxPerMinute', 'Must be a whole number of devices.'],
    [{ maxPerMinute: 'many' }, 'maxPerMinute', 'Must be a number.'],
    [{ timeoutSeconds: '604801' }, 'timeoutSeconds', 'Must be at most 604800 (a week).'],
    [{ timeoutSeconds: '1.5' }, 'timeoutSeconds', 'Must be a whole number of seconds.'],
    [{ failurePercentage: '101', minFinished: '5' }, 'failurePercentage', 'Must be at most 100.'],
    [{ failurePercentage: '0', minFinished: '5' }, 'failurePercentage', 'Must be more than 0 (at least 0.01).'],
    [{ failurePercentage: '20', minFinished: '0' }, 'minFinished', 'Must be at least 1.'],
    [{ failurePercentage: '20' }, 'minFinished', expect.stringMatching(/give both, or neither/)],
    [{ minFinished: '10' }, 'failurePercentage', expect.stringMatching(/give both, or neither/)],
  ])('refuses %j as the API does', (typed, field, message) => {
    const checked = checkRolloutFields(fields(typed));
    expect(checked.settings).toBeUndefined();
    expect(checked.errors).toEqual({ [field]: message });
  });

  it('names both a wrong abort percentage and the missing minimum', () => {
    expect(checkRolloutFields(fields({ failurePercentage: '150' })).errors).toEqual({
      failurePercentage: 'Must be at most 100.',
      minFinished: expect.stringMatching(/give both, or neither/),
    });
  });

  it('checks a device’s timeout the same way', () => {
    expect(checkTimeout('')).toEqual({});
    expect(checkTimeout('600')).toEqual({ value: 600 });
    expect(checkTimeout('0')).toEqual({ error: 'Must be at least 1.' });
  });

  it('puts the API’s 400 details next to the fields they name', () => {
    expect(
      rolloutFieldErrors([
        { field: 'body.rollout.max_per_minute', message: 'Must be at least 1.' },
        { field: 'body.rollout.abort.failure_percentage', message: 'Must be at most 100.' },
        { field: 'body.rollout.abort.min_finished', message: 'Required' },
        { field: 'body.value', message: 'Must be an object.' },
      ]),
    ).toEqual({ maxPerMinute: 'Must be at least 1.', failurePercentage: 'Must be at most 100.', minFinished: 'Required' });
    expect(rolloutFieldErrors([{ field: 'body.rollout.abort', message: 'Unrecognized key: "other"' }])).toEqual({
      failurePercentage: 'Unrecognized key: "other"',
    });
  });
});

describe('job and FOTA states', () => {
  it('explains all seven, four of which end', () => {
    expect(Object.keys(JOB_STATE_MEANINGS)).toEqual(['queued', 'pending', 'in_progress', 'done', 'failed', 'timed_out', 'canceled']);
    expect([...ENDED_JOB_STATUSES]).toEqual(['done', 'failed', 'timed_out', 'canceled']);
    expect(['queued', 'pending', 'in_progress'].every((s) => jobOpen(s as never))).toBe(true);
    expect(jobOpen('timed_out')).toBe(false);
    expect(stateLabel('in_progress')).toBe('in progress');
  });
});

describe('a rollout’s devices and releases on its page', () => {
  it('starts the device list on the states that ended badly when a device is in one, else on every state', () => {
    expect(defaultDeviceFilter(counts({ pending: 4 }))).toBe('all');
    expect(defaultDeviceFilter(counts({ pending: 3, done: 1 }))).toBe('all');
    for (const bad of ['failed', 'timed_out', 'canceled'] as const) expect(defaultDeviceFilter(counts({ done: 3, [bad]: 1 }))).toBe('bad');
    expect(filterStates('bad')).toEqual(['failed', 'timed_out', 'canceled']);
    expect(filterStates('done')).toEqual(['done']);
    expect(filterStates('all')).toBeUndefined();
    const rollout = { total: 10, counts: counts({ done: 4, failed: 1, timed_out: 2, canceled: 3 }) };
    expect([filterCount('bad', rollout), filterCount('done', rollout), filterCount('all', rollout)]).toEqual([6, 4, 10]);
  });

  it('tells when the list shows other numbers than the counts', () => {
    const rollout = { total: 4, counts: counts({ done: 1, timed_out: 1, canceled: 2 }) };
    const row = (status: Rollout['counts'] extends Record<infer S, number> ? S : never) => ({ status });
    // after an abort the list still shows the device pending that the counts say is canceled
    expect(listLags([row('timed_out'), row('canceled'), row('pending')], 'all', rollout, 50)).toBe(true);
    expect(listLags([row('done'), row('timed_out'), row('canceled'), row('canceled')], 'all', rollout, 50)).toBe(false);
    expect(listLags([row('timed_out'), row('canceled')], 'bad', rollout, 50)).toBe(true);
    expect(listLags([row('timed_out'), row('canceled'), row('canceled')], 'bad', rollout, 50)).toBe(false);
    // more devices than a page: a full page is all it can show
    expect(listLags([row('timed_out'), row('canceled')], 'bad', rollout, 2)).toBe(false);
    expect(listLags([row('timed_out')], 'bad', rollout, 2)).toBe(true);
  });

  it('forecasts the next release and the last one from the next release time, the queued count and the rate', () => {
    const now = Date.parse('2026-11-26T08:00:30.000Z');
    const staged = {
      status: 'in_progress' as const,
      settings: { max_per_minute: 10, timeout_seconds: 600, abort: null },
      counts: counts({ queued: 25, pending: 10 }),
      next_release_at: '2026-11-26T08:01:00.000Z',
    };
    expect(releaseForecast(staged, now)).toEqual({
      next: '2026-11-26T08:01:00.000Z',
      nextCount: 10,
      releases: 3,
      last: '2026-11-26T08:03:00.000Z',
      endedBy: '2026-11-26T08:13:00.000Z',
    });
    // due already: the sweep's next run, counted from now
    expect(releaseForecast({ ...staged, settings: { ...staged.settings, timeout_seconds: null }, counts: counts({ queued: 5 }) }, now + 60_000)).toEqual({
      next: '2026-11-26T08:01:30.000Z',
      nextCount: 5,
      releases: 1,
      last: '2026-11-26T08:01:30.000Z',
      endedBy: undefined,
    });
    expect(releaseForecast({ ...staged, status: 'paused' }, now)).toBeUndefined();
    expect(releaseForecast({ ...staged, next_release_at: null }, now)).toBeUndefined();
    expect(releaseForecast({ ...staged, counts: counts({ pending: 35 }) }, now)).toBeUndefined();
    expect([fromNow('2026-11-26T08:01:00.000Z', now), fromNow('2026-11-26T08:13:00.000Z', now), fromNow('2026-11-26T08:00:00.000Z', now)]).toEqual([
      'in 30 s',
      'in 13 min',
      'in 0 s',
    ]);
  });
});

describe('the rollout page’s refresh: counts and devices read together', () => {
  type Device = { device_id: string; status: keyof Rollout['counts']; updated_at: string };
  const rolloutWith = (c: Partial<Rollout['counts']>) =>
    ({ id: 'rol-1', total: 2, updated_at: '2026-11-29T00:00:00.000Z', counts: counts(c) }) as unknown as Rollout;
  /** A fake API that records its calls and answers from `answers`, one request at a time. */
  const fakeApi = (rollout: Rollout, pages: Device[][]) => {
    const calls: string[] = [];
    let inFlight = 0;
    let most = 0;
    const track = async <T>(what: string, signal: AbortSignal | undefined, value: T) => {
      calls.push(what);
      most = Math.max(most, ++inFlight);
      try {
        await new Promise((r) => setTimeout(r, 1));
        if (signal?.aborted) throw signal.reason;
        return value;
      } finally {
        inFlight--;
      }
    };
    let page = 0;
    return {
      calls,
      most: () => most,
      getRollout: (_w: string, _r: string, signal?: AbortSignal) => track('rollout', signal, rollout),
      listRolloutDevices: (_w: string, _r: string, query: { status?: readonly string[]; cursor?: string }, signal?: AbortSignal) =>
        track(`devices ${query.status?.join('+') ?? 'all'} ${query.cursor ?? 'first'}`, signal, {
          items: pages[Math.min(page++, pages.length - 1)] as never,
          next: null,
        }),
    };
  };
  const device = (device_id: string, status: Device['status']): Device => ({ device_id, status, updated_at: '2026-11-29T00:00:00.000Z' });

  it('reads the counts first, then the devices of the filter those counts call for, one request at a time', async () => {
    const api = fakeApi(rolloutWith({ done: 1, timed_out: 1 }), [[device('d2', 'timed_out')]]);
    // the page showed every device (nothing had ended badly), on its second page
    const view = await readRolloutView(api, 'wks', 'rol-1', { filter: 'all', cursors: ['c1'] }, 50, new AbortController().signal);
    expect(api.calls).toEqual(['rollout', 'devices failed+timed_out+canceled first']);
    expect(api.most()).toBe(1);
    expect(view).toMatchObject({ filter: 'bad', cursors: [], devices: { items: [device('d2', 'timed_out')] } });
  });

  it('keeps a filter chosen by hand and its page', async () => {
    const api = fakeApi(rolloutWith({ done: 1, timed_out: 1 }), [[device('d1', 'done')]]);
    const view = await readRolloutView(api, 'wks', 'rol-1', { chosen: 'done', filter: 'done', cursors: ['c1'] }, 1, new AbortController().signal);
    expect(api.calls).toEqual(['rollout', 'devices done c1']);
    expect(view).toMatchObject({ filter: 'done', cursors: ['c1'] });
  });

  it('reads counts and devices again while they disagree, a bounded number of times', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      // the index still says pending for the device the counts call done, every time
      const api = fakeApi(rolloutWith({ done: 1, pending: 1 }), [[device('d1', 'pending'), device('d2', 'pending')]]);
      const read = readRolloutView(api, 'wks', 'rol-1', { cursors: [] }, 50, new AbortController().signal);
      await jest.runAllTimersAsync();
      await read;
      expect(api.calls).toEqual(
        Array(1 + LAG_READS)
          .fill(['rollout', 'devices all first'])
          .flat(),
      );
    } finally {
      jest.useRealTimers();
    }
  });

  it('stops reading once they agree', async () => {
    // the list a moment ahead of the counts (done already), then both agree
    const api = fakeApi(rolloutWith({ done: 1, pending: 1 }), [
      [device('d1', 'done'), device('d2', 'done')],
      [device('d1', 'done'), device('d2', 'pending')],
    ]);
    const view = await readRolloutView(api, 'wks', 'rol-1', { cursors: [] }, 50, new AbortController().signal);
    expect(api.calls).toEqual(['rollout', 'devices all first', 'rollout', 'devices all first']);
    expect(view.devices.items.map((d) => d.status)).toEqual(['done', 'pending']);
  });

  it('stops at once when aborted: the request in flight is canceled, nothing more is read, and the read is rejected', async () => {
    const api = fakeApi(rolloutWith({ done: 1, pending: 1 }), [[device('d1', 'pending'), device('d2', 'pending')]]);
    const controller = new AbortController();
    const read = readRolloutView(api, 'wks', 'rol-1', { cursors: [] }, 50, controller.signal);
    controller.abort();
    await expect(read).rejects.toBeDefined();
    expect(api.calls).toEqual(['rollout']);
  });
});
