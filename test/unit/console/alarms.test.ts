import {
  alarmDetailsText,
  countText,
  emptyRuleForm,
  previewOf,
  ruleBody,
  ruleFieldErrors,
  ruleQueryProblem,
  sortAlarms,
  withAlarm,
} from '../../../console/src/lib/alarms';
import type { Alarm } from '../../../console/src/lib/api';
import { ApiError } from '../../../console/src/lib/errors';

const alarm = (id: string, status: Alarm['status'], severity: Alarm['severity'], opened_at: string): Alarm => ({
  id,
  rule_id: 'alr-1',
  rule_name: 'r',
  kind: 'offline',
  severity,
  device_id: 'dev-1',
  fleet_id: 'flt-1',
  status,
  opened_at,
  acknowledged_at: null,
  acknowledged_by: null,
  closed_at: null,
  details: {},
});

describe('the Alarms page’s order', () => {
  it('puts open alarms first, then acknowledged, then closed; the gravest first, then the newest', () => {
    const list = [
      alarm('a', 'closed', 'critical', '2026-01-03T00:00:00Z'),
      alarm('b', 'open', 'warning', '2026-01-04T00:00:00Z'),
      alarm('c', 'acknowledged', 'critical', '2026-01-05T00:00:00Z'),
      alarm('d', 'open', 'critical', '2026-01-01T00:00:00Z'),
      alarm('e', 'open', 'critical', '2026-01-02T00:00:00Z'),
      alarm('f', 'open', 'major', '2026-01-01T00:00:00Z'),
    ];
    expect(sortAlarms(list).map((a) => a.id)).toEqual(['e', 'd', 'f', 'b', 'c', 'a']);
  });

  it('replaces an acknowledged alarm where it is', () => {
    const list = [alarm('a', 'open', 'critical', 'x'), alarm('b', 'open', 'minor', 'x')];
    expect(withAlarm(list, { ...list[0], status: 'acknowledged' }).map((a) => [a.id, a.status])).toEqual([
      ['a', 'acknowledged'],
      ['b', 'open'],
    ]);
  });
});

describe('an alarm’s details in words', () => {
  it('says what opened and what closed it, times through the console’s format', () => {
    expect(alarmDetailsText({ kind: 'offline', details: { disconnected_at: 'T1', connected_at: 'T2' } }, (iso) => `<${iso}>`)).toBe(
      'disconnected at <T1>; connected again at <T2>',
    );
    expect(alarmDetailsText({ kind: 'threshold', details: { value: 9.4, field: 'env.temp' } })).toBe('value 9.4 of env.temp');
    expect(alarmDetailsText({ kind: 'condition', details: { condition_uuid: 'u-1', closed_by: 'rule_deleted' } })).toBe(
      'condition u-1; closed: its rule was deleted',
    );
    expect(alarmDetailsText({ kind: 'silent', details: {} })).toBe('—');
  });
});

describe('the rule editor’s body', () => {
  it('sends only the fields the kind takes', () => {
    const form = { ...emptyRuleForm(), name: ' cold ', kind: 'offline' as const, tag: 'env', field: 'temp', value: '8', forSeconds: '120' };
    expect(ruleBody(form)).toEqual({
      name: 'cold',
      kind: 'offline',
      severity: 'major',
      for_seconds: 120,
      notify: { emails: [], integrations: true },
      enabled: true,
    });
    const threshold = {
      ...form,
      kind: 'threshold' as const,
      op: '>' as const,
      clearValue: '7',
      emails: 'a@example.com, b@example.com',
      fleets: ['flt-1'],
      q: ' tags.site = "x" ',
    };
    expect(ruleBody(threshold)).toMatchObject({
      tag: 'env',
      field: 'temp',
      op: '>',
      value: 8,
      clear_value: 7,
      target: { fleets: ['flt-1'], q: 'tags.site = "x"' },
      notify: { emails: ['a@example.com', 'b@example.com'] },
    });
  });

  it('clears, in a change, the fields the kind does not take and an emptied target; never sends the kind', () => {
    const body = ruleBody({ ...emptyRuleForm(), name: 'x', kind: 'condition', tag: 'door' }, true);
    expect(body).toMatchObject({ tag: 'door', field: null, op: null, value: null, clear_value: null, target: null });
    expect(body).not.toHaveProperty('kind');
  });

  it('keeps a number that is not one as typed, for the API to say what is wrong', () => {
    expect(ruleBody({ ...emptyRuleForm(), forSeconds: 'soon' }).for_seconds).toBe('soon');
  });
});

describe('a rule’s 400 at its fields', () => {
  const error = new ApiError(400, 'validation_error', 'Invalid request.', [
    { field: 'body.for_seconds', message: 'Must be at least 60 for an offline rule.' },
    { field: 'body.notify.emails.1', message: 'Must be an e-mail address.' },
    { field: 'body.target.q', message: 'Expected a value at position 12.' },
  ]);

  it('names each field as the editor does', () => {
    expect(ruleFieldErrors(error)).toEqual({
      for_seconds: 'Must be at least 60 for an offline rule.',
      'notify.emails': 'Must be an e-mail address.',
      'target.q': 'Expected a value at position 12.',
    });
    expect(ruleFieldErrors(new ApiError(500, 'internal', 'x'))).toEqual({});
  });

  it('marks the query’s character', () => {
    expect(ruleQueryProblem(error)).toEqual({ message: 'Expected a value at position 12.', index: 11 });
  });
});

describe('the preview of a rule’s devices', () => {
  const devices = [
    { id: 'd3', name: 'pump-10' },
    { id: 'd1', name: 'pump-2' },
    { id: 'd2', name: 'valve' },
  ];
  it('counts the devices searched, the first names by name', () => {
    expect(previewOf(devices)).toEqual({ count: 3, names: ['pump-2', 'pump-10', 'valve'] });
  });
  it('keeps only the group’s devices when it names a group', () => {
    expect(previewOf(devices, [{ id: 'd2' }, { id: 'd9' }])).toEqual({ count: 1, names: ['valve'] });
  });
  it('lists at most five names', () => {
    expect(previewOf(Array.from({ length: 8 }, (_, i) => ({ id: `d${i}`, name: `n${i}` }))).names).toHaveLength(5);
  });
});

describe('the navigation’s count', () => {
  it('says when there are more than one page read', () => {
    expect([countText(3, false), countText(200, true)]).toEqual(['3', '200+']);
  });
});
