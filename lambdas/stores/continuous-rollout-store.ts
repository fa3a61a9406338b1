import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import type { TransactAction } from './items';
import { continuousRolloutsKey, groupKey } from './keys';

/** What the registry stream needs of a continuous rollout to know whether a device joins it: its target. */
export interface ContinuousTarget {
  rollout_id: string;
  fleets: string[];
  group_id?: string;
  q?: string;
}

/**
 * Most continuous rollouts a workspace runs at once: their targets share one item (≤ 400 KB: 50 of
 * 2,000-character queries take a quarter of it), read whole by the registry stream.
 */
export const CONTINUOUS_ROLLOUTS_MAX = 50;

/** Each rollout's target is an attribute of its own (`r_<id>`): added and removed without a read, and no map to create first. */
const ATTRIBUTE_PREFIX = 'r_';
const attributeOf = (rolloutId: string) => `${ATTRIBUTE_PREFIX}${rolloutId}`;

/**
 * The transaction actions that record a new continuous rollout with its workspace's list (its
 * count `n` below CONTINUOUS_ROLLOUTS_MAX), and, for a group's, the rollout in the group's
 * `used_by` (the group must still exist): both fail the transaction with a failed condition, in
 * this order.
 */
export const addContinuousActions = (db: Db, workspaceId: string, target: ContinuousTarget): TransactAction[] => {
  const { rollout_id, ...rest } = target;
  return [
    {
      Update: {
        TableName: db.table,
        Key: continuousRolloutsKey(workspaceId),
        UpdateExpression: 'SET #r = :target ADD #n :one',
        ConditionExpression: 'attribute_not_exists(#n) OR #n < :max',
        ExpressionAttributeNames: { '#r': attributeOf(rollout_id), '#n': 'n' },
        ExpressionAttributeValues: { ':target': rest, ':one': 1, ':max': CONTINUOUS_ROLLOUTS_MAX },
      },
    },
    ...(target.group_id === undefined
      ? []
      : [
          {
            Update: {
              TableName: db.table,
              Key: groupKey(workspaceId, target.group_id),
              UpdateExpression: 'ADD used_by :ids',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeValues: { ':ids': new Set([rollout_id]) },
            },
          },
        ]),
  ];
};

/**
 * The workspace's continuous rollouts (those not known to have ended), read at once (strongly
 * consistent: a device change the stream reads is newer than every rollout recorded before it).
 * One GetItem; none when the workspace never had one.
 */
export const readContinuousTargets = async (db: Db, workspaceId: string): Promise<ContinuousTarget[]> => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: continuousRolloutsKey(workspaceId), ConsistentRead: true }));
  if (!Item) return [];
  return Object.entries(Item).flatMap(([name, value]) =>
    name.startsWith(ATTRIBUTE_PREFIX) ? [{ rollout_id: name.slice(ATTRIBUTE_PREFIX.length), ...(value as Omit<ContinuousTarget, 'rollout_id'>) }] : [],
  );
};

/**
 * Takes an ended continuous rollout off its workspace's list and out of its group's `used_by`
 * (the group may then be deleted). Idempotent: a rollout taken off already changes nothing.
 */
export const removeContinuous = async (db: Db, workspaceId: string, rolloutId: string, groupId?: string) => {
  const updates = [
    new UpdateCommand({
      TableName: db.table,
      Key: continuousRolloutsKey(workspaceId),
      UpdateExpression: 'REMOVE #r ADD #n :minus',
      ConditionExpression: 'attribute_exists(#r)',
      ExpressionAttributeNames: { '#r': attributeOf(rolloutId), '#n': 'n' },
      ExpressionAttributeValues: { ':minus': -1 },
    }),
    ...(groupId === undefined
      ? []
      : [
          new UpdateCommand({
            TableName: db.table,
            Key: groupKey(workspaceId, groupId),
            // The last ID deleted from a set removes the attribute: the group can be deleted then.
            UpdateExpression: 'DELETE used_by :ids',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':ids': new Set([rolloutId]) },
          }),
        ]),
  ];
  for (const update of updates) {
    try {
      await db.doc.send(update);
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
  }
};
