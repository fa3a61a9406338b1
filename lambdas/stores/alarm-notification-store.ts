import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { alarmNotificationSentKey, alarmRuleKey, REGISTRY_TTL_ATTRIBUTE } from './keys';

/** What the rule shows of its last notification that could not be sent, even after the retries. */
export interface NotificationError {
  /** When the last attempt failed (ISO). */
  at: string;
  /** What the sender answered. */
  error: string;
  /** The address the e-mail was for; null when the webhook event failed. */
  email: string | null;
}

/**
 * Whether this part of a transition's notification (`webhook`, or `email#<address>`) was sent
 * already: a strongly consistent read of its mark.
 */
export const wasNotificationSent = async (db: Db, transitionId: string, part: string): Promise<boolean> => {
  const { Item } = await db.doc.send(
    new GetCommand({ TableName: db.table, Key: alarmNotificationSentKey(transitionId, part), ConsistentRead: true, ProjectionExpression: 'pk' }),
  );
  return Item !== undefined;
};

/**
 * Marks this part of a transition's notification as sent (one UpdateItem, idempotent), kept
 * `keepSeconds` (then the table's TTL removes it).
 */
export const markNotificationSent = async (db: Db, transitionId: string, part: string, at: string, keepSeconds: number) => {
  await db.doc.send(
    new UpdateCommand({
      TableName: db.table,
      Key: alarmNotificationSentKey(transitionId, part),
      UpdateExpression: 'SET sent_at = if_not_exists(sent_at, :at), #ttl = :ttl',
      ExpressionAttributeNames: { '#ttl': REGISTRY_TTL_ATTRIBUTE },
      ExpressionAttributeValues: { ':at': at, ':ttl': Math.floor(Date.parse(at) / 1000) + keepSeconds },
    }),
  );
};

/**
 * Shows a notification that could not be sent on its rule (`last_notification_error`): a
 * conditional update of the rule's item that does nothing when the rule is gone.
 * @returns whether the rule was there.
 */
export const setRuleNotificationError = async (db: Db, workspaceId: string, ruleId: string, error: NotificationError): Promise<boolean> => {
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: alarmRuleKey(workspaceId, ruleId),
        UpdateExpression: 'SET last_notification_error = :error',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':error': error },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionFailed(e)) return false;
    throw e;
  }
};
