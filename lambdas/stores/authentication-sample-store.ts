import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { authenticationSampleKey, REGISTRY_TTL_ATTRIBUTE } from './keys';

// A device's item is kept a minute past the minute it names, then DynamoDB's TTL removes it (within
// days, at no cost); a late removal changes nothing, since the condition compares minutes.
const KEPT_MINUTES = 2;

/**
 * Claims a device's one sampled `authentication` event of a minute (Unix minutes): true for the
 * first claim of the minute, false (nothing written) once it was claimed. One conditional write,
 * atomic across every container of both doors.
 */
export const claimAuthenticationSample = async (db: Db, deviceId: string, minute: number) => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: authenticationSampleKey(deviceId),
        UpdateExpression: 'SET sampled_minute = :minute, #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(sampled_minute) OR sampled_minute < :minute',
        ExpressionAttributeNames: { '#ttl': REGISTRY_TTL_ATTRIBUTE },
        ExpressionAttributeValues: { ':minute': minute, ':ttl': (minute + KEPT_MINUTES) * 60 },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};
