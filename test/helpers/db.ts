import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { ensureRegistryTable } from '../../local/dynamodb-local';
import { documentClient, type Db } from '../../lambdas/shared/clients';

/** A new, empty registry table on the run's DynamoDB Local. */
export const freshTable = async (): Promise<Db> => {
  const client = new DynamoDBClient({});
  const table = `test-${randomUUID()}`;
  await ensureRegistryTable(client, table);
  return { doc: documentClient(client), table };
};
