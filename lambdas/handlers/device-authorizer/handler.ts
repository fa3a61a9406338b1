import { forwardAndLog } from '../../domain/webhooks/events';
import { authenticateDevice } from '../../domain/registry/identities';
import { requestAuthorizer } from '../../shared/authorizer';
import { registryDb } from '../../shared/clients';

/**
 * API Gateway REQUEST authorizer of the device API: `Authorization: Bearer <device JWT>` → the
 * device, its identity, workspace and account. A bad, expired or revoked token is answered 401.
 */
export const handler = requestAuthorizer({
  header: 'authorization',
  allow: '/*/device/*',
  authenticate: (authorization) => authenticateDevice(registryDb(), forwardAndLog(registryDb()), authorization),
  principalOf: (device) => device.deviceId,
});
