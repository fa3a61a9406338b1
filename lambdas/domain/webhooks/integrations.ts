import { createHmac, randomBytes } from 'node:crypto';
import type { Db } from '../../shared/clients';
import { WEBHOOK_ALLOW_PRIVATE_TARGETS } from '../../shared/env';
import { NotFoundError, ValidationError, type ErrorDetail } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { isPrivateHost } from '../../shared/public-addresses';
import type { RenderedEntry } from './forward-pack';
import type { CreateIntegrationBody, Integration, UpdateIntegrationBody } from '../../schemas/integration';
import {
  createIntegration as storeIntegration,
  deleteIntegration as removeIntegration,
  getIntegrationOfWorkspace,
  readIntegrationsOfWorkspace,
  rotateIntegrationSecret as storeRotation,
  updateIntegration as storeUpdate,
  type IntegrationRecord,
} from '../../stores/integration-store';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { collection } from '../../stores/keys';
import { quota, release } from '../limits/limits';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { requireWorkspace } from '../tenancy/workspaces';

/** After a rotation the previous secret keeps signing (beside the new one) this long, so receivers can switch without losing POSTs. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600 * 1000;

/** Headers of every webhook POST. */
export const SIGNATURE_HEADER = 'x-fleetstream-signature';
export const TIMESTAMP_HEADER = 'x-fleetstream-timestamp';

/**
 * What is wrong with a webhook URL for this deployment: in the cloud it must be https to a public
 * host; `allowPrivate` (the local runtime) also takes http and private, loopback or link-local
 * targets. A name that later resolves to a private address is refused at delivery time.
 */
export const webhookUrlProblems = (url: string, allowPrivate: boolean): string[] => {
  const parsed = new URL(url);
  const problems: string[] = [];
  if (parsed.username || parsed.password) problems.push('Must not carry a user name or password.');
  if (allowPrivate) return problems;
  if (parsed.protocol !== 'https:') problems.push('Must use https.');
  if (isPrivateHost(parsed.hostname)) problems.push('Must not target a private, loopback or link-local address.');
  return problems;
};

/** Where webhooks may point: the deployment's rule (WEBHOOK_ALLOW_PRIVATE_TARGETS) unless told otherwise. */
export interface TargetPolicy {
  allowPrivateTargets: boolean;
}

const DEPLOYMENT_POLICY: TargetPolicy = { allowPrivateTargets: WEBHOOK_ALLOW_PRIVATE_TARGETS };

const checkSettings = (settings: Pick<Integration, 'url' | 'data' | 'events'>, policy: TargetPolicy) => {
  const details: ErrorDetail[] = webhookUrlProblems(settings.url, policy.allowPrivateTargets).map((message) => ({ field: 'body.url', message }));
  if (!settings.data && !settings.events) details.push({ field: 'body.data', message: 'Send data, events or both.' });
  if (details.length) throw new ValidationError(`Invalid body: ${[...new Set(details.map((d) => d.field))].join(', ')}.`, { details });
};

/** A new signing secret: 256 random bits, base64url, with a recognisable prefix. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

/** An integration as the API shows it: its settings and status, never its secrets. */
export const toIntegration = (record: IntegrationRecord): Integration => ({
  id: record.id,
  workspace_id: record.workspace_id,
  name: record.name,
  url: record.url,
  data: record.data,
  events: record.events,
  tags: record.tags,
  enabled: record.enabled,
  created_at: record.created_at,
  updated_at: record.updated_at,
  previous_secret_expires_at: record.previous_secret_expires_at ?? null,
  status: {
    last_delivery_at: record.last_delivery_at ?? null,
    last_error_at: record.last_error_at ?? null,
    last_error: record.last_error ?? null,
    consecutive_failures: record.consecutive_failures ?? 0,
    // a run of failures from before failing_since was recorded: since its last error at the latest
    failing_since: record.failing_since ?? ((record.consecutive_failures ?? 0) > 0 ? (record.last_error_at ?? null) : null),
  },
});

/**
 * The stored integration (secrets included, for signing) when the workspace is the caller's.
 * @throws NotFoundError when the workspace or the integration is not the caller's.
 */
export const requireIntegration = async (db: Db, caller: Caller, workspaceId: string, integrationId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  const record = await getIntegrationOfWorkspace(db, workspaceId, integrationId);
  if (!record) throw new NotFoundError(`Integration ${integrationId} not found.`);
  return record;
};

/**
 * Creates a webhook integration, within the workspace's quota of integrations; its signing secret
 * is returned here and never again.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the URL is not allowed or nothing would be sent.
 * @throws QuotaExceededError when the workspace holds its limit of integrations.
 */
