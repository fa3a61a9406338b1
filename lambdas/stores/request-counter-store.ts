import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { REGISTRY_TTL_ATTRIBUTE, requestCounterKey } from './keys';

// A second's counter is kept a minute past it, then DynamoDB's TTL removes it (within days, at no
// cost: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TTL.html); a counter read
// after its second has no use, so late removal changes nothing.
const COUNTER_KEPT_SECONDS = 60;

/**
 * Counts one request of a caller in a second, provided fewer than `max` were counted there: true
 * when counted, false (nothing written) when the second is full. One conditional write, atomic
 * across every container.
 */
export const countRequest = async (db: Db, caller: string, second: number, max: number) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: requestCounterKey(caller, second),
        UpdateExpression: 'ADD requests :one SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(requests) OR requests < :max',
        ExpressionAttributeNames: { '#ttl': REGISTRY_TTL_ATTRIBUTE },
        ExpressionAttributeValues: { ':one': 1, ':max': max, ':ttl': second + COUNTER_KEPT_SECONDS },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};
