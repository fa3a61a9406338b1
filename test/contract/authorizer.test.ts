import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { handler } from '../../lambdas/handlers/authorizer/handler';
import type { Db } from '../../lambdas/shared/clients';
import { REGISTRY_TABLE } from '../../lambdas/shared/env';
import { newAccount } from '../helpers/callers';
import { freshTable } from '../helpers/db';

let db: Db;
beforeAll(async () => {
  // the handler works on the table its environment names, as in Lambda
  db = await freshTable(REGISTRY_TABLE);
});

const requestWith = (headers: Record<string, string>) =>
  ({
    type: 'REQUEST',
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/GET/workspaces/wks-1/devices',
    headers,
  }) as unknown as APIGatewayRequestAuthorizerEvent;

describe('API-key authorizer', () => {
  it('allows the whole stage for a valid key, so one cached answer serves every route', async () => {
    const { api_key, account_id, workspace_id, api_key_id } = await newAccount(db);

    const result = await handler(requestWith({ 'X-Api-Key': api_key }));

    expect(result).toEqual({
      principalId: account_id,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/*/*' }],
      },
      context: { accountId: account_id, workspaceId: workspace_id, keyId: api_key_id },
    });
  });

  it('fails with exactly "Unauthorized" (API Gateway’s 401) for an unknown or missing key', async () => {
    await expect(handler(requestWith({ 'x-api-key': 'fsk_unknown' }))).rejects.toThrow(/^Unauthorized$/);
    await expect(handler(requestWith({}))).rejects.toThrow(/^Unauthorized$/);
  });
});
