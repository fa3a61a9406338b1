import { ruleProblems } from '../../../../lambdas/domain/alarms/rules';

/** A rule's kind-dependent fields, as they would be stored: nothing set but what a case gives. */
const rule = (fields: Partial<Parameters<typeof ruleProblems>[0]>) => ({
  kind: 'threshold' as const,
  tag: null,
  field: null,
  op: null,
  value: null,
  clear_value: null,
  for_seconds: 0,
  ...fields,
});
const fieldsOf = (fields: Partial<Parameters<typeof ruleProblems>[0]>) => ruleProblems(rule(fields)).map((p) => p.field);

describe('an alarm rule’s checks by kind (spec/fleet-state.md §4)', () => {
  it.each([
    ['an offline rule of 30 s', { kind: 'offline', for_seconds: 30 }, ['body.for_seconds']],
    ['a silent rule of 59 s', { kind: 'silent', for_seconds: 59 }, ['body.for_seconds']],
    ['an offline rule of 60 s', { kind: 'offline', for_seconds: 60 }, []],
    ['a condition rule of 0 s', { kind: 'condition', for_seconds: 0 }, []],
    ['an offline rule with a tag', { kind: 'offline', for_seconds: 60, tag: 'env' }, ['body.tag']],
    ['a silent rule with a tag', { kind: 'silent', for_seconds: 60, tag: 'env' }, []],
    [
      'a condition rule with threshold fields',
      { kind: 'condition', field: 'temp', op: '>', value: 1, clear_value: 1 },
      ['body.field', 'body.op', 'body.value', 'body.clear_value'],
    ],
    ['a threshold rule without field, op and value', { kind: 'threshold' }, ['body.field', 'body.op', 'body.value']],
    ['a threshold rule, clear_value on the clearing side of >', { field: 'temp', op: '>', value: 8, clear_value: 7 }, []],
    ['a threshold rule, clear_value above value for >=', { field: 'temp', op: '>=', value: 8, clear_value: 9 }, ['body.clear_value']],
    ['a threshold rule, clear_value below value for <', { field: 'temp', op: '<', value: 2, clear_value: 1 }, ['body.clear_value']],
    ['a threshold rule, clear_value equal to value for <=', { field: 'temp', op: '<=', value: 2, clear_value: 2 }, []],
  ] as const)('%s: %j → %j', (_name, fields, problems) => {
    expect(fieldsOf(fields as never)).toEqual(problems);
  });
});
