import { authorizeConsoleConnect, consolePolicy } from '../../../lambdas/domain/console-live/authorize';
import { alarmUpdateOf, consoleLive, consoleTopic, dataUpdatesOf, exportUpdateOf, rolloutUpdatesOf } from '../../../lambdas/domain/console-live/live';
import { policyAllows } from '../../../local/mqtt-broker';

const arn = 'arn:aws:iot:eu-west-1:123456789012';
const ws = 'wks-aaaaaaaaaaaaaaaaaaaa';
const otherWs = 'wks-bbbbbbbbbbbbbbbbbbbb';
const client = 'console-abcdef123456';
const policy = [consolePolicy(client, ws, arn)];

describe('the console policy as the local broker enforces it', () => {
  it.each([
    ['iot:Connect', `client/${client}`, true],
    ['iot:Connect', 'client/console-someoneelse', false],
    ['iot:Connect', 'client/dev-aaaaaaaaaaaaaaaaaaaa', false],
    ['iot:Subscribe', `topicfilter/fleetstream/console/${ws}/connection`, true],
    ['iot:Subscribe', `topicfilter/fleetstream/console/${ws}/+`, true],
    ['iot:Subscribe', `topicfilter/fleetstream/console/${otherWs}/connection`, false],
    ['iot:Subscribe', 'topicfilter/fleetstream/console/+/connection', false],
    ['iot:Subscribe', 'topicfilter/fleetstream/console/#', false],
    ['iot:Subscribe', 'topicfilter/#', false],
    ['iot:Subscribe', 'topicfilter/j/dn/dev-aaaaaaaaaaaaaaaaaaaa', false],
    ['iot:Receive', `topic/fleetstream/console/${ws}/data`, true],
    ['iot:Receive', `topic/fleetstream/console/${otherWs}/data`, false],
    ['iot:Publish', `topic/fleetstream/console/${ws}/data`, false],
    ['iot:Publish', 'topic/j/data/dev-aaaaaaaaaaaaaaaaaaaa/temp', false],
  ])('%s on %s: %s', (action, resource, allowed) => {
    expect(policyAllows(policy, action, `${arn}:${resource}`)).toBe(allowed);
  });
});

describe('the console authorizer, before it reads anything', () => {
  // Refused on the connection's shape alone: no token is verified, nothing is read.
  const deps = { db: undefined as never, pool: { issuer: 'http://127.0.0.1:1/pool', clientId: 'x' } };
  it.each([
    ['a device client ID', { clientId: 'dev-aaaaaaaaaaaaaaaaaaaa', username: ws, password: 'token' }],
    ['a client ID with a wildcard', { clientId: 'console-abc*defgh', username: ws, password: 'token' }],
    ['a workspace with a wildcard', { clientId: client, username: 'wks-*', password: 'token' }],
    ['a topic as username', { clientId: client, username: 'fleetstream/console/#', password: 'token' }],
    ['no token', { clientId: client, username: ws }],
  ])('refuses %s', async (_, connect) => {
    const answer = await authorizeConsoleConnect(deps, connect, arn);
    expect(answer).toMatchObject({ isAuthenticated: false, policyDocuments: [] });
  });
});

describe('the console live messages', () => {
  it('names one topic per workspace and kind', () => {
    expect(consoleTopic(ws, 'connection')).toBe(`fleetstream/console/${ws}/connection`);
  });

  it('makes one data message per device of a batch, however many points', () => {
    const message = (device_id: string, timestamp_in: string, tags: string[]) => ({
      workspace_id: ws,
      fleet_id: 'flt-1',
      device_id,
      timestamp_in,
      points: tags.map((tag) => ({ tag })),
    });
    const burst = Array.from({ length: 500 }, (_, i) => message('dev-1', `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}.000Z`, ['t', i % 2 ? 'u' : 't']));
    const updates = dataUpdatesOf([...burst, message('dev-2', '2026-01-01T00:00:01.000Z', ['v'])]);
    expect(updates).toEqual([
      { workspaceId: ws, kind: 'data', message: { device_id: 'dev-1', fleet_id: 'flt-1', tags: ['t', 'u'], last_at: '2026-01-01T00:00:59.000Z', count: 1000 } },
      { workspaceId: ws, kind: 'data', message: { device_id: 'dev-2', fleet_id: 'flt-1', tags: ['v'], last_at: '2026-01-01T00:00:01.000Z', count: 1 } },
    ]);
  });

  it('makes one rollout message per rollout of a batch of 1,000 transitions', () => {
    const deltas = Array.from({ length: 1000 }, (_, i) => ({ workspace_id: ws, rollout_id: i % 2 ? 'rol-a' : 'rol-b' }));
    expect(rolloutUpdatesOf(deltas, 'now').map((u) => u.message)).toEqual([
      { rollout_id: 'rol-b', at: 'now' },
      { rollout_id: 'rol-a', at: 'now' },
    ]);
  });

  it('never rejects: a failed publish is logged, the others go out', async () => {
    const sent: string[] = [];
    const live = consoleLive(async (topic) => {
      if (topic.endsWith('/data')) throw new Error('data plane down');
      sent.push(topic);
    }, true);
    await expect(
      live([
        { workspaceId: ws, kind: 'data', message: { device_id: 'd', fleet_id: 'f', tags: [], last_at: 'x', count: 1 } },
        { workspaceId: ws, kind: 'connection', message: { device_id: 'd', fleet_id: 'f', connected: true, at: 'x' } },
      ]),
    ).resolves.toBeUndefined();
    expect(sent).toEqual([`fleetstream/console/${ws}/connection`]);
  });

  it('makes an export message of a progress write or an end, published on the workspace’s export topic', async () => {
    const sent: Array<[string, unknown]> = [];
    const message = exportUpdateOf({ workspace_id: ws, export_id: 'exp-1' }, 'running', 4_200, '2026-03-01T00:00:00.000Z');

    await consoleLive(async (topic, body) => void sent.push([topic, body]), true)([message]);

    expect(sent).toEqual([
      [`fleetstream/console/${ws}/export`, { export_id: 'exp-1', status: 'running', points_written: 4_200, at: '2026-03-01T00:00:00.000Z' }],
    ]);
  });

  it('makes an alarm message of a transition, published on the workspace’s alarm topic', async () => {
    const sent: Array<[string, unknown]> = [];
    const alarm = { id: 'alm-1', rule_id: 'alr-1', device_id: 'dev-1', fleet_id: 'flt-1', status: 'acknowledged', severity: 'major', rule_name: 'r' };

    await consoleLive(
      async (topic, body) => void sent.push([topic, body]),
      true,
    )([alarmUpdateOf({ event: 'acknowledged', at: '2026-03-01T00:00:00.000Z', workspace_id: ws, alarm })]);

    expect(sent).toEqual([
      [
        `fleetstream/console/${ws}/alarm`,
        {
          alarm_id: 'alm-1',
          rule_id: 'alr-1',
          device_id: 'dev-1',
          fleet_id: 'flt-1',
          event: 'acknowledged',
          status: 'acknowledged',
          severity: 'major',
          at: '2026-03-01T00:00:00.000Z',
        },
      ],
    ]);
  });

  it('publishes nothing when off', async () => {
    const sent: string[] = [];
    await consoleLive(async (topic) => void sent.push(topic), false)([{ workspaceId: ws, kind: 'rollout', message: { rollout_id: 'r', at: 'x' } }]);
    expect(sent).toEqual([]);
  });
});
