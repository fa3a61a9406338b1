import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  rotateIntegrationSecret,
  updateIntegration,
} from '../domain/integrations';
import { CreateIntegrationBodySchema, IntegrationPathSchema, UpdateIntegrationBodySchema } from '../schemas/integration';
import { WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, ok, parseBody, parsePath, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';

const listIntegrationsRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  return ok(200, { integrations: await listIntegrations(registryDb(), callerOf(event), workspaceId) });
};

const createIntegrationRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  const body = parseBody(CreateIntegrationBodySchema, event);
  return ok(200, await createIntegration(registryDb(), callerOf(event), workspaceId, body));
};

const getIntegrationRoute = async (event: ApiEvent) => {
  const { workspaceId, integrationId } = parsePath(IntegrationPathSchema, event);
  return ok(200, { integration: await getIntegration(registryDb(), callerOf(event), workspaceId, integrationId) });
};

const updateIntegrationRoute = async (event: ApiEvent) => {
  const { workspaceId, integrationId } = parsePath(IntegrationPathSchema, event);
  const body = parseBody(UpdateIntegrationBodySchema, event);
  return ok(200, { integration: await updateIntegration(registryDb(), callerOf(event), workspaceId, integrationId, body) });
};

const deleteIntegrationRoute = async (event: ApiEvent) => {
  const { workspaceId, integrationId } = parsePath(IntegrationPathSchema, event);
  return ok(200, { integration: await deleteIntegration(registryDb(), callerOf(event), workspaceId, integrationId) });
};

const rotateIntegrationSecretRoute = async (event: ApiEvent) => {
  const { workspaceId, integrationId } = parsePath(IntegrationPathSchema, event);
  return ok(200, await rotateIntegrationSecret(registryDb(), callerOf(event), workspaceId, integrationId));
};

export const handler = httpHandler('integrations', {
  listIntegrations: listIntegrationsRoute,
  createIntegration: createIntegrationRoute,
  getIntegration: getIntegrationRoute,
  updateIntegration: updateIntegrationRoute,
  deleteIntegration: deleteIntegrationRoute,
  rotateIntegrationSecret: rotateIntegrationSecretRoute,
});
