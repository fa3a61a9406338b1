import { consoleAuthorizerOf, iotAuthorizerOf } from '../../../../local/cloud-assembly/iot-core';
import type { IotDoor } from '../../../../local/cloud-assembly/iot-door';
import { localizer } from '../../../../local/cloud-assembly/localize';
import type { CfnTemplate } from '../../../../local/cloud-assembly/template';

// The two doors of a template as lib/ makes them: the devices' (SECURE_MQTT) and the consoles'
// (MQTT_WSS), each a CUSTOM_AUTH domain configuration naming its own authorizer.
const fn = (name: string) => ({ Type: 'AWS::Lambda::Function', Properties: { FunctionName: name } });
const authorizer = (fnId: string, props: Record<string, unknown> = {}) => ({
  Type: 'AWS::IoT::Authorizer',
  Properties: { AuthorizerFunctionArn: { 'Fn::GetAtt': [fnId, 'Arn'] }, SigningDisabled: true, Status: 'ACTIVE', ...props },
});
const domain = (protocol: string, authorizerId: string) => ({
  Type: 'AWS::IoT::DomainConfiguration',
  Properties: { ApplicationProtocol: protocol, AuthenticationType: 'CUSTOM_AUTH', AuthorizerConfig: { DefaultAuthorizerName: { Ref: authorizerId } } },
});
const template = (consoleAuthorizer: Record<string, unknown> = {}): CfnTemplate =>
  ({
    Resources: {
      DeviceFn: fn('mqtt-authorizer'),
      ConsoleFn: fn('console-authorizer'),
      DeviceAuthorizer: authorizer('DeviceFn'),
      ConsoleAuthorizer: authorizer('ConsoleFn', consoleAuthorizer),
      DeviceDomain: domain('SECURE_MQTT', 'DeviceAuthorizer'),
      ConsoleDomain: domain('MQTT_WSS', 'ConsoleAuthorizer'),
    },
  }) as unknown as CfnTemplate;

describe('the doors of a template', () => {
  it('gives the devices the SECURE_MQTT domain’s authorizer and the consoles the MQTT_WSS domain’s', () => {
    expect(iotAuthorizerOf(template())).toEqual({ id: 'DeviceAuthorizer', functionId: 'DeviceFn' });
    expect(consoleAuthorizerOf(template())).toEqual({ id: 'ConsoleAuthorizer', functionId: 'ConsoleFn' });
  });

  it('has no console door without an MQTT_WSS domain, and says so of an inactive or signing authorizer', () => {
    const { ConsoleDomain: _, ...withoutConsole } = template().Resources;

    expect(consoleAuthorizerOf({ Resources: withoutConsole } as CfnTemplate)).toBeUndefined();
    expect(consoleAuthorizerOf(template({ Status: 'INACTIVE' }))).toMatchObject({ unusable: 'authorizer ConsoleAuthorizer is INACTIVE' });
    expect(() => consoleAuthorizerOf(template({ SigningDisabled: false }))).toThrow(/token signing/);
  });

  it('points config.json’s liveUrl (the console domain’s wss://…/mqtt) at the broker’s WebSocket listener', () => {
    const door = {
      tls: { caCert: '', key: '', cert: '' },
      urls: { url: 'mqtt://127.0.0.1:1', tlsUrl: 'mqtts://127.0.0.1:2', wsUrl: 'ws://127.0.0.1:3/mqtt' },
      mqttHost: 'local-devices-ats.iot.eu-west-1.amazonaws.com',
      dataHost: 'local-ats.iot.eu-west-1.amazonaws.com',
      consoleHost: 'local-console-ats.iot.eu-west-1.amazonaws.com',
    } as IotDoor;
    const localize = localizer({ cloudApiUrl: 'https://api.example/v3', localApiUrl: 'http://127.0.0.1:4' }, door);

    expect(JSON.parse(localize(JSON.stringify({ liveUrl: 'wss://local-console-ats.iot.eu-west-1.amazonaws.com/mqtt' })))).toEqual({
      liveUrl: 'ws://127.0.0.1:3/mqtt',
    });
  });
});
