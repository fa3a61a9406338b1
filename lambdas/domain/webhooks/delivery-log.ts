import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { logger } from '../../shared/logger';
import { DELIVERY_LOG_LIMIT_DEFAULT, type Delivery } from '../../schemas/integration';
import { putDeliveries, readDeliveries, type LoggedDelivery } from '../../stores/delivery-log-store';
import type { IntegrationRecord } from '../../stores/integration-store';
import { requireIntegration } from './integrations';

/** How one POST went, as the delivery log keeps it. */
export const loggedDelivery = (
  integration: IntegrationRecord,
  post: { at: string; durationMs: number; batchId: string; kind: 'data' | 'event'; entries: number; test?: boolean },
  // a forwarding.ts PostOutcome (said here again: that module reads this one)
  outcome: { ok: true; status?: number } | { ok: false; error: string; status?: number },
): LoggedDelivery => ({
  workspace_id: integration.workspace_id,
  integration_id: integration.id,
  at: post.at,
  ok: outcome.ok,
  status: outcome.status ?? null,
  error: outcome.ok ? null : outcome.error,
  duration_ms: Math.max(0, Math.round(post.durationMs)),
  entries: post.entries,
  kind: post.kind === 'data' ? 'data' : 'events',
  batch_id: post.batchId,
  test: post.test ?? false,
});

/**
 * Writes POSTs into their integrations' delivery logs (one item per POST, 25 a request). A log
 * that could not be written is logged and lost: the POSTs went out, and the status still says how.
 */
export const writeDeliveryLog = async (db: Db, deliveries: LoggedDelivery[]) => {
  if (!deliveries.length) return;
  try {
    await putDeliveries(db, deliveries);
  } catch (error) {
    logger.warn('could not write the delivery log', { deliveries: deliveries.length, error: error as Error });
  }
};

/**
 * An integration's last deliveries, newest first (`limit`, 20 by default; each kept 7 days).
 * @throws NotFoundError when the workspace or the integration is not the caller's.
 */
export const listDeliveries = async (db: Db, caller: Caller, workspaceId: string, integrationId: string, limit?: number): Promise<Delivery[]> => {
  await requireIntegration(db, caller, workspaceId, integrationId);
  return readDeliveries(db, workspaceId, integrationId, limit ?? DELIVERY_LOG_LIMIT_DEFAULT);
};
