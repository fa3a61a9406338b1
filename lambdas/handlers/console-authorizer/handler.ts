import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { authorizeConsoleConnect } from '../../domain/console-live/authorize';
import { registryDb } from '../../shared/clients';
import { userPoolSettings } from '../../shared/env';

/** What IoT Core sends a custom authorizer for an MQTT CONNECT (the password is base64): only the fields read. */
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
 * The IoT Core custom authorizer of the console's live updates (MQTT over WebSocket, and the local
 * broker's WebSocket listener): client ID `console-…`, username = a workspace ID, password = the
 * user's Cognito access token; the answer lets it read that workspace's console topics only.
 */
export const handler = async (event: unknown, context: Pick<Context, 'invokedFunctionArn'>) => {
  const mqtt = IotAuthorizerEventSchema.safeParse(event).data?.protocolData?.mqtt ?? {};
  const password = mqtt.password ? Buffer.from(mqtt.password, 'base64').toString('utf8') : undefined;
  return authorizeConsoleConnect(
    { db: registryDb(), pool: userPoolSettings() },
    { clientId: mqtt.clientId, username: mqtt.username, password },
    iotArnBase(context),
  );
};
