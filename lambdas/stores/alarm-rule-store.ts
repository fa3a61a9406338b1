import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { AlarmRule } from '../schemas/alarms';
import { failedConditions } from './errors';
import { keyedItems, putNew, queryAll, strip, type ListRead } from './items';
import { alarmRuleKey, collection, groupKey, workspaceKey, type ItemKey } from './keys';
import { transactWithQuota, type QuotaCheck, type TransactItem } from './limits-store';

/** An alarm rule as stored (`WKS#<wks>` / `ALARMRULE#<alr>`): its public fields, and whose it is. */
export type AlarmRuleRecord = AlarmRule & { account_id: string; workspace_id: string };

/**
 * The attribute of the workspace item that counts the changes of its alarm rules: a container that
 * cached the rules at one value reads them again when it moves (domain/alarms/rule-cache.ts).
 */
export const ALARM_RULES_VERSION = 'alarm_rules_version';

const notFound = (ruleId: string, cause?: unknown) => new NotFoundError(`Alarm rule ${ruleId} not found.`, { cause });

/**
 * A quota's transaction item that also moves the workspace's `alarm_rules_version` (both are on
 * the workspace item, and a transaction may touch an item once): an Update gets one more ADD, a
 * ConditionCheck becomes an Update of the version under the same condition.
 */
const movingVersion = (item: TransactItem): TransactItem => {
  const names = { '#arv': ALARM_RULES_VERSION };
  if (item.Update) {
    const update = item.Update;
    const expression = update.UpdateExpression ?? '';
    return {
      Update: {
        ...update,
        UpdateExpression: /\bADD\b/.test(expression) ? expression.replace(/\bADD\b/, 'ADD #arv :arv,') : `${expression} ADD #arv :arv`,
        ExpressionAttributeNames: { ...update.ExpressionAttributeNames, ...names },
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':arv': 1 },
      },
    };
  }
  const check = item.ConditionCheck!;
  return {
    Update: {
      TableName: check.TableName,
      Key: check.Key,
      UpdateExpression: 'ADD #arv :arv',
      ConditionExpression: check.ConditionExpression,
      ExpressionAttributeNames: { ...check.ExpressionAttributeNames, ...names },
      ExpressionAttributeValues: { ...check.ExpressionAttributeValues, ':arv': 1 },
    },
  };
};

/** The quota's part of a rule's create or delete, moving the rules' version with it. */
const withVersion = (quota: QuotaCheck): QuotaCheck => ({ item: async () => movingVersion(await quota.item()), failed: quota.failed });

/** The transaction item that moves a workspace's rules version alone (a rule changed). */
const versionMove = (db: Db, accountId: string, workspaceId: string): TransactItem => ({
  Update: {
    TableName: db.table,
    Key: workspaceKey(accountId, workspaceId),
    UpdateExpression: 'ADD #arv :one',
    ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting_at)',
    ExpressionAttributeNames: { '#arv': ALARM_RULES_VERSION },
    ExpressionAttributeValues: { ':one': 1 },
  },
});

/** A group's `used_by` gains (ADD) or loses (DELETE) a rule; gaining needs the group to exist. */
const groupUse = (db: Db, workspaceId: string, groupId: string, ruleId: string, op: 'ADD' | 'DELETE'): TransactItem => ({
  Update: {
    TableName: db.table,
    Key: groupKey(workspaceId, groupId),
    UpdateExpression: `${op} used_by :ids`,
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':ids': new Set([ruleId]) },
  },
});

/** The refusal of a rule whose group was deleted meanwhile. */
const groupGone = (groupId: string) =>
  new NotFoundError(`Group ${groupId} not found.`, { details: [{ field: 'body.target.group', message: 'No such group.' }] });

/**
 * Stores a new rule, its place in the workspace's quota of rules, its group's `used_by` (when it
 * targets one) and a move of the rules' version, all or nothing.
 * @throws QuotaExceededError from the quota; NotFoundError when its group was deleted meanwhile.
 */
