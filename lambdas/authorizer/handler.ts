import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { authenticateApiKey } from '../domain/api-keys';
import { registryDb } from '../shared/clients';
import { AppError } from '../shared/errors';
import { logger } from '../shared/logger';

/** Every method and path of the same API stage, so that one cached answer serves every route. */
const stageWildcard = (methodArn: string) => methodArn.split('/').slice(0, 2).join('/') + '/*/*';

const headerOf = (headers: APIGatewayRequestAuthorizerEvent['headers'], name: string) =>
  Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1] ?? undefined;

/**
 * API Gateway REQUEST authorizer: X-API-KEY → the key's account, bound workspace and key ID,
 * passed to the handlers as the request context. An unknown, revoked or expired key is
 * answered 401 by API Gateway (its UNAUTHORIZED gateway response, in our error envelope).
 */
export const handler = async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
  try {
    const caller = await authenticateApiKey(registryDb(), headerOf(event.headers, 'x-api-key'));
    return {
      principalId: caller.accountId,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: stageWildcard(event.methodArn) }],
      },
      context: { ...caller },
    };
  } catch (error) {
    if (error instanceof AppError && error.status === 401) {
      logger.info('api key rejected', { reason: error.message });
      throw new Error('Unauthorized'); // the exact message API Gateway turns into a 401
    }
    throw error;
  }
};
