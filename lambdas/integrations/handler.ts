import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  rotateIntegrationSecret,
  updateIntegration,
} from '../domain/integrations';
import { INTEGRATION_OPERATIONS } from '../schemas/operations/integrations';
import { registryDb } from '../shared/clients';
import { callerOf, ok } from '../shared/http';
import { streamList } from '../shared/json-stream';
import { httpHandler } from '../shared/middleware';

export const handler = httpHandler('integrations', INTEGRATION_OPERATIONS, {
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
});
