import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { publishForward } from '../domain/events';
import { authenticateDevice } from '../domain/identities';
import { registryDb } from '../shared/clients';
import { AppError } from '../shared/errors';
import { logger } from '../shared/logger';

/** Every method under the device API's prefix, so that one cached answer serves all of a device's routes. */
const deviceRoutes = (methodArn: string) => methodArn.split('/').slice(0, 2).join('/') + '/*/device/*';

const headerOf = (headers: APIGatewayRequestAuthorizerEvent['headers'], name: string) =>
  Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1] ?? undefined;

/**
 * API Gateway REQUEST authorizer of the device API: `Authorization: Bearer <device JWT>` → the
 * device, its identity, workspace and account, passed to the device API as the request context.
 * A bad, expired or revoked token is answered 401 by API Gateway.
 */
export const handler = async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
  try {
    const device = await authenticateDevice(registryDb(), publishForward, headerOf(event.headers, 'authorization'));
    return {
      principalId: device.deviceId,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: deviceRoutes(event.methodArn) }],
      },
      context: { ...device },
    };
  } catch (error) {
    if (error instanceof AppError && error.status === 401) {
      logger.info('device token refused', { reason: error.message });
      throw new Error('Unauthorized'); // the exact message API Gateway turns into a 401
    }
    throw error;
  }
};
