import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { ensureTable } from '../../local/dynamodb-local';
import { documentClient, type Db } from '../../lambdas/shared/clients';

/**
 * A new, empty registry table on the run's DynamoDB Local (or the named one, created if missing);
 * with `stream`, with the registry's change stream; with `indexes`, those indexes (the sweep's).
 */
export const freshTable = async (table = `test-${randomUUID()}`, options: Parameters<typeof ensureTable>[2] = {}): Promise<Db> => {
  const client = new DynamoDBClient({});
  await ensureTable(client, table, options);
  return { doc: documentClient(client), table };
};
