import { admitUpMessages, readUpMessage, type UpMessage } from '../../../lambdas/domain/doors/mqtt-messages';
import type { DeviceQuota } from '../../../lambdas/domain/limits/device-quota';
import { quotaExceeded, secondsToMidnightUtc } from '../../../lambdas/domain/limits/limits';
import type { UsageTally } from '../../../lambdas/domain/limits/usage';

const at = (iso: string) => Date.parse(iso);
const rule = (topic: string, message: unknown, received_at = at('2026-05-01T10:00:00Z')) => ({
  topic,
  payload: Buffer.from(typeof message === 'string' ? message : JSON.stringify(message)).toString('base64'),
  received_at,
});

describe('a quota’s refusal', () => {
  it.each([
    ['at midnight', '2026-05-01T00:00:00.000Z', 86_400],
    ['a millisecond after', '2026-05-01T00:00:00.001Z', 86_400],
    ['a second before the next', '2026-05-01T23:59:59.000Z', 1],
    ['a millisecond before the next', '2026-05-01T23:59:59.999Z', 1],
    ['at noon and a half second', '2026-05-01T12:00:00.500Z', 43_200],
  ])('answers Retry-After in whole seconds to midnight UTC %s', (_when, iso, seconds) => {
    expect(secondsToMidnightUtc(at(iso))).toBe(seconds);
  });

  it('names a daily limit and its value, and says when it starts afresh', () => {
    const error = quotaExceeded('events_per_device_per_day', 20, at('2026-05-01T23:00:00Z'));

    expect([error.status, error.code, error.headers]).toEqual([429, 'quota_exceeded', { 'retry-after': '3600' }]);
    expect(error.message).toBe(
      'The device has reported its limit of 20 events today (limits.events_per_device_per_day = 20); it starts afresh at midnight UTC.',
    );
    expect(error.details).toEqual([{ field: 'limits.events_per_device_per_day', message: error.message, value: 20 }]);
  });

  it('names a quota of what is held without a Retry-After: a place frees when something is deleted, not at a time', () => {
    const error = quotaExceeded('workspaces_per_account', 3);

    expect(error.message).toBe('The account is at its limit of 3 workspaces (limits.workspaces_per_account = 3).');
    expect(error.headers).toEqual({});
  });
});

describe('reading a j/up message', () => {
  it.each([
    ['a reported key', { key: '__info', value: { os: 'z' } }, { type: 'os_info', payload: { os: 'z' } }],
    ['a private strong key', { key: '__flood', value: 1 }, { type: 'private_strong', payload: { key: '__flood', value: 1 } }],
    ['a private weak key', { key: '_x', value: null }, { type: 'private_weak', payload: { key: '_x', value: null } }],
  ])('counts %s as an event, checked as the HTTPS door checks one', (_what, message, event) => {
    expect(readUpMessage(rule('j/up/dev-1', message))).toEqual({
      deviceId: 'dev-1',
      topic: 'j/up/dev-1',
      key: message.key,
      value: message.value,
      receivedAt: at('2026-05-01T10:00:00Z'),
      event,
    });
  });

  it.each(['#status', '#now', '#conditions', 'condition', '@fota', '@reboot', 'unknown', '_'])('counts %s as another message', (key) => {
    expect(readUpMessage(rule('j/up/dev-1', { key, value: {} }))).toMatchObject({ key, deviceId: 'dev-1' });
    expect(readUpMessage(rule('j/up/dev-1', { key, value: {} }))?.event).toBeUndefined();
  });

  it.each([
    ['not JSON', rule('j/up/dev-1', 'not json')],
    ['not a {key, value} object', rule('j/up/dev-1', [1, 2])],
    ['a topic below the device', rule('j/up/dev-1/more', { key: '#now', value: {} })],
    ['an event over 8 KB', rule('j/up/dev-1', { key: '__info', value: 'x'.repeat(9000) })],
  ])('drops %s, counted nowhere', (_what, message) => {
    expect(readUpMessage(message)).toBeUndefined();
  });
});

describe('admitting a batch of j/up messages', () => {
  /** A quota that lets each device have `allowed` in all, and records each claim. */
  const quotaOf = (allowed: Record<string, number>) => {
    const claims: Array<[string, number]> = [];
    const given = new Map<string, number>();
    const quota = (async (deviceId: string, n: number) => {
      claims.push([deviceId, n]);
      if (!(deviceId in allowed)) return undefined;
      const accepted = Math.max(0, Math.min(n, allowed[deviceId] - (given.get(deviceId) ?? 0)));
      given.set(deviceId, (given.get(deviceId) ?? 0) + accepted);
      return { accepted, refused: n - accepted, workspace_id: `wks-of-${deviceId}` };
    }) as DeviceQuota;
    return { quota, claims };
  };
  const up = (deviceId: string, key: string): { up: UpMessage } => ({ up: readUpMessage(rule(`j/up/${deviceId}`, { key, value: 1 }))! });

  it('claims once per device and quota, admits each device’s first messages in batch order, and counts the refused and the other messages', async () => {
    const events = quotaOf({ a: 2, b: 5 });
    const requests = quotaOf({ a: 1 });
    const tallies: UsageTally[] = [];
    const batch = [up('a', '_e'), up('a', '#now'), up('b', '_e'), up('a', '_e'), up('a', '#now'), up('a', '_e'), up('ghost', '_e')];

    const admitted = await admitUpMessages({ events: events.quota, upMessages: requests.quota, usage: async (t) => void tallies.push(t) }, batch);

    expect(admitted).toEqual([batch[0], batch[1], batch[2], batch[3]]);
    expect(events.claims.sort()).toEqual([
      ['a', 3],
      ['b', 1],
      ['ghost', 1],
    ]);
    expect(requests.claims).toEqual([['a', 2]]);
    expect(
      tallies
        .flatMap((t) => t.entries())
        .map((e) => [e.workspaceId, e.counts.events_in, e.counts.events_refused, e.counts.up_messages_in, e.counts.up_messages_refused]),
    ).toEqual([
      // The admitted events are counted by the ingest, which forwards them.
      ['wks-of-a', 1, 1, 2, 1],
    ]);
  });

  it('writes no usage for a batch of admitted events', async () => {
    const tallies: UsageTally[] = [];

    await admitUpMessages({ events: quotaOf({ a: 9 }).quota, upMessages: quotaOf({}).quota, usage: async (t) => void tallies.push(t) }, [up('a', '_e')]);

    expect(tallies).toEqual([]);
  });
});
