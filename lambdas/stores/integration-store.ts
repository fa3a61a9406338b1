import { BatchGetCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { NotFoundError } from '../shared/errors';
import type { Integration } from '../schemas/integration';
import { isConditionFailed } from './errors';
import { keyedItems, putAll, putNew, queryAll, strip, type ListRead } from './items';
import { collection, deliveryKey, integrationKey } from './keys';
import { transactWithQuota, type QuotaCheck } from './limits-store';

/** An integration as stored: the listed fields, flat status fields, and its signing secrets. */
export type IntegrationRecord = Omit<Integration, 'status'> &
  Omit<Integration['status'], 'failing_since'> & {
    /** Absent while deliveries succeed (and on integrations from before it was recorded). */
    failing_since?: string | null;
    account_id: string;
    secret: string;
    /** The secret before the last rotation, still used to sign until previous_secret_expires_at. */
    previous_secret: string | null;
  };

/** The fields an update may change. */
export type IntegrationChange = Partial<Pick<IntegrationRecord, 'name' | 'url' | 'data' | 'events' | 'tags' | 'enabled'>>;

const notFound = (integrationId: string, cause: unknown) => new NotFoundError(`Integration ${integrationId} not found.`, { cause });

/** Stores an integration, provided the workspace's quota of integrations takes it. @throws QuotaExceededError from the quota. */
export const createIntegration = async (db: Db, integration: IntegrationRecord, quota: QuotaCheck) => {
  await transactWithQuota(db, [putNew(db, integrationKey(integration.workspace_id, integration.id), integration)], quota);
};

export const getIntegrationOfWorkspace = async (db: Db, workspaceId: string, integrationId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: integrationKey(workspaceId, integrationId), ConsistentRead: true }));
  return Item ? strip<IntegrationRecord>(Item) : undefined;
};

export const listIntegrationsOfWorkspace = (db: Db, workspaceId: string) => {
  const { pk, prefix } = collection.integrationsOfWorkspace(workspaceId);
  return queryAll<IntegrationRecord>(db, pk, prefix);
};

/** The workspace's integrations one by one, in ID order (creation order). */
export const readIntegrationsOfWorkspace = (db: Db, workspaceId: string, read: ListRead) => {
  const { pk, prefix } = collection.integrationsOfWorkspace(workspaceId);
  return keyedItems<IntegrationRecord>(db, { pk, prefix, ...read });
};

