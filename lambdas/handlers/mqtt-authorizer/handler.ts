import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { authorizeMqttConnect } from '../../domain/doors/device-mqtt';
import { forwardAndLog } from '../../domain/webhooks/events';
import { registryDb } from '../../shared/clients';
import { publishMetrics } from '../../shared/metrics';

/**
 * What IoT Core sends a custom authorizer for an MQTT CONNECT (developer guide, "Defining your
 * Lambda function"): the password is base64. Only the fields the check reads.
 */
const IotAuthorizerEventSchema = z.object({
  protocolData: z
    .object({
      mqtt: z.object({ clientId: z.string().optional(), username: z.string().optional(), password: z.string().optional() }).optional(),
    })
    .optional(),
});

/** `arn:<partition>:iot:<region>:<account>` from this function's own ARN: the policy's resources. */
const iotArnBase = (context: Pick<Context, 'invokedFunctionArn'>) => {
  const [, partition, , region, account] = context.invokedFunctionArn.split(':');
  return `arn:${partition}:iot:${region}:${account}`;
};

/**
 * The IoT Core custom authorizer of the MQTT door (and of the local broker): client ID = username
 * = device ID, password = the device JWT, checked as the HTTPS door checks it; the answer carries
 * the device's own policy.
 */
export const handler = async (event: unknown, context: Pick<Context, 'invokedFunctionArn'>) => {
  const mqtt = IotAuthorizerEventSchema.safeParse(event).data?.protocolData?.mqtt ?? {};
  const password = mqtt.password ? Buffer.from(mqtt.password, 'base64').toString('utf8') : undefined;
  try {
    return await authorizeMqttConnect(
      registryDb(),
      forwardAndLog(registryDb()),
      { clientId: mqtt.clientId, username: mqtt.username, password },
      iotArnBase(context),
    );
  } finally {
    publishMetrics(); // a refused token is counted (DeviceAuthenticationFailures)
  }
};
