import type { DeviceCaller } from '../../domain/registry/identities';
import { UnauthorizedError } from '../../shared/errors';
import type { ApiEvent } from '../../shared/http';

/** The device the device authorizer put in the request context. @throws UnauthorizedError when absent. */
export const deviceCallerOf = (event: ApiEvent): DeviceCaller => {
  const { accountId, workspaceId, deviceId, identityId } = (event.requestContext?.authorizer ?? {}) as Partial<DeviceCaller>;
  if (!accountId || !workspaceId || !deviceId || !identityId) throw new UnauthorizedError('A valid device token is required.');
  return { accountId, workspaceId, deviceId, identityId };
};
