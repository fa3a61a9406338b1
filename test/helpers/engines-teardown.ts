import type { DynamoDbLocal } from '../../local/dynamodb-local';

export default async () => {
  const engines = (globalThis as { __engines?: { dynamo: DynamoDbLocal } }).__engines;
  await engines?.dynamo.stop();
};
