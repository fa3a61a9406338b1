import { AuthError } from './errors';

/** Tokens of a signed-in user, as InitiateAuth answers them, with when the access token ends. */
export interface Session {
  accessToken: string;
  idToken: string;
  refreshToken: string;
  /** Epoch milliseconds at which the access token expires. */
  expiresAt: number;
  email: string;
}

export interface CognitoOptions {
  /** The user pool's JSON API (`https://cognito-idp.<region>.amazonaws.com/`, or cognito-local's address). */
  endpoint: string;
  clientId: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/** The Cognito endpoint of a region, as the console's runtime configuration leaves it out on AWS. */
export const cognitoEndpointOf = (region: string, endpoint?: string) => endpoint ?? `https://cognito-idp.${region}.amazonaws.com/`;

/** Cognito's messages for the failures a person meets, reworded to say what to do. */
const MESSAGES: Record<string, string> = {
  NotAuthorizedException: 'The e-mail address or password is wrong.',
  UserNotFoundException: 'The e-mail address or password is wrong.',
  UserNotConfirmedException: 'Your e-mail address is not confirmed yet: enter the code we sent you.',
  UsernameExistsException: 'An account with this e-mail address exists already: sign in instead.',
  CodeMismatchException: 'The code is wrong: check it and try again, or ask for a new one.',
  ExpiredCodeException: 'The code has expired: ask for a new one.',
  InvalidPasswordException: '',
  LimitExceededException: 'Too many attempts: wait a few minutes and try again.',
  TooManyRequestsException: 'Too many attempts: wait a moment and try again.',
};

/** `__type` comes as `ResourceNotFoundException` or `com.amazonaws…#ResourceNotFoundException`. */
const typeOf = (raw: string | undefined) => (raw ?? 'UnknownError').split('#').pop()!;

/**
 * A client of the user pool's public JSON API (the AWS JSON 1.1 protocol, `X-Amz-Target`), for an
 * app client without a secret: what the console needs to sign users up and in.
 */
export const createCognitoClient = ({ endpoint, clientId, fetch: fetchImpl = globalThis.fetch.bind(globalThis), now = Date.now }: CognitoOptions) => {
  const call = async <T>(action: string, body: Record<string, unknown>): Promise<T> => {
    const response = await fetchImpl(endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': `AWSCognitoIdentityProviderService.${action}` },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const answer = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    if (!response.ok) {
      const type = typeOf((answer.__type as string | undefined) ?? response.headers.get('x-amzn-errortype') ?? undefined);
      const message = (answer.message as string | undefined) ?? (answer.Message as string | undefined) ?? `Sign-in service answered ${response.status}`;
      throw new AuthError(type, MESSAGES[type] || message);
    }
    return answer as T;
  };
  const sessionOf = (
    email: string,
    result: { AccessToken: string; IdToken: string; RefreshToken?: string; ExpiresIn: number },
    refreshToken?: string,
  ): Session => ({
    accessToken: result.AccessToken,
    idToken: result.IdToken,
    refreshToken: result.RefreshToken ?? refreshToken ?? '',
    expiresAt: now() + result.ExpiresIn * 1000,
    email,
  });
  type AuthAnswer = { AuthenticationResult?: { AccessToken: string; IdToken: string; RefreshToken?: string; ExpiresIn: number }; ChallengeName?: string };
  return {
    signUp: (email: string, password: string) =>
      call<{ UserConfirmed: boolean; UserSub: string }>('SignUp', {
        ClientId: clientId,
        Username: email,
        Password: password,
        UserAttributes: [{ Name: 'email', Value: email }],
      }),
    confirmSignUp: (email: string, code: string) => call('ConfirmSignUp', { ClientId: clientId, Username: email, ConfirmationCode: code }),
    resendCode: (email: string) => call('ResendConfirmationCode', { ClientId: clientId, Username: email }),
    signIn: async (email: string, password: string): Promise<Session> => {
      const answer = await call<AuthAnswer>('InitiateAuth', {
        ClientId: clientId,
        AuthFlow: 'USER_PASSWORD_AUTH',
        AuthParameters: { USERNAME: email, PASSWORD: password },
      });
      if (!answer.AuthenticationResult)
        throw new AuthError(answer.ChallengeName ?? 'Challenge', `Sign-in needs a step the console does not support (${answer.ChallengeName}).`);
      return sessionOf(email, answer.AuthenticationResult);
    },
    /** A new access token from the refresh token (the refresh token itself is kept). */
    refresh: async (session: Session): Promise<Session> => {
      const answer = await call<AuthAnswer>('InitiateAuth', {
        ClientId: clientId,
        AuthFlow: 'REFRESH_TOKEN_AUTH',
        AuthParameters: { REFRESH_TOKEN: session.refreshToken },
      });
      if (!answer.AuthenticationResult) throw new AuthError('NotAuthorizedException', 'Your session has ended: sign in again.');
      return sessionOf(session.email, answer.AuthenticationResult, session.refreshToken);
    },
    forgotPassword: (email: string) => call('ForgotPassword', { ClientId: clientId, Username: email }),
    confirmForgotPassword: (email: string, code: string, password: string) =>
      call('ConfirmForgotPassword', { ClientId: clientId, Username: email, ConfirmationCode: code, Password: password }),
    signOut: (session: Session) => call('GlobalSignOut', { AccessToken: session.accessToken }),
  };
};

export type CognitoClient = ReturnType<typeof createCognitoClient>;

/** Refresh this long before the access token ends, so a request never carries an expired one. */
export const REFRESH_MARGIN_MS = 60_000;

/** Whether a session's access token must be refreshed before the next request. */
export const needsRefresh = (session: Session, now = Date.now()) => session.expiresAt - REFRESH_MARGIN_MS <= now;
