import { stopDynamoDbPool } from './dynamodb-pool';

/** Global teardown of the e2e project: stops the DynamoDB Locals of the run. */
export default async () => {
  await stopDynamoDbPool();
};
