import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { IotAuthorizerResult } from '../../lambdas/domain/doors/device-mqtt';
import { brokerTls, startMqttBroker, type BrokerTls, type MqttBroker } from '../mqtt-broker';
import { startRecordingProxy } from './iam';
import {
  brokerRuleOf,
  consoleAuthorizerOf,
  iotAuthorizerOf,
  isConsoleDomain,
  startIotControlPlane,
  topicRulesOf,
  type IotAuthorizerSpec,
  type TopicRuleSpec,
} from './iot-core';
import type { MayInvoke, Permissions } from './policies';
import { ACCOUNT, API_ID, type RunContext } from './run-context';
import { resourcesOfType } from './template';

/** The MQTT door as it runs here: empty addresses and no TLS when the template has none. */
export interface IotDoor {
  tls: BrokerTls | undefined;
  /** The local IoT control plane and the broker's data plane, as the functions' upstreams of `iot` and `iotdata`. */
  upstreams: { iot: string; iotdata: string } | undefined;
  /** `wsUrl`: the consoles' door (`ws://127.0.0.1:<port>/mqtt`), empty when the template has no console domain. */
  urls: { url: string; tlsUrl: string; wsUrl: string };
  topicRules: TopicRuleSpec[];
  /** The devices' broker host and the data endpoint's host, of IoT Core's shape, as the template's values name them. */
  mqttHost: string;
  dataHost: string;
  /** The consoles' domain (MQTT over WebSocket), of IoT Core's shape: `wss://<it>/mqtt` is the local WebSocket listener. */
  consoleHost: string;
}

/**
 * The MQTT door, when the template has one: a local broker stands in for IoT Core, and a local
 * IoT control plane answers the custom resource that reads its addresses (a domain name and a
 * data endpoint of IoT's shape, which the functions' variables point back here).
 * @throws Error for a topic rule whose SQL or action cannot run here, before any function starts
 */
export const startIotDoor = async (run: RunContext, permissions: Permissions): Promise<IotDoor> => {
  const { template, region, resolve, dataDir, stops, physical } = run;
  const iotAuthorizer = iotAuthorizerOf(template);
  const hasIot = Boolean(iotAuthorizer) || resourcesOfType(template, 'AWS::IoT::TopicRule').length > 0;
  const mqttHost = `${API_ID}-devices-ats.iot.${region}.amazonaws.com`;
  const dataHost = `${API_ID}-ats.iot.${region}.amazonaws.com`;
  const consoleHost = `${API_ID}-console-ats.iot.${region}.amazonaws.com`;
  // Read before any function starts: SQL or an action that cannot run here stops the start at once.
  const topicRules: TopicRuleSpec[] = hasIot ? topicRulesOf(template, resolve) : [];
  if (!hasIot) return { tls: undefined, upstreams: undefined, urls: { url: '', tlsUrl: '', wsUrl: '' }, topicRules, mqttHost, dataHost, consoleHost };
  const consoleAuthorizer = consoleAuthorizerOf(template);
  const tls = await brokerTls(dataDir);
  const mqtt = await startTemplateBroker(run, { tls, topicRules, iotAuthorizer, consoleAuthorizer, permissions });
  stops.push(mqtt.stop);
  const domains = Object.fromEntries(
    resourcesOfType(template, 'AWS::IoT::DomainConfiguration').map(([id, d]) => [
      physical.get(id)!.ref,
      { arn: physical.get(id)!.attributes.Arn, domainName: isConsoleDomain(d) ? consoleHost : mqttHost, serviceType: d.Properties?.ServiceType },
    ]),
  );
  const controlPlane = await startIotControlPlane({ domains, dataEndpoint: dataHost });
  stops.push(controlPlane.stop);
  return {
    tls,
    upstreams: { iot: controlPlane.url, iotdata: mqtt.dataPlaneEndpoint },
    urls: { url: mqtt.url, tlsUrl: mqtt.tlsUrl, wsUrl: mqtt.wsUrl },
    topicRules,
    mqttHost,
    dataHost,
    consoleHost,
  };
};

/** The doors of the broker: the devices' authorizer, and the consoles' (a WebSocket listener) when the template has one. */
interface TemplateDoors {
  tls: BrokerTls;
  topicRules: TopicRuleSpec[];
  iotAuthorizer: IotAuthorizerSpec | undefined;
  consoleAuthorizer: IotAuthorizerSpec | undefined;
  permissions: Permissions;
}

