/** Issue 36: the device page's conditions (open first) and their durations in words. */
import type { Condition } from '../../../console/src/lib/api';
import { conditionDuration, conditionRows, durationText } from '../../../console/src/lib/conditions';

const condition = (uuid: string, start: string, closed?: { finish: string; duration: number }): Condition => ({
  uuid,
  device_id: 'dev-1',
  fleet_id: 'flt-1',
  tag: 'overheat',
  status: closed ? 'closed' : 'open',
  payload: null,
  finish_payload: null,
  start,
  finish: closed?.finish ?? null,
  duration_seconds: closed?.duration ?? null,
});

describe('a device’s conditions on its page', () => {
  it('lists the open ones first, each part newest first, and a condition closed between the two reads once, as closed', () => {
    const open = [condition('a', '2026-01-01T10:00:00.000Z'), condition('b', '2026-01-01T12:00:00.000Z'), condition('c', '2026-01-01T09:00:00.000Z')];
    const closed = [
      condition('old', '2026-01-01T08:00:00.000Z', { finish: '2026-01-01T08:01:00.000Z', duration: 60 }),
      condition('c', '2026-01-01T09:00:00.000Z', { finish: '2026-01-01T13:00:00.000Z', duration: 14_400 }),
    ];

    expect(conditionRows(open, closed).map((c) => `${c.uuid}:${c.status}`)).toEqual(['b:open', 'a:open', 'c:closed', 'old:closed']);
  });

  it.each([
    [0, '0 s'],
    [42.4, '42 s'],
    [60, '1 min'],
    [330.5, '5 min 31 s'],
    [3600, '1 h'],
    [12_000, '3 h 20 min'],
    [86_400 * 2 + 4 * 3600 + 59, '2 d 4 h'],
  ])('says %p seconds as %p', (seconds, text) => {
    expect(durationText(seconds)).toBe(text);
  });

  it('counts an open condition’s duration up to now, and a closed one’s as stored', () => {
    const now = Date.parse('2026-01-01T10:05:00.000Z');

    expect(conditionDuration(condition('a', '2026-01-01T10:00:00.000Z'), now)).toBe(300);
    expect(conditionDuration(condition('b', '2026-01-01T10:00:00.000Z', { finish: '2026-01-01T10:00:01.000Z', duration: 1 }), now)).toBe(1);
  });
});
