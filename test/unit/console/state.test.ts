import type { DeviceState } from '../../../console/src/lib/api';
import { ApiError } from '../../../console/src/lib/errors';
import {
  checkDesiredRows,
  checkFleetDesired,
  conflictOf,
  desiredErrorsOf,
  desiredKeysText,
  desiredPatch,
  desiredRows,
  jsonEqual,
  mergeDesired,
  parseJsonValue,
  rebasedRows,
  rowsChanged,
  stateRows,
} from '../../../console/src/lib/state';
import { rolloutStateLabel, rolloutStatuses, rolloutTitle } from '../../../console/src/lib/rollouts';

const state = (s: Partial<DeviceState> = {}): DeviceState => ({
  desired: {},
  reported: {},
  delta: {},
  version: 0,
  desired_at: {},
  reported_at: {},
  ...s,
});

describe('the side-by-side view of a device’s state', () => {
  it('lists every key of either side with where it stands, the delta’s keys not applied yet', () => {
    const rows = stateRows(
      state({
        desired: { interval: 60, mode: 'eco', limits: { low: 5, high: 9 } },
        reported: { interval: 30, fw_version: '1.2.0', limits: { high: 9, low: 5 } },
        delta: { interval: 60, mode: 'eco' },
        version: 7,
        desired_at: { interval: '2026-11-01T10:00:00.000Z', mode: '2026-11-01T10:00:00.000Z', limits: '2026-10-01T00:00:00.000Z' },
        reported_at: { interval: '2026-10-30T08:00:00.000Z', fw_version: '2026-10-30T08:00:00.000Z', limits: '2026-10-02T00:00:00.000Z' },
      }),
    );
    expect(rows.map((r) => [r.key, r.standing])).toEqual([
      ['fw_version', 'reported_only'],
      ['interval', 'pending'],
      ['limits', 'applied'],
      ['mode', 'pending'],
    ]);
    expect(rows[1]).toEqual({
      key: 'interval',
      desired: { value: 60, at: '2026-11-01T10:00:00.000Z' },
      reported: { value: 30, at: '2026-10-30T08:00:00.000Z' },
      standing: 'pending',
    });
    expect(rows[3].reported).toBeUndefined();
    expect(rows[0].desired).toBeUndefined();
  });

  it('shows nothing for a device never given a state', () => {
    expect(stateRows(state())).toEqual([]);
  });

  it('compares JSON values deeply, whatever the order of keys', () => {
    expect(jsonEqual({ a: [1, { b: 2, c: 3 }] }, { a: [1, { c: 3, b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(jsonEqual([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(jsonEqual('60', 60)).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });
});

describe('a desired value typed as JSON', () => {
  it('reads any JSON value', () => {
    expect(parseJsonValue(' 60 ')).toEqual({ ok: true, value: 60 });
    expect(parseJsonValue('"eco"')).toEqual({ ok: true, value: 'eco' });
    expect(parseJsonValue('false')).toEqual({ ok: true, value: false });
    expect(parseJsonValue('{"low": 5}')).toEqual({ ok: true, value: { low: 5 } });
    expect(parseJsonValue('[1, "a"]')).toEqual({ ok: true, value: [1, 'a'] });
  });

  it('says what is wrong: a bare word needs quotes, null is Remove, empty, broken, too deep', () => {
    expect(parseJsonValue('eco')).toEqual({ ok: false, error: 'Not JSON: text goes in quotes, "eco".' });
    expect(parseJsonValue('null')).toEqual({ ok: false, error: 'null removes a key: use Remove instead.' });
    expect(parseJsonValue('  ')).toMatchObject({ ok: false, error: expect.stringMatching(/^Give a value/) });
    expect(parseJsonValue('{"a": }')).toMatchObject({ ok: false, error: expect.stringMatching(/^Not valid JSON/) });
    // the document is level 1: a value may nest 7 deep, not 8
    const nest = (n: number): unknown => (n === 0 ? 1 : { a: nest(n - 1) });
    expect(parseJsonValue(JSON.stringify(nest(7))).ok).toBe(true);
    expect(parseJsonValue(JSON.stringify(nest(8)))).toMatchObject({ ok: false, error: expect.stringMatching(/too deep/) });
  });
});

describe('the desired editor', () => {
  const original = { interval: 30, mode: 'eco', limits: { low: 5 } };

  it('sends one PATCH of the differences: changed and new values, null for removed or renamed keys', () => {
    const rows = desiredRows(original);
    expect(rows.map((r) => r.key)).toEqual(['interval', 'limits', 'mode']);
    expect(desiredPatch(original, rows)).toEqual({});
    expect(rowsChanged(original, rows)).toBe(false);
    const edited = [
      { key: 'interval', text: '60', was: 'interval' },
      { key: 'limits', text: '{ "low" : 5 }', was: 'limits' }, // the same value, typed otherwise: unchanged
      { key: 'power', text: '"eco"', was: 'mode' }, // renamed
      { key: 'flag', text: 'true', was: '' },
    ];
    expect(desiredPatch(original, edited)).toEqual({ interval: 60, mode: null, power: 'eco', flag: true });
    expect(rowsChanged(original, edited)).toBe(true);
  });

  it('says what is wrong with each row and with the whole, as the API would', () => {
    const checked = checkDesiredRows([
      { key: '@x', text: '1', was: '' },
      { key: '_private', text: '1', was: '' },
      { key: 'ok', text: '1', was: '' },
      { key: 'ok', text: '2', was: '' },
      { key: 'mode', text: 'eco', was: '' },
      { key: 'big', text: JSON.stringify('x'.repeat(17 * 1024)), was: '' },
    ]);
    expect(checked.rows[0]).toMatch(/not starting with _ \(nor @ or #\)/);
    expect(checked.rows[1]).toMatch(/not starting with _/);
    expect(checked.rows[2]).toBeUndefined();
    expect(checked.rows[3]).toBe('The key ok is there twice.');
    expect(checked.rows[4]).toMatch(/quotes/);
    expect(checked.whole).toMatch(/at most 16384 are allowed/);
    expect(checkDesiredRows(desiredRows(original))).toEqual({ rows: {} });
  });

  it('puts a 400 naming body.desired.<key> next to that key’s row, anything else on the whole form', () => {
    const rows = desiredRows(original);
    const error = new ApiError(400, 'validation_error', 'Invalid request', [
      { field: 'body.desired.mode', message: 'Nested too deep.' },
      { field: 'body.version', message: 'Must be an integer.' },
      { field: 'body.desired.gone', message: 'Bad key.' },
    ]);
    expect(desiredErrorsOf(error, rows)).toEqual({ rows: { 2: 'Nested too deep.' }, whole: ['version: Must be an integer.', 'desired.gone: Bad key.'] });
    expect(desiredErrorsOf(new ApiError(409, 'conflict', 'Stale'), rows)).toEqual({ rows: {}, whole: [] });
    expect(desiredErrorsOf(new ApiError(400, 'bad', 'Too large'), rows)).toEqual({ rows: {}, whole: ['Too large'] });
  });

  it('merges as the API does: a value sets, null removes', () => {
    expect(mergeDesired(original, { interval: 60, mode: null, flag: true })).toEqual({ interval: 60, limits: { low: 5 }, flag: true });
  });
});

describe('a stale version (409): a conflict, never an overwrite', () => {
  const base = state({ desired: { interval: 30, mode: 'eco', color: 'red' }, version: 3 });
  const now = state({ desired: { interval: 45, mode: 'eco', level: 2 }, version: 5 });
  const mine = { interval: 60, mode: null };

  it('sets the person’s changes beside the state now, saying which keys someone else changed', () => {
    expect(conflictOf(base, mine, now)).toEqual({
      fromVersion: 3,
      toVersion: 5,
      keys: [
        { key: 'interval', base: 30, yours: 60, now: 45, theirs: true },
        { key: 'mode', base: 'eco', yours: null, now: 'eco', theirs: false },
      ],
      others: ['color', 'level'],
    });
  });

  it('puts the person’s changes back on the state now, to be saved again over the new version', () => {
    const rows = rebasedRows(now.desired, mine);
    expect(rows).toEqual([
      { key: 'interval', text: '60', was: 'interval' },
      { key: 'level', text: '2', was: 'level' },
    ]);
    // saved again, the PATCH sends exactly the person's changes, over what is there now
    expect(desiredPatch(now.desired, rows)).toEqual({ interval: 60, mode: null });
  });
});

describe('the fleet-wide desired keys', () => {
  it('takes values and nulls (a removal), at least one key, keys and sizes by the rules', () => {
    expect(checkFleetDesired({ interval: 60, obsolete: null })).toEqual([]);
    expect(checkFleetDesired({})).toEqual(['Give at least one key.']);
    expect(checkFleetDesired({ '@x': 1 })[0]).toMatch(/^@x: A key is 1 to 64/);
    expect(checkFleetDesired({ big: 'x'.repeat(16 * 1024) })[0]).toMatch(/at most 16384 are allowed/);
    expect(desiredKeysText({ mode: 'eco', interval: 60, old: null })).toBe('interval, mode, old (removed)');
  });
});

describe('a state rollout on the rollout page', () => {
  it('is titled by its desired keys, with its own states and pending as who has not applied it', () => {
    expect(rolloutTitle({ kind: 'state', desired: { mode: 'eco', interval: 60 } })).toBe('State interval, mode');
    expect(rolloutStatuses('state')).toEqual(['queued', 'pending', 'done', 'failed', 'timed_out', 'canceled']);
    expect(rolloutStatuses('job')).toContain('in_progress');
    expect(rolloutStateLabel('state', 'pending')).toBe('pending (not applied yet)');
    expect(rolloutStateLabel('job', 'pending')).toBe('pending');
    expect(rolloutStateLabel('state', 'timed_out')).toBe('timed out');
  });
});