export const putAlarmRule = async (db: Db, rule: AlarmRuleRecord, quota: QuotaCheck) => {
  const group = rule.target.group;
  const items: TransactItem[] = [putNew(db, alarmRuleKey(rule.workspace_id, rule.id), rule)];
  if (group !== null) items.push(groupUse(db, rule.workspace_id, group, rule.id, 'ADD'));
  const failed = await transactWithQuota(db, items, withVersion(quota));
  if (failed?.includes(1) && group !== null) throw groupGone(group);
  if (failed) throw new Error(`The new alarm rule ${rule.id} collided with an existing item.`);
};

export const getAlarmRuleOfWorkspace = async (db: Db, workspaceId: string, ruleId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: alarmRuleKey(workspaceId, ruleId), ConsistentRead: true }));
  return Item ? strip<AlarmRuleRecord>(Item) : undefined;
};

/** The workspace's rules one by one, in ID order (creation order). */
export const readAlarmRulesOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.alarmRulesOfWorkspace(workspaceId);
  return keyedItems<AlarmRuleRecord>(db, { pk, prefix, ...read });
};

/** Every rule of the workspace at once (at most its quota of them), eventually consistent: what the rules' cache reads. */
export const listAlarmRulesOfWorkspace = async (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.alarmRulesOfWorkspace(workspaceId);
  return queryAll<AlarmRuleRecord>(db, pk, prefix, { ConsistentRead: false });
};

/**
 * The fields a change writes: not `last_notification_error`, which the notifier sets on its own
 * (a change must not wipe one written since it read the rule).
 */
const CHANGEABLE = ['name', 'severity', 'target', 'tag', 'field', 'op', 'value', 'clear_value', 'for_seconds', 'notify', 'enabled', 'updated_at'] as const;

/**
 * Writes a changed rule over the one read (its `updated_at` unchanged meanwhile), moves the rules'
 * version, and moves the rule between groups' `used_by` when its group changed, all or nothing.
 * @returns false when the rule changed or went meanwhile (nothing written).
 * @throws NotFoundError when its new group was deleted meanwhile.
 */
export const replaceAlarmRule = async (db: Db, before: AlarmRuleRecord, after: AlarmRuleRecord) => {
  const key: ItemKey = alarmRuleKey(after.workspace_id, after.id);
  const items: TransactItem[] = [
    {
      Update: {
        TableName: db.table,
        Key: key,
        UpdateExpression: `SET ${CHANGEABLE.map((field) => `#${field} = :${field}`).join(', ')}`,
        ConditionExpression: 'attribute_exists(pk) AND updated_at = :read',
        ExpressionAttributeNames: Object.fromEntries(CHANGEABLE.map((field) => [`#${field}`, field])),
        ExpressionAttributeValues: { ':read': before.updated_at, ...Object.fromEntries(CHANGEABLE.map((field) => [`:${field}`, after[field]])) },
      },
    },
  ];
  const [was, now] = [before.target.group, after.target.group];
  if (was !== now) {
    if (now !== null) items.push(groupUse(db, after.workspace_id, now, after.id, 'ADD'));
    if (was !== null) items.push(groupUse(db, after.workspace_id, was, after.id, 'DELETE'));
  }
  items.push(versionMove(db, after.account_id, after.workspace_id));
  try {
    await db.doc.send(new TransactWriteCommand({ TransactItems: items }));
    return true;
  } catch (error) {
    const failed = failedConditions(error);
    if (!failed) throw error;
    if (failed.includes(0)) return false;
    if (failed.includes(items.length - 1)) throw new NotFoundError(`Workspace ${after.workspace_id} not found.`, { cause: error });
    throw groupGone(now!);
  }
};

/**
 * Deletes a rule, gives its place in the quota back, takes it out of its group's `used_by` and moves
 * the rules' version, all or nothing; returns it as it was.
 * @throws NotFoundError when it does not exist.
 */
export const deleteAlarmRule = async (db: Db, rule: AlarmRuleRecord, quota: QuotaCheck) => {
  const items: TransactItem[] = [
    { Delete: { TableName: db.table, Key: alarmRuleKey(rule.workspace_id, rule.id), ConditionExpression: 'attribute_exists(pk)' } },
  ];
  // Its group cannot have been deleted meanwhile: the rule holds it.
  if (rule.target.group !== null) items.push(groupUse(db, rule.workspace_id, rule.target.group, rule.id, 'DELETE'));
  const failed = await transactWithQuota(db, items, withVersion(quota));
  if (failed) throw notFound(rule.id);
  return rule;
};
