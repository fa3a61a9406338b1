import type { Context } from 'aws-lambda';
import { authorizeConsoleConnect } from '../../domain/console-live/authorize';
import { iotArnBase, mqttCredentialsOf } from '../../schemas/iot-authorizer';
import { registryDb } from '../../shared/clients';
import { userPoolSettings } from '../../shared/env';

/**
 * The IoT Core custom authorizer of the console's live updates (MQTT over WebSocket, and the local
 * broker's WebSocket listener): client ID `console-…`, username = a workspace ID, password = the
 * user's Cognito access token; the answer lets it read that workspace's console topics only.
 */
export const handler = async (event: unknown, context: Pick<Context, 'invokedFunctionArn'>) => {
  return authorizeConsoleConnect({ db: registryDb(), pool: userPoolSettings() }, mqttCredentialsOf(event), iotArnBase(context));
};
