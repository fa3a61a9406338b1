import { apiRequestHooks } from '../../domain/limits/api-requests';
import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  rotateIntegrationSecret,
  updateIntegration,
} from '../../domain/webhooks/integrations';
import { listDeliveries } from '../../domain/webhooks/delivery-log';
import { replayDeadLetters } from '../../domain/webhooks/replay';
import { sendTestDelivery } from '../../domain/webhooks/test-delivery';
// The forwarder's own POST: a test goes out exactly as a delivery does (address rules, timeout).
import { webhookPoster } from '../../shared/webhook-client';
import { INTEGRATION_OPERATIONS } from '../../schemas/operations/integrations';
import { registryDb } from '../../shared/clients';
import { FORWARD_DLQ_URL, FORWARD_QUEUE_URL, WEBHOOK_ALLOW_PRIVATE_TARGETS, WEBHOOK_TIMEOUT_MS } from '../../shared/env';
import { callerOf, ok } from '../../shared/http';
import { streamList } from '../../shared/json-stream';
import { httpHandler } from '../../shared/middleware';

// A replay stops receiving after this, so that it answers well within API Gateway's 29 s.
const REPLAY_MS = 15_000;

const post = webhookPoster({ timeoutMs: WEBHOOK_TIMEOUT_MS, allowPrivate: WEBHOOK_ALLOW_PRIVATE_TARGETS });

export const handler = httpHandler(
  'integrations',
  INTEGRATION_OPERATIONS,
  {
    listIntegrations: async ({ path, query }, event) =>
      streamList(event, 'integrations', await listIntegrations(registryDb(), callerOf(event), path.workspaceId, query)),
    createIntegration: async ({ path, body }, event) => ok(200, await createIntegration(registryDb(), callerOf(event), path.workspaceId, body)),
    getIntegration: async ({ path }, event) =>
      ok(200, { integration: await getIntegration(registryDb(), callerOf(event), path.workspaceId, path.integrationId) }),
    updateIntegration: async ({ path, body }, event) =>
      ok(200, { integration: await updateIntegration(registryDb(), callerOf(event), path.workspaceId, path.integrationId, body) }),
    deleteIntegration: async ({ path }, event) =>
      ok(200, { integration: await deleteIntegration(registryDb(), callerOf(event), path.workspaceId, path.integrationId) }),
    rotateIntegrationSecret: async ({ path }, event) =>
      ok(200, await rotateIntegrationSecret(registryDb(), callerOf(event), path.workspaceId, path.integrationId)),
    testIntegration: async ({ path }, event) => ok(200, await sendTestDelivery(registryDb(), callerOf(event), path.workspaceId, path.integrationId, post)),
    listIntegrationDeliveries: async ({ path, query }, event) =>
      ok(200, { deliveries: await listDeliveries(registryDb(), callerOf(event), path.workspaceId, path.integrationId, query.limit) }),
    replayIntegrationDeadLetters: async ({ path }, event) =>
      ok(
        200,
        await replayDeadLetters(registryDb(), callerOf(event), path.workspaceId, path.integrationId, {
          queueUrl: FORWARD_QUEUE_URL,
          dlqUrl: FORWARD_DLQ_URL,
          until: Date.now() + REPLAY_MS,
        }),
      ),
  },
  apiRequestHooks(registryDb()),
);
