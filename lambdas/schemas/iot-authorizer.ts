import type { Context } from 'aws-lambda';
import * as z from 'zod';

/**
 * What IoT Core sends a custom authorizer for an MQTT CONNECT (developer guide, "Defining your
 * Lambda function"): the password is base64. Only the fields the checks read.
 */
const IotAuthorizerEventSchema = z.object({
  protocolData: z
    .object({
      mqtt: z.object({ clientId: z.string().optional(), username: z.string().optional(), password: z.string().optional() }).optional(),
    })
    .optional(),
});

/** The CONNECT's client ID, username and password (decoded), as far as the event has them: what both authorizers check. */
export const mqttCredentialsOf = (event: unknown) => {
  const mqtt = IotAuthorizerEventSchema.safeParse(event).data?.protocolData?.mqtt ?? {};
  const password = mqtt.password ? Buffer.from(mqtt.password, 'base64').toString('utf8') : undefined;
  return { clientId: mqtt.clientId, username: mqtt.username, password };
};

/** `arn:<partition>:iot:<region>:<account>` from the authorizer's own ARN: its policies' resources. */
export const iotArnBase = (context: Pick<Context, 'invokedFunctionArn'>) => {
  const [, partition, , region, account] = context.invokedFunctionArn.split(':');
  return `arn:${partition}:iot:${region}:${account}`;
};
