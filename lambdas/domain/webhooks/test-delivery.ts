import { randomUUID } from 'node:crypto';
import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import { nowIso } from '../../shared/ids';
import type { ForwardMessage } from '../../schemas/forward';
import type { TestDelivery } from '../../schemas/integration';
import { recordDeliveryOutcome, type IntegrationRecord } from '../../stores/integration-store';
import { loggedDelivery, writeDeliveryLog } from './delivery-log';
import { renderEntry } from './forward-pack';
import { webhookPost, type ForwardingOptions } from './forwarding';
import { requireIntegration, toIntegration } from './integrations';

/** The header that marks a test POST (besides the `test-` batch ID and the entry's payload). */
export const TEST_HEADER = 'x-fleetstream-test';

/** The tag of a test data point and the device and fleet IDs of a test entry: no real device has them. */
export const TEST_TAG = 'fleetstream-test';
export const TEST_DEVICE_ID = 'dev-test';
export const TEST_FLEET_ID = 'flt-test';

/** What `last_error` says when a test failed, so the status tells a test from the forwarder's deliveries. */
export const TEST_ERROR_PREFIX = 'test delivery: ';

/**
 * The one entry of a test batch: a data point when the integration sends data, else an event
 * (`status`, c2d), in the interface's format, with a payload that says it is a test.
 */
const testMessage = (integration: IntegrationRecord, at: string): ForwardMessage => {
  const common = { workspace_id: integration.workspace_id, fleet_id: TEST_FLEET_ID, device_id: TEST_DEVICE_ID };
  const payload = { test: true, message: 'A test delivery from Fleetstream, sent on request; no device sent it.', integration_id: integration.id };
  return integration.data
    ? { kind: 'data', ...common, device_name: 'Fleetstream test delivery', timestamp_device: at, timestamp_in: at, tag: TEST_TAG, payload }
    : { kind: 'event', ...common, ts: at, type: 'status', direction: 'c2d', payload };
};

/**
 * Sends one signed test batch to an integration now, exactly as the forwarder sends a batch (same
 * body envelope, headers, signatures, address rules and timeout: the `post` is the forwarder's),
 * and records the outcome in the integration's status as a delivery would: a success sets
 * `last_delivery_at` and clears the failure count, a failure sets `last_error` (prefixed "test
 * delivery: ") and counts as one. A disabled integration can be tested too (before enabling it).
 * Nothing is queued: a failed test is not retried.
 * @throws NotFoundError when the workspace or the integration is not the caller's (or it is deleted meanwhile).
 */
export const sendTestDelivery = async (db: Db, caller: Caller, workspaceId: string, integrationId: string, post: ForwardingOptions['post']) => {
  const integration = await requireIntegration(db, caller, workspaceId, integrationId);
  const at = nowIso();
  const message = testMessage(integration, at);
  const batchId = `test-${randomUUID()}`;
  const started = performance.now();
  const outcome = await post(webhookPost(integration, message.kind, batchId, [renderEntry(message).json], { [TEST_HEADER]: 'true' }));
  const duration = Math.round(performance.now() - started);
  await writeDeliveryLog(db, [loggedDelivery(integration, { at, durationMs: duration, batchId, kind: message.kind, entries: 1, test: true }, outcome)]);
  const record = await recordDeliveryOutcome(db, workspaceId, integrationId, {
    at: nowIso(),
    delivered: outcome.ok,
    ...(outcome.ok ? {} : { error: `${TEST_ERROR_PREFIX}${outcome.error}` }),
  });
  const delivery: TestDelivery = {
    ok: outcome.ok,
    status: outcome.status ?? null,
    error: outcome.ok ? null : outcome.error,
    duration_ms: duration,
    batch_id: batchId,
    kind: message.kind === 'data' ? 'data' : 'events',
  };
  return { delivery, integration: toIntegration(record) };
};
