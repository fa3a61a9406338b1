import { alarmEmail, alarmEvent } from '../../../lambdas/domain/alarms/notifications';
import { AlarmTransitionSchema, type AlarmTransition } from '../../../lambdas/schemas/alarm-transitions';

const transition = (changes: Partial<AlarmTransition> = {}, alarm: Partial<AlarmTransition['alarm']> = {}): AlarmTransition => ({
  id: 'alm-1:opened',
  event: 'opened',
  at: '2026-11-29T13:00:00.123Z',
  workspace_id: 'wks-1',
  alarm: {
    id: 'alm-1',
    rule_id: 'alr-1',
    rule_name: 'cold room too warm',
    kind: 'threshold',
    severity: 'critical',
    device_id: 'dev-1',
    fleet_id: 'flt-1',
    status: 'open',
    opened_at: '2026-11-29T13:00:00.123Z',
    acknowledged_at: null,
    acknowledged_by: null,
    closed_at: null,
    details: { value: 9.5 },
    ...alarm,
  },
  notify: { emails: ['ops@example.com'], integrations: true },
  ...changes,
});

describe('an alarm transition', () => {
  it('is the contract’s shape: a transition missing its notify settings is refused', () => {
    expect(AlarmTransitionSchema.parse(transition())).toEqual(transition());
    const { notify: _notify, ...without } = transition();
    expect(AlarmTransitionSchema.safeParse(without).success).toBe(false);
  });

  it('becomes the alarm webhook event: c2d, payload the alarm, ts the transition’s time (the same at each redelivery)', () => {
    expect(alarmEvent(transition())).toEqual({
      kind: 'event',
      ts: '2026-11-29T13:00:00.123000Z',
      workspace_id: 'wks-1',
      fleet_id: 'flt-1',
      device_id: 'dev-1',
      type: 'alarm',
      direction: 'c2d',
      payload: transition().alarm,
    });
  });

  it('becomes a plain-text e-mail whose subject is one line whatever the rule is named', () => {
    const email = alarmEmail(
      transition({ event: 'closed' }, { rule_name: 'cold\r\nBcc: x@evil.example', status: 'closed', closed_at: '2026-11-29T14:00:00Z' }),
      'alarms@x.example',
      'ops@example.com',
    );
    expect(email).toMatchObject({ from: 'alarms@x.example', to: 'ops@example.com', subject: '[critical] cold Bcc: x@evil.example: alarm closed on dev-1' });
    expect(email.text).toContain('closed at:  2026-11-29T14:00:00Z');
    expect(email.text).toContain('details:    {"value":9.5}');
  });
});
