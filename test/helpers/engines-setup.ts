/**
 * Jest globalSetup of the contract project: one DynamoDB Local for the run. Test files each make
 * their own table (`freshTable`), so they never see each other's items.
 */
import { LOCAL_AWS_ENV, startDynamoDbLocal } from '../../local/dynamodb-local';

export default async () => {
  const dynamo = await startDynamoDbLocal();
  (globalThis as { __engines?: unknown }).__engines = { dynamo };
  // Workers inherit the environment: the SDK finds DynamoDB Local through the standard variable.
  Object.assign(process.env, LOCAL_AWS_ENV, { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint });
};
