import { startDynamoDbLocal } from '../../local/dynamodb-local';

/**
 * Global setup of the e2e project: one DynamoDB Local for the whole run, which every runtime the
 * test files start shares (test/helpers/runtime.ts), each on tables of its own. Starting the JVM
 * once instead of once per file saves seconds of CPU per file on two cores.
 */
export default async () => {
  const dynamo = await startDynamoDbLocal();
  (globalThis as { __e2eDynamo?: unknown }).__e2eDynamo = dynamo;
  // Workers inherit the environment.
  process.env.FLEETSTREAM_TEST_DYNAMODB_ENDPOINT = dynamo.endpoint;
};
