import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { documentClient } from '../../../lambdas/shared/clients';
import { dynamoDbTimeseriesStore, ensureTimeseriesTable } from '../../../lambdas/stores/timeseries/dynamodb';
import { describeTimeseriesStore } from './timeseries-store-contract';

describeTimeseriesStore('dynamodb on DynamoDB Local', async () => {
  const client = new DynamoDBClient({});
  const table = `timeseries-${randomUUID()}`;
  await ensureTimeseriesTable(client, table);
  return dynamoDbTimeseriesStore({ doc: documentClient(client), table }, { writeConcurrency: 2 });
});
