import { Aws, CustomResource, Stack, Validations } from 'aws-cdk-lib';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type CfnAuthorizer, type CfnDomainConfiguration, CfnTopicRule } from 'aws-cdk-lib/aws-iot';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { MQTT_RULES, type MqttRule } from '../../lambdas/mqtt-rules';
import { AMAZON_ROOT_CA_1 } from '../amazon-root-ca-1';
import type { HandlerFunction } from './handler-function';
import { customAuthDomain } from './iot-custom-auth';

/** The port devices use: MQTT over TLS without ALPN, which a CUSTOM_AUTH + SECURE_MQTT domain configuration serves. */
export const DEVICE_MQTT_PORT = 8883;

/** A device's MQTT client ID (its ID: `dev-` and 20 lowercase letters or digits) as an IAM resource pattern. */
export const DEVICE_CLIENT_ID_PATTERN = `dev-${'?'.repeat(20)}`;

export interface DeviceMqttProps {
  /** The custom authorizer Lambda (lambdas/mqtt-authorizer). */
  authorizer: HandlerFunction;
  /** The queues the topic rules fill (`lambdas/mqtt-rules.ts` `queue`), each with its DLQ for the rules' error actions. */
  queues: Record<MqttRule['queue'], { queue: IQueue; dlq: IQueue }>;
  /** Lambdas that publish to devices on `j/dn/<id>` through the IoT data plane. */
  publishers: HandlerFunction[];
  /** Lambdas that close a device's connection through the IoT data plane (DeleteConnection): revoking an identity does, and deleting a device. */
  sessionClosers: HandlerFunction[];
  /** The custom resource's Lambda that reads the domain name and data endpoint (lambdas/iot-endpoints). */
  endpointsReader: HandlerFunction;
  /** The Lambda that writes device credentials: told the broker's address and CA. */
  credentialsWriter?: HandlerFunction;
}

/**
 * The MQTT door on AWS IoT Core (DESIGN §9): a custom authorizer (the device JWT as password) that
 * a domain configuration on an AWS-managed domain makes the default for MQTT over TLS on port
 * 8883 without ALPN; topic rules from `lambdas/mqtt-rules.ts` into their queues, each with an
 * error action to the queue's DLQ; the data-plane endpoint and `iot:Publish` on `j/dn/*` for the Lambdas
 * that publish to devices, and `iot:DeleteConnection` on the devices' client IDs for those that close
 * their connections.
 */
export class DeviceMqtt extends Construct {
  readonly authorizer: CfnAuthorizer;
  readonly domain: CfnDomainConfiguration;
  readonly rules: CfnTopicRule[];
  /** The devices' broker host (the domain configuration's domain name). */
  readonly host: string;
  /** `https://<the account's IoT data endpoint>`: where Lambdas publish. */
  readonly dataEndpoint: string;

  constructor(scope: Construct, id: string, props: DeviceMqttProps) {
    super(scope, id);
    const stack = Stack.of(this);

    // SECURE_MQTT + CUSTOM_AUTH lets clients that send no ALPN (existing device clients) use the
    // custom authorizer on 8883 (and 443); IoT Core's default endpoint needs ALPN for that.
    // The domain name of an AWS-managed domain and the account's data endpoint are not
    // CloudFormation attributes: a custom resource reads them (lambdas/iot-endpoints).
    ({ authorizer: this.authorizer, domain: this.domain } = customAuthDomain(this, {
      authorizer: props.authorizer,
      suffix: 'devices',
      applicationProtocol: 'SECURE_MQTT',
      endpointsReader: props.endpointsReader,
    }));
    // DescribeEndpoint takes no resource-level permission (Service Authorization Reference, AWS IoT).
    props.endpointsReader.addToRolePolicy(new PolicyStatement({ actions: ['iot:DescribeEndpoint'], resources: ['*'] }));
    Validations.of(props.endpointsReader.role!).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'iot:DescribeEndpoint has no resource-level permissions; the only other action names the one domain configuration.',
    });
    const endpoints = new CustomResource(this, 'Endpoints', {
      serviceToken: props.endpointsReader.functionArn,
      resourceType: 'Custom::IotEndpoints',
      properties: { DomainConfigurationName: this.domain.ref },
    });
    this.host = endpoints.getAttString('DomainName');
    const dataEndpoint = `https://${endpoints.getAttString('DataEndpoint')}`;
    this.dataEndpoint = dataEndpoint;

    // The rules' role may only send to the rules' queues and their DLQs.
    const rulesRole = new Role(this, 'RulesRole', {
      assumedBy: new ServicePrincipal('iot.amazonaws.com'),
      description: 'Lets the MQTT topic rules put device messages on their queues (and failures on the DLQs)',
    });
    for (const name of new Set(MQTT_RULES.map((rule) => rule.queue))) {
      props.queues[name].queue.grantSendMessages(rulesRole);
      props.queues[name].dlq.grantSendMessages(rulesRole);
    }
    this.rules = MQTT_RULES.map(
      (rule) =>
        new CfnTopicRule(this, `Rule${rule.name}`, {
          ruleName: `${stack.stackName.replace(/[^A-Za-z0-9_]/g, '_')}_${rule.name}`,
          topicRulePayload: {
            sql: rule.sql,
            awsIotSqlVersion: '2016-03-23',
            ruleDisabled: false,
            actions: [{ sqs: { queueUrl: props.queues[rule.queue].queue.queueUrl, roleArn: rulesRole.roleArn, useBase64: false } }],
            errorAction: { sqs: { queueUrl: props.queues[rule.queue].dlq.queueUrl, roleArn: rulesRole.roleArn, useBase64: false } },
          },
        }),
    );

    const downTopics = `arn:${Aws.PARTITION}:iot:${Aws.REGION}:${Aws.ACCOUNT_ID}:topic/j/dn/*`;
    for (const fn of props.publishers) {
      fn.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['iot:Publish'], resources: [downTopics] }));
      Validations.of(fn.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iot:<AWS::Region>:<AWS::AccountId>:topic/j/dn/*]`,
        reason: 'Publishes go to the j/dn topic of whichever device a job, FOTA or request names: only the devices’ down topics, nothing else.',
      });
      fn.addEnvironment('AWS_ENDPOINT_URL_IOT_DATA_PLANE', dataEndpoint);
      fn.addEnvironment('MQTT_LIVE_DELIVERY', 'true');
    }
    // DeleteConnection's resource is the client (Service Authorization Reference; "Managing MQTT
    // connections" in the IoT developer guide): the devices' client IDs are their IDs, `dev-` and 20
    // letters or digits, which `?` (one character) spells exactly; no other client may be closed.
    const deviceClients = `arn:${Aws.PARTITION}:iot:${Aws.REGION}:${Aws.ACCOUNT_ID}:client/${DEVICE_CLIENT_ID_PATTERN}`;
    for (const fn of props.sessionClosers) {
      fn.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['iot:DeleteConnection'], resources: [deviceClients] }));
      fn.addEnvironment('AWS_ENDPOINT_URL_IOT_DATA_PLANE', dataEndpoint);
      fn.addEnvironment('MQTT_SESSION_CLOSE', 'true');
    }
    props.credentialsWriter?.addEnvironment('DEVICE_MQTT_URL', `mqtts://${this.host}:${DEVICE_MQTT_PORT}`);
    props.credentialsWriter?.addEnvironment('DEVICE_MQTT_CACERT', AMAZON_ROOT_CA_1);
  }
}
