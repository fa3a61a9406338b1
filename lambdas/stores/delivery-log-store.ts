import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { Delivery } from '../schemas/integration';
import { putAll } from './items';
import { collection, deliveryLogKey } from './keys';

/** How long a delivery stays in its integration's log (DynamoDB's TTL drops it after). */
export const DELIVERY_LOG_TTL_SECONDS = 7 * 24 * 3600;

/** One delivery of an integration, to log. */
export interface LoggedDelivery extends Delivery {
  workspace_id: string;
  integration_id: string;
}

const FIELDS: ReadonlyArray<keyof Delivery> = ['at', 'ok', 'status', 'error', 'duration_ms', 'entries', 'kind', 'batch_id', 'test'];

/**
 * Appends POSTs to their integrations' delivery logs, 25 a BatchWriteItem, each item expiring
 * after DELIVERY_LOG_TTL_SECONDS.
 */
export const putDeliveries = (db: Db, deliveries: LoggedDelivery[], concurrency = 2) => {
  const ttl = Math.floor(Date.now() / 1000) + DELIVERY_LOG_TTL_SECONDS;
  return putAll(
    db,
    // `status` is the firmware-use index's sort key (a string): the HTTP status is stored as `http_status`.
    deliveries.map(({ workspace_id, integration_id, status, ...delivery }) => ({
      ...deliveryLogKey(workspace_id, integration_id, delivery.at, randomUUID()),
      ...delivery,
      http_status: status,
      ttl,
    })),
    concurrency,
  );
};

/** The newest `limit` deliveries of an integration, newest first. */
export const readDeliveries = async (db: Db, workspaceId: string, integrationId: string, limit: number): Promise<Delivery[]> => {
  const { pk } = collection.deliveriesOfIntegration(workspaceId, integrationId);
  const { Items = [] } = await db.doc.send(
    new QueryCommand({
      TableName: db.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return Items.map(
    (item) => Object.fromEntries(FIELDS.map((field) => [field, item[field === 'status' ? 'http_status' : field] ?? null])) as unknown as Delivery,
  );
};
