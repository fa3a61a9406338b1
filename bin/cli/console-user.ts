/**
 * A console user made by the operator (`create-account --email`): a user of the console's user pool,
 * confirmed, with a permanent password, and linked to an account in the registry before its first
 * sign-in, so that the pool's sign-in trigger (lambdas/handlers/user-account) finds the account and
 * makes none of its own. The same calls work on AWS Cognito and on the local pool (cognito-local),
 * which the SDK reaches through AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER.
 */
import {
  AdminCreateUserCommand,
  AdminGetUserCommand,
  AdminSetUserPasswordCommand,
  CognitoIdentityProviderClient,
} from '@aws-sdk/client-cognito-identity-provider';
import { randomBytes } from 'node:crypto';

/** The user pool a console user is made in. */
export interface UserPool {
  client: CognitoIdentityProviderClient;
  userPoolId: string;
}

/** The user pool of this ID, reached with the SDK's usual chain of settings (region, credentials, endpoint). */
export const userPoolOf = (userPoolId: string): UserPool => ({ client: new CognitoIdentityProviderClient({}), userPoolId });

/**
 * A password shown once: 120 random bits in base64url (20 characters) with a lower-case letter, an
 * upper-case letter and a digit added, so that the pool's policy (12 characters or more, lower and upper
 * case, digits) always accepts it.
 */
export const strongPassword = () => `${randomBytes(15).toString('base64url')}-a7K`;

/** Whether the pool already has a user of this e-mail address (its sign-in name). */
export const userExists = async ({ client, userPoolId }: UserPool, email: string) => {
  try {
    await client.send(new AdminGetUserCommand({ UserPoolId: userPoolId, Username: email }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'UserNotFoundException') return false;
    throw error;
  }
};

/**
 * Creates a user of the pool, its address verified and no message sent (the operator hands the
 * password over), then makes the password permanent (no change asked at the first sign-in).
 * @returns the user's `sub`, its ID for the registry.
 */
export const createPoolUser = async ({ client, userPoolId }: UserPool, email: string, password: string): Promise<string> => {
  const { User } = await client.send(
    new AdminCreateUserCommand({
      UserPoolId: userPoolId,
      Username: email,
      MessageAction: 'SUPPRESS',
      TemporaryPassword: password,
      UserAttributes: [
        { Name: 'email', Value: email },
        { Name: 'email_verified', Value: 'true' },
      ],
    }),
  );
  await client.send(new AdminSetUserPasswordCommand({ UserPoolId: userPoolId, Username: email, Password: password, Permanent: true }));
  const sub =
    User?.Attributes?.find((a) => a.Name === 'sub')?.Value ??
    (await client.send(new AdminGetUserCommand({ UserPoolId: userPoolId, Username: email }))).UserAttributes?.find((a) => a.Name === 'sub')?.Value;
  if (!sub) throw new Error(`the user pool gave no sub for ${email}`);
  return sub;
};
