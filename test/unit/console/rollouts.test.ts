import type { Rollout } from '../../../console/src/lib/api';
import { ApiError, describeError } from '../../../console/src/lib/errors';
import { ENDED_JOB_STATUSES, JOB_STATE_MEANINGS, jobOpen, stateLabel } from '../../../console/src/lib/jobs';
import {
  checkRolloutFields,
  checkTimeout,
  countsMayMove,
  describeOutcome,
  describeSettings,
  EMPTY_ROLLOUT_FIELDS,
  formatSeconds,
  progressLabel,
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
