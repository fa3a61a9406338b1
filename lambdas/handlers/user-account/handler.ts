import { ensureUserAccount } from '../../domain/tenancy/users';
import { registryDb } from '../../shared/clients';
import { logger } from '../../shared/logger';

/** The part of a Cognito PostConfirmation / PostAuthentication trigger event this handler reads. */
export interface CognitoUserEvent {
  triggerSource: string;
  userName: string;
  request: { userAttributes: Record<string, string> };
}

/**
 * Cognito trigger of the console's user pool, on PostConfirmation (a user confirms its sign-up) and
 * PostAuthentication (every sign-in): the user's account, its first workspace and that workspace's
 * `default` fleet, created once. Sign-in runs it too because Cognito confirms a user even when its
 * PostConfirmation trigger fails; the next sign-in then makes the account. Returns the event, as a
 * Cognito trigger must; throwing fails the sign-in (Cognito shows the message), never a half account.
 */
export const handler = async (event: CognitoUserEvent): Promise<CognitoUserEvent> => {
  const { sub, email } = event.request.userAttributes;
  if (!sub) throw new Error('The user has no sub attribute.');
  const user = await ensureUserAccount(registryDb(), { sub, email: email ?? event.userName });
  logger.info('user account', { triggerSource: event.triggerSource, sub, accountId: user.account_id });
  return event;
};
