import {
  CreateIntegrationBodySchema,
  DeliveryLogQuerySchema,
  DeliveryLogResponseSchema,
  IntegrationListResponseSchema,
  IntegrationPathSchema,
  IntegrationResponseSchema,
  IntegrationWithSecretResponseSchema,
  ReplayResponseSchema,
  TestDeliveryResponseSchema,
  UpdateIntegrationBodySchema,
} from '../integration';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { WorkspacePathSchema } from '../workspace';

/** The `integrations` handler's operations. */
export const INTEGRATION_OPERATIONS = {
  listIntegrations: { path: WorkspacePathSchema, query: PageQuerySchema, response: IntegrationListResponseSchema },
  createIntegration: {
    path: WorkspacePathSchema,
    body: CreateIntegrationBodySchema,
    response: IntegrationWithSecretResponseSchema,
    quota: 'The workspace holds its limit of integrations (limits.integrations)',
  },
  getIntegration: { path: IntegrationPathSchema, response: IntegrationResponseSchema },
  updateIntegration: { path: IntegrationPathSchema, body: UpdateIntegrationBodySchema, response: IntegrationResponseSchema },
  deleteIntegration: { path: IntegrationPathSchema, response: IntegrationResponseSchema },
  rotateIntegrationSecret: { path: IntegrationPathSchema, response: IntegrationWithSecretResponseSchema },
  // 200 whatever the receiver did: the test ran, and `delivery` says how it went.
  testIntegration: { path: IntegrationPathSchema, response: TestDeliveryResponseSchema },
  listIntegrationDeliveries: { path: IntegrationPathSchema, query: DeliveryLogQuerySchema, response: DeliveryLogResponseSchema },
  replayIntegrationDeadLetters: {
    path: IntegrationPathSchema,
    response: ReplayResponseSchema,
    conflict: 'The webhook is disabled: enable it before replaying what it missed',
  },
} satisfies Operations;