/** Runs an UpdateItem on an existing integration and returns it as it is now. @throws NotFoundError when it does not exist. */
const update = async (db: Db, workspaceId: string, integrationId: string, values: Record<string, unknown>, add: Record<string, number> = {}) => {
  const names: Record<string, string> = {};
  const attrs: Record<string, unknown> = {};
  const sets = Object.entries(values).map(([field, value], i) => {
    names[`#s${i}`] = field;
    attrs[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  const adds = Object.entries(add).map(([field, value], i) => {
    names[`#a${i}`] = field;
    attrs[`:a${i}`] = value;
    return `#a${i} :a${i}`;
  });
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: integrationKey(workspaceId, integrationId),
        UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : ''].join(' ').trim(),
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: attrs,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<IntegrationRecord>(Attributes!);
  } catch (error) {
    if (isConditionFailed(error)) throw notFound(integrationId, error);
    throw error;
  }
};

/** Changes an integration's settings, leaving its status and secrets alone. @throws NotFoundError */
export const updateIntegration = (db: Db, workspaceId: string, integrationId: string, change: IntegrationChange, at: string) =>
  update(db, workspaceId, integrationId, { ...change, updated_at: at });

/** Replaces the signing secret, keeping the old one for signing until `previousExpiresAt`. @throws NotFoundError */
export const rotateIntegrationSecret = (
  db: Db,
  workspaceId: string,
  integrationId: string,
  rotation: { secret: string; previous_secret: string; previous_secret_expires_at: string; updated_at: string },
) => update(db, workspaceId, integrationId, rotation);

/**
 * Deletes an integration and gives its place in the workspace's quota of integrations back, all or
 * nothing; returns it as it was. @throws NotFoundError
 */
export const deleteIntegration = async (db: Db, workspaceId: string, integrationId: string, quota: QuotaCheck) => {
  const record = await getIntegrationOfWorkspace(db, workspaceId, integrationId);
  if (!record) throw notFound(integrationId, undefined);
  const remove = { Delete: { TableName: db.table, Key: integrationKey(workspaceId, integrationId), ConditionExpression: 'attribute_exists(pk)' } };
  if (await transactWithQuota(db, [remove], quota)) throw notFound(integrationId, undefined);
  return record;
};

/**
 * Records how one batch of POSTs to an integration went: a success resets the failure count and
 * clears `failing_since`; a failure counts up, keeps the error, and sets `failing_since` when it is
 * the first of a run. @throws NotFoundError when it was deleted meanwhile.
 */
export const recordDeliveryOutcome = async (
  db: Db,
  workspaceId: string,
  integrationId: string,
  outcome: { at: string; delivered: boolean; error?: string },
) => {
  const failed = outcome.error !== undefined;
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: integrationKey(workspaceId, integrationId),
        UpdateExpression: failed
          ? `SET last_error_at = :at, last_error = :error, failing_since = if_not_exists(failing_since, :at)${outcome.delivered ? ', last_delivery_at = :at' : ''} ADD consecutive_failures :one`
          : 'SET last_delivery_at = :at, consecutive_failures = :zero REMOVE failing_since',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: failed ? { ':at': outcome.at, ':error': outcome.error, ':one': 1 } : { ':at': outcome.at, ':zero': 0 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return strip<IntegrationRecord>(Attributes!);
  } catch (error) {
    if (isConditionFailed(error)) throw notFound(integrationId, error);
    throw error;
  }
};

const BATCH_GET_LIMIT = 100; // BatchGetItem takes at most 100 keys
const MAX_ATTEMPTS = 8;

/** The integrations that already received each of these forward messages (by message key). */
export const getDeliveredIntegrations = async (db: Db, messageKeys: string[]) => {
  const delivered = new Map<string, string[]>();
  for (let i = 0; i < messageKeys.length; i += BATCH_GET_LIMIT) {
    let keys: Array<Record<string, unknown>> = messageKeys.slice(i, i + BATCH_GET_LIMIT).map((key) => ({ ...deliveryKey(key) }));
    for (let attempt = 0; keys.length; attempt++) {
      if (attempt >= MAX_ATTEMPTS) throw Object.assign(new Error('BatchGetItem kept returning unprocessed keys'), { name: 'ThrottlingException' });
      if (attempt > 0) await new Promise((r) => setTimeout(r, Math.random() * 25 * 2 ** attempt));
      const result = await db.doc.send(
        new BatchGetCommand({ RequestItems: { [db.table]: { Keys: keys, ProjectionExpression: 'message_key, integration_ids' } } }),
      );
      for (const item of result.Responses?.[db.table] ?? []) delivered.set(item.message_key as string, item.integration_ids as string[]);
      keys = result.UnprocessedKeys?.[db.table]?.Keys ?? [];
    }
  }
  return delivered;
};

/**
 * Remembers which integrations received each message that will be retried, so that the retry
 * skips them. `ttl` (epoch seconds) lets DynamoDB's TTL drop the entries once SQS no longer keeps
 * the message.
 */
export const putDeliveredIntegrations = (db: Db, entries: Array<{ messageKey: string; integrationIds: string[] }>, ttl: number) =>
  putAll(
    db,
    entries.map(({ messageKey, integrationIds }) => ({ ...deliveryKey(messageKey), message_key: messageKey, integration_ids: integrationIds, ttl })),
    4,
  );
