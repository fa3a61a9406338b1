import { Aws, CustomResource } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { CfnAuthorizer, CfnDomainConfiguration } from 'aws-cdk-lib/aws-iot';
import { Construct } from 'constructs';
import type { LiveKind } from '../../lambdas/domain/console-live/live';
import type { HandlerFunction } from './handler-function';
import { customAuthDomain } from './iot-custom-auth';

/** A workspace ID (`wks-` and 20 lowercase letters or digits) as an IAM resource pattern: `?` is one character. */
export const WORKSPACE_ID_PATTERN = `wks-${'?'.repeat(20)}`;

export interface ConsoleLiveProps {
  /** The console's custom authorizer Lambda (lambdas/console-authorizer). */
  authorizer: HandlerFunction;
  /** The custom resource's Lambda that reads a domain configuration's name (lambdas/iot-endpoints). */
  endpointsReader: HandlerFunction;
  /** `https://<the account's IoT data endpoint>` (DeviceMqtt's). */
  dataEndpoint: string;
  /**
   * The Lambda that tells the consoles of each kind of change: connections (device-mqtt, presence),
   * data (ingest), rollout (the registry stream's consumer), webhook (the forwarder), export (the export queue's consumer), alarm (the alarm notifier).
   */
  publishers: Partial<Record<LiveKind, HandlerFunction>>;
}

/**
 * The console's live updates on AWS IoT Core (docs/console.md, "Live updates"): a custom authorizer
 * (a Cognito access token as the MQTT password, one workspace as the username) that a second
 * domain configuration, MQTT over WebSocket on 443 (`MQTT_WSS` + `CUSTOM_AUTH`), makes its default:
 * the console connects to `wss://<its domain>/mqtt`. Each Lambda that publishes gets `iot:Publish` on
 * its kind's console topic of any workspace (`fleetstream/console/wks-<20>/<kind>`, spelled with
 * `?`), nothing else, and the data endpoint.
 */
export class ConsoleLive extends Construct {
  readonly authorizer: CfnAuthorizer;
  readonly domain: CfnDomainConfiguration;
  /** The console's MQTT over WebSocket host (the domain configuration's domain name). */
  readonly host: string;
  /** `wss://<host>/mqtt`: config.json's `liveUrl`. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: ConsoleLiveProps) {
    super(scope, id);

    // A domain of its own, so that the browser's connections meet the console's authorizer and
    // devices' the devices' one, with no authorizer named by the client.
    ({ authorizer: this.authorizer, domain: this.domain } = customAuthDomain(this, {
      authorizer: props.authorizer,
      suffix: 'console',
      applicationProtocol: 'MQTT_WSS',
      endpointsReader: props.endpointsReader,
    }));
    const endpoints = new CustomResource(this, 'Endpoints', {
      serviceToken: props.endpointsReader.functionArn,
      resourceType: 'Custom::IotEndpoints',
      properties: { DomainConfigurationName: this.domain.ref },
    });
    this.host = endpoints.getAttString('DomainName');
    this.url = `wss://${this.host}/mqtt`;

    // Exactly its kind's topic in any workspace: `?` spells the ID's 20 characters, no `*`.
    for (const [kind, fn] of Object.entries(props.publishers) as Array<[LiveKind, HandlerFunction]>) {
      const topic = `arn:${Aws.PARTITION}:iot:${Aws.REGION}:${Aws.ACCOUNT_ID}:topic/fleetstream/console/${WORKSPACE_ID_PATTERN}/${kind}`;
      fn.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ['iot:Publish'], resources: [topic] }));
      fn.addEnvironment('AWS_ENDPOINT_URL_IOT_DATA_PLANE', props.dataEndpoint);
      fn.addEnvironment('CONSOLE_LIVE', 'true');
    }
  }
}
