/**
 * The user pool's public JSON API as a browser calls it (the console contract): one POST per
 * operation with `X-Amz-Target`, no credentials. Answers `{ status, body }`; a Cognito error is a
 * 400 whose body's `__type` names it.
 */
export const cognitoClient = (endpoint: string, clientId: string) => {
  const call = async <T = any>(operation: string, request: Record<string, unknown>): Promise<{ status: number; body: T }> => {
    const response = await fetch(`${endpoint.replace(/\/$/, '')}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `AWSCognitoIdentityProviderService.${operation}` },
      body: JSON.stringify(request),
    });
    return { status: response.status, body: (await response.json()) as T };
  };
  return {
    call,
    signUp: (email: string, password: string) =>
      call('SignUp', { ClientId: clientId, Username: email, Password: password, UserAttributes: [{ Name: 'email', Value: email }] }),
    confirmSignUp: (email: string, code: string) => call('ConfirmSignUp', { ClientId: clientId, Username: email, ConfirmationCode: code }),
    signIn: (email: string, password: string) =>
      call<{ AuthenticationResult: { AccessToken: string; IdToken: string; RefreshToken: string }; __type?: string }>('InitiateAuth', {
        ClientId: clientId,
        AuthFlow: 'USER_PASSWORD_AUTH',
        AuthParameters: { USERNAME: email, PASSWORD: password },
      }),
    refresh: (refreshToken: string) =>
      call('InitiateAuth', { ClientId: clientId, AuthFlow: 'REFRESH_TOKEN_AUTH', AuthParameters: { REFRESH_TOKEN: refreshToken } }),
    globalSignOut: (accessToken: string) => call('GlobalSignOut', { AccessToken: accessToken }),
  };
};

/**
 * The newest code the local user pool "e-mailed" to an address, from `GET /local/outbox`. The pool
 * writes the message before its SignUp / ForgotPassword answer, so it is there once the call returns.
 */
export const codeFor = async (consoleUrl: string, email: string): Promise<string> => {
  const { messages } = (await (await fetch(`${consoleUrl}local/outbox?to=${encodeURIComponent(email)}`)).json()) as { messages: Array<{ code: string }> };
  if (!messages.length) throw new Error(`no code for ${email} in the outbox`);
  return messages.at(-1)!.code;
};
