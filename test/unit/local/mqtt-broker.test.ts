import { devicePolicy } from '../../../lambdas/domain/doors/device-mqtt';
import { credentialsEndpoint } from '../../../lambdas/domain/registry/identities';
import { MQTT_RULES } from '../../../lambdas/mqtt-rules';
import { mqttRules, policyAllows, topicMatches } from '../../../local/mqtt-broker';

const arn = 'arn:aws:iot:eu-west-1:123456789012';
const me = 'dev-aaaaaaaaaaaaaaaaaaaa';
const other = 'dev-bbbbbbbbbbbbbbbbbbbb';
const policy = [devicePolicy(me, arn)];

describe('the device policy as the local broker enforces it', () => {
  it.each([
    ['iot:Connect', `client/${me}`, true],
    ['iot:Connect', `client/${other}`, false],
    ['iot:Publish', `topic/j/data/${me}/temp`, true],
    ['iot:Publish', `topic/j/up/${me}`, true],
    ['iot:Publish', `topic/j/data/${other}/temp`, false],
    ['iot:Publish', `topic/j/up/${other}`, false],
    ['iot:Publish', `topic/j/dn/${me}`, false],
    ['iot:Publish', `topic/j/up/${me}/extra`, false],
    ['iot:Subscribe', `topicfilter/j/dn/${me}`, true],
    ['iot:Subscribe', `topicfilter/j/dn/${other}`, false],
    ['iot:Subscribe', 'topicfilter/j/dn/#', false],
    ['iot:Subscribe', 'topicfilter/#', false],
    ['iot:Receive', `topic/j/dn/${me}`, true],
    ['iot:Receive', `topic/j/dn/${other}`, false],
  ])('%s on %s: %s', (action, resource, allowed) => {
    expect(policyAllows(policy, action, `${arn}:${resource}`)).toBe(allowed);
  });

  it('lets a Deny win over an Allow', () => {
    const denied = [
      ...policy,
      { Version: '2012-10-17' as const, Statement: [{ Effect: 'Deny' as const, Action: 'iot:Publish', Resource: `${arn}:topic/j/up/*` }] },
    ];
    expect(policyAllows(denied, 'iot:Publish', `${arn}:topic/j/up/${me}`)).toBe(false);
  });
});

describe('topic filters of the rules', () => {
  it.each([
    ['j/data/+/+', `j/data/${me}/temp`, true],
    ['j/data/+/+', `j/data/${me}/a/b`, false],
    ['j/data/+/+', `j/data/${me}`, false],
    ['j/up/+', `j/up/${me}`, true],
    ['j/up/+', `j/dn/${me}`, false],
    ['$aws/events/presence/+/+', `$aws/events/presence/connected/${me}`, true],
  ])('%s matches %s: %s', (filter, topic, matches) => {
    expect(topicMatches(filter, topic)).toBe(matches);
  });

  it('never routes the cloud’s own j/dn publishes to a rule', () => {
    expect(MQTT_RULES.some((r) => topicMatches(r.topicFilter, `j/dn/${me}`))).toBe(false);
  });

  /** What the rows of lambdas/mqtt-rules.ts send for one publish, as the broker runs them. */
  const sentFor = async (topic: string, payload: string, clientId: string) => {
    const sent: Array<[string, Record<string, unknown>]> = [];
    const rules = mqttRules(async (queue, message) => void sent.push([queue, message]));
    const input = { topic, payload: Buffer.from(payload), receivedAt: 1_700_000_000_000, clientId };
    await Promise.all(rules.filter((r) => topicMatches(r.topicFilter, topic)).map((r) => r.run(input)));
    return sent;
  };

  it('carries any payload, JSON or not, as base64 with the topic, arrival and client', async () => {
    expect(await sentFor(`j/data/${me}/t`, 'not json {', me)).toEqual([
      ['ingest', { payload: Buffer.from('not json {').toString('base64'), topic: `j/data/${me}/t`, received_at: 1_700_000_000_000, client_id: me }],
    ]);
  });

  it('acts on a device’s publish only when the publishing client is the device the topic names', async () => {
    const own = [...(await sentFor(`j/data/${me}/t`, '{}', me)), ...(await sentFor(`j/up/${me}`, '{}', me))];
    const foreign = [...(await sentFor(`j/data/${other}/t`, '{}', me)), ...(await sentFor(`j/up/${other}`, '{}', me))];

    expect(own.map(([queue]) => queue)).toEqual(['ingest', 'mqtt']);
    expect(foreign).toEqual([]);
  });

  it('passes the presence events IoT Core publishes, which no device client sends', async () => {
    const event = { clientId: me, eventType: 'connected', timestamp: 1 };
    expect(await sentFor(`$aws/events/presence/connected/${me}`, JSON.stringify(event), '')).toEqual([
      ['mqtt', { ...event, topic: `$aws/events/presence/connected/${me}` }],
    ]);
  });

  it('leaves out the presence events of clients that are not devices (a console over WebSocket): nothing reaches the queue', async () => {
    const consoleId = 'console-0123456789abcdef';
    const sent = [
      ...(await sentFor(`$aws/events/presence/connected/${consoleId}`, JSON.stringify({ clientId: consoleId, eventType: 'connected', timestamp: 1 }), '')),
      ...(await sentFor(
        `$aws/events/presence/disconnected/${consoleId}`,
        JSON.stringify({ clientId: consoleId, eventType: 'disconnected', timestamp: 2 }),
        '',
      )),
    ];

    expect(sent).toEqual([]);
  });
});

describe('credentialsEndpoint', () => {
  const https = 'https://api.example.com/v3/device';
  it('names the TLS broker and carries its CA, keeping the HTTPS address in url', () => {
    expect(credentialsEndpoint(https, 'mqtts://mqtt.example.com:8883', 'PEM')).toEqual({
      endpoint: { host: 'mqtt.example.com', port: 8883, mode: 'secure', url: https },
      cacert: 'PEM',
    });
  });
  it('names a plain broker without a CA', () => {
    expect(credentialsEndpoint(https, 'mqtt://127.0.0.1:1883', 'PEM')).toEqual({ endpoint: { host: '127.0.0.1', port: 1883, mode: 'insecure', url: https } });
  });
  it('refuses a TLS broker without a CA: clients refuse to start without cacert', () => {
    expect(() => credentialsEndpoint(https, 'mqtts://mqtt.example.com:8883', '')).toThrow(/DEVICE_MQTT_CACERT/);
  });
  it('names the HTTPS device API when no broker is configured', () => {
    expect(credentialsEndpoint(https, '', '')).toEqual({ endpoint: { host: 'api.example.com', port: 443, mode: 'secure', url: https } });
  });
});