export const createIntegration = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  input: CreateIntegrationBody,
  policy: TargetPolicy = DEPLOYMENT_POLICY,
) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  checkSettings(input, policy);
  const at = nowIso();
  const secret = newWebhookSecret();
  const record: IntegrationRecord = {
    ...input,
    id: newId('int', at),
    workspace_id: workspaceId,
    account_id: caller.accountId,
    created_at: at,
    updated_at: at,
    secret,
    previous_secret: null,
    previous_secret_expires_at: null,
    last_delivery_at: null,
    last_error_at: null,
    last_error: null,
    consecutive_failures: 0,
  };
  await storeIntegration(db, record, quota(db, workspace, 'integrations'));
  return { integration: toIntegration(record), secret };
};

/**
 * The workspace's integrations, oldest first (ID order), streamed, never their secrets; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 * @throws ValidationError when the cursor is not one of this list.
 */
export const listIntegrations = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<Integration>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `integrations/${workspaceId}`;
  const after = startOf(list, page, collection.integrationsOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readIntegrationsOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toIntegration), page);
};

/** @throws NotFoundError when the workspace or the integration is not the caller's. */
export const getIntegration = async (db: Db, caller: Caller, workspaceId: string, integrationId: string) =>
  toIntegration(await requireIntegration(db, caller, workspaceId, integrationId));

/**
 * Changes the given settings; the status and the secret stay.
 * @throws NotFoundError when the workspace or the integration is not the caller's.
 * @throws ValidationError when the URL is not allowed or nothing would be sent.
 */
export const updateIntegration = async (
  db: Db,
  caller: Caller,
  workspaceId: string,
  integrationId: string,
  change: UpdateIntegrationBody,
  policy: TargetPolicy = DEPLOYMENT_POLICY,
) => {
  const current = await requireIntegration(db, caller, workspaceId, integrationId);
  checkSettings({ ...current, ...change }, policy);
  return toIntegration(await storeUpdate(db, workspaceId, integrationId, change, nowIso()));
};

/**
 * Deletes an integration, freeing its place in the workspace's quota; messages already queued are
 * no longer sent to it. @throws NotFoundError
 */
export const deleteIntegration = async (db: Db, caller: Caller, workspaceId: string, integrationId: string) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  return toIntegration(await removeIntegration(db, workspaceId, integrationId, release(db, workspace, 'integrations')));
};

/**
 * Issues a new signing secret, returned here and never again. POSTs carry signatures with both the
 * new and the previous secret for PREVIOUS_SECRET_GRACE_MS, then with the new one only.
 * @throws NotFoundError when the workspace or the integration is not the caller's.
 */
export const rotateIntegrationSecret = async (db: Db, caller: Caller, workspaceId: string, integrationId: string) => {
  const current = await requireIntegration(db, caller, workspaceId, integrationId);
  const secret = newWebhookSecret();
  const now = Date.now();
  const record = await storeRotation(db, workspaceId, integrationId, {
    secret,
    previous_secret: current.secret,
    previous_secret_expires_at: new Date(now + PREVIOUS_SECRET_GRACE_MS).toISOString(),
    updated_at: new Date(now).toISOString(),
  });
  return { integration: toIntegration(record), secret };
};

/** Whether an integration takes a message: enabled, sends its kind, and (data) its tag passes the filter. */
export const wantsMessage = (integration: IntegrationRecord, message: Pick<RenderedEntry, 'kind' | 'tag'>) =>
  integration.enabled &&
  (message.kind === 'data' ? integration.data && (!integration.tags.length || integration.tags.includes(message.tag ?? '')) : integration.events);

/** HMAC-SHA256, hex, of `${timestamp}.${body}` with a secret: what receivers recompute. */
export const signatureOf = (secret: string, timestamp: number, body: string | Buffer) =>
  createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');

/**
 * The signature headers of a POST body: the Unix time in seconds, and one `v1=<hex>` per secret
 * in use (the current one first, then the previous one during its grace period).
 */
export const signatureHeaders = (integration: IntegrationRecord, body: string | Buffer, now = Date.now()) => {
  const timestamp = Math.floor(now / 1000);
  const previousValid = integration.previous_secret && integration.previous_secret_expires_at && Date.parse(integration.previous_secret_expires_at) > now;
  const secrets = [integration.secret, ...(previousValid ? [integration.previous_secret!] : [])];
  return {
    [TIMESTAMP_HEADER]: String(timestamp),
    [SIGNATURE_HEADER]: secrets.map((secret) => `v1=${signatureOf(secret, timestamp, body)}`).join(','),
  };
};
