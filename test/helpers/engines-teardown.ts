import type { DynamoDbLocal } from '../../local/dynamodb-local';

export default async () => {
  const engines = (globalThis as { __engines?: { dynamo: DynamoDbLocal; sqs: { stop: () => Promise<void> } } }).__engines;
  await Promise.all([engines?.dynamo.stop(), engines?.sqs.stop()]);
};
