import { devicePolicy } from '../../../lambdas/domain/doors/device-mqtt';
import { credentialsEndpoint } from '../../../lambdas/domain/registry/identities';
import { MQTT_RULES } from '../../../lambdas/mqtt-rules';
import { policyAllows, topicMatches } from '../../../local/mqtt-broker';

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

  it('carries any payload, JSON or not, as base64 with the topic and arrival', () => {
    const rule = MQTT_RULES.find((r) => r.name === 'device_data')!;
    expect(rule.message(`j/data/${me}/t`, Buffer.from('not json {'), 1_700_000_000_000)).toEqual({
      payload: Buffer.from('not json {').toString('base64'),
      topic: `j/data/${me}/t`,
      received_at: 1_700_000_000_000,
    });
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
