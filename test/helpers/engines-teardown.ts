import { stopDynamoDbPool } from './dynamodb-pool';

/** Global teardown of the contract project: stops fauxqs and the run's DynamoDB Locals. */
export default async () => {
  const engines = (globalThis as { __engines?: { sqs: { stop: () => Promise<void> } } }).__engines;
  await Promise.all([engines?.sqs.stop(), stopDynamoDbPool()]);
};