/**
 * The broker standing in for IoT Core (ports from the options, or free ones): it authenticates
 * each CONNECT with the template's IoT authorizer, invoked only when the function's resource
 * policy lets iot.amazonaws.com invoke it, and runs the topic rules, each action sent with its
 * role through a proxy of that role. When the template has a console domain (MQTT_WSS,
 * CUSTOM_AUTH), the broker's WebSocket listener (npm start's, on MQTT_WS_PORT or a free port) is
 * its door: each of its CONNECTs goes to that domain's authorizer, under the same invoke check.
 * `lambdas` is filled once the functions run; until then (the broker starts first) no client can
 * connect.
 */
const startTemplateBroker = async (run: RunContext, door: TemplateDoors): Promise<MqttBroker> => {
  const { options, log, region, lambdas } = run;
  const { tls, topicRules, iotAuthorizer, consoleAuthorizer, permissions } = door;
  const ruleClients = await startRuleClients(run, topicRules, permissions.statementsOfRole);
  const rules = topicRules.map((spec) =>
    brokerRuleOf(
      spec,
      async (action, body) => {
        await ruleClients.get(action.roleId)!.send(new SendMessageCommand({ QueueUrl: action.queueUrl, MessageBody: body }));
      },
      log,
    ),
  );
  const refusal = refuseDoor(run, iotAuthorizer, permissions.mayInvoke);
  const consoleRefusal = consoleAuthorizer && refuseDoor(run, consoleAuthorizer, permissions.mayInvoke, 'MQTT over WebSocket CONNECT');
  log(`starting the MQTT broker, ${topicRules.length} topic rules${consoleAuthorizer ? ', the consoles’ WebSocket door' : ''}…`);
  return startMqttBroker({
    port: options.mqttPort ?? 0,
    tlsPort: options.mqttTlsPort ?? 0,
    dataPlanePort: 0,
    ...(consoleAuthorizer ? { wsPort: options.mqttWsPort ?? 0 } : {}),
    tls,
    region,
    authorizer: async (event) => {
      if (refusal) throw new Error(refusal);
      return (await lambdas.get(iotAuthorizer!.functionId)!.invoke(event)) as IotAuthorizerResult;
    },
    ...(consoleAuthorizer
      ? {
          consoleAuthorizer: async (event: unknown) => {
            if (consoleRefusal) throw new Error(consoleRefusal);
            return (await lambdas.get(consoleAuthorizer.functionId)!.invoke(event)) as IotAuthorizerResult;
          },
        }
      : {}),
    rules,
  });
};

/** An SQS client for each role the topic rules' actions use, through a recording proxy of that role. */
const startRuleClients = async (
  { stops, calls, region, roles, engines }: RunContext,
  topicRules: TopicRuleSpec[],
  statementsOfRole: Permissions['statementsOfRole'],
): Promise<Map<string, SQSClient>> => {
  const ruleClients = new Map<string, SQSClient>();
  for (const roleId of new Set(topicRules.flatMap((r) => [...r.actions, ...(r.errorAction ? [r.errorAction] : [])].map((a) => a.roleId)))) {
    roles[roleId] = statementsOfRole(roleId);
    const proxy = await startRecordingProxy({
      functionName: roleId,
      roleName: roleId,
      statements: () => roles[roleId],
      upstreams: { sqs: engines.sqs.address },
      arnContext: { region, account: ACCOUNT },
      record: (c) => calls.push(c),
    });
    stops.push(proxy.stop);
    const client = new SQSClient({ endpoint: proxy.endpoints.sqs, useQueueUrlAsEndpoint: false });
    stops.push(async () => client.destroy());
    ruleClients.set(roleId, client);
  }
  return ruleClients;
};

/** Why every MQTT CONNECT (of one door) is refused (no authorizer, an unusable one, or no invoke permission for IoT Core), or nothing. */
const refuseDoor = (
  { log, physical, invokeRefusals }: RunContext,
  door: IotAuthorizerSpec | undefined,
  mayInvoke: MayInvoke,
  what = 'MQTT CONNECT',
): string | undefined => {
  const refusal = !door
    ? 'the template has no IoT authorizer'
    : (door.unusable ??
      (mayInvoke(door.functionId, physical.get(door.id)!.attributes.Arn, 'iot.amazonaws.com')
        ? undefined
        : `IoT Core may not invoke ${door.functionId}: no AWS::Lambda::Permission for iot.amazonaws.com on authorizer ${door.id}`));
  if (refusal) {
    invokeRefusals.push(`${what}: ${refusal}`);
    log(`${refusal}: every ${what} is refused`);
  }
  return refusal;
};
