import { cognitoEndpointOf, createCognitoClient, needsRefresh, type Session } from '../../../console/src/lib/cognito';
import { AuthError } from '../../../console/src/lib/errors';
import { createSessionStore } from '../../../console/src/lib/session';

const answers = (list: Array<{ status: number; body: unknown }>) => {
  const calls: { target: string; body: Record<string, unknown>; headers: Record<string, string> }[] = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    const headers = init.headers as Record<string, string>;
    calls.push({ target: headers['X-Amz-Target'], body: JSON.parse(init.body as string), headers });
    const next = list.shift()!;
    return new Response(JSON.stringify(next.body), { status: next.status });
  }) as unknown as typeof globalThis.fetch;
  return { calls, fetch };
};

const tokens = { AccessToken: 'a1', IdToken: 'i1', RefreshToken: 'r1', ExpiresIn: 3600 };

describe('Cognito JSON API client', () => {
  it('defaults to the region’s endpoint', () => {
    expect(cognitoEndpointOf('eu-west-1')).toBe('https://cognito-idp.eu-west-1.amazonaws.com/');
    expect(cognitoEndpointOf('eu-west-1', 'http://127.0.0.1:9229/')).toBe('http://127.0.0.1:9229/');
  });

  it('signs up with the e-mail as user name and attribute, then signs in with USER_PASSWORD_AUTH', async () => {
    const { calls, fetch } = answers([
      { status: 200, body: { UserConfirmed: false, UserSub: 's' } },
      { status: 200, body: { AuthenticationResult: tokens } },
    ]);
    const cognito = createCognitoClient({ endpoint: 'http://c/', clientId: 'client-1', fetch, now: () => 1000 });

    await cognito.signUp('a@example.com', 'pw');
    const session = await cognito.signIn('a@example.com', 'pw');

    expect(calls[0].target).toBe('AWSCognitoIdentityProviderService.SignUp');
    expect(calls[0].headers['Content-Type']).toBe('application/x-amz-json-1.1');
    expect(calls[0].body).toEqual({
      ClientId: 'client-1',
      Username: 'a@example.com',
      Password: 'pw',
      UserAttributes: [{ Name: 'email', Value: 'a@example.com' }],
    });
    expect(calls[1].body).toEqual({ ClientId: 'client-1', AuthFlow: 'USER_PASSWORD_AUTH', AuthParameters: { USERNAME: 'a@example.com', PASSWORD: 'pw' } });
    expect(session).toEqual({ accessToken: 'a1', idToken: 'i1', refreshToken: 'r1', expiresAt: 1000 + 3600_000, email: 'a@example.com' });
  });

  it('keeps the refresh token, which REFRESH_TOKEN_AUTH does not return', async () => {
    const { calls, fetch } = answers([{ status: 200, body: { AuthenticationResult: { AccessToken: 'a2', IdToken: 'i2', ExpiresIn: 60 } } }]);
    const cognito = createCognitoClient({ endpoint: 'http://c/', clientId: 'c', fetch, now: () => 0 });
    const old: Session = { accessToken: 'a1', idToken: 'i1', refreshToken: 'r1', expiresAt: 0, email: 'a@example.com' };

    const fresh = await cognito.refresh(old);

    expect(calls[0].body).toEqual({ ClientId: 'c', AuthFlow: 'REFRESH_TOKEN_AUTH', AuthParameters: { REFRESH_TOKEN: 'r1' } });
    expect(fresh).toMatchObject({ accessToken: 'a2', refreshToken: 'r1', expiresAt: 60_000 });
  });

  it('rewords Cognito’s errors, whatever the form of __type, and keeps a password policy message', async () => {
    const { fetch } = answers([
      { status: 400, body: { __type: 'NotAuthorizedException', message: 'Incorrect username or password.' } },
      { status: 400, body: { __type: 'com.amazonaws.cognito#CodeMismatchException', message: 'x' } },
      { status: 400, body: { __type: 'InvalidPasswordException', message: 'Password must have uppercase characters' } },
    ]);
    const cognito = createCognitoClient({ endpoint: 'http://c/', clientId: 'c', fetch });

    const wrong = await cognito.signIn('a@example.com', 'bad').catch((e: unknown) => e);
    const code = await cognito.confirmSignUp('a@example.com', '1').catch((e: unknown) => e);
    const policy = await cognito.signUp('a@example.com', 'weak').catch((e: unknown) => e);

    expect(wrong).toBeInstanceOf(AuthError);
    expect(wrong).toMatchObject({ type: 'NotAuthorizedException', message: 'The e-mail address or password is wrong.' });
    expect(code).toMatchObject({ type: 'CodeMismatchException', message: expect.stringMatching(/code is wrong/) });
    expect(policy).toMatchObject({ type: 'InvalidPasswordException', message: 'Password must have uppercase characters' });
  });

  it('needs a refresh a minute before the token ends', () => {
    const session = { expiresAt: 100_000 } as Session;
    expect(needsRefresh(session, 39_999)).toBe(false);
    expect(needsRefresh(session, 40_000)).toBe(true);
  });
});

describe('session store', () => {
  const memory = () => {
    const items = new Map<string, string>();
    return {
      getItem: (k: string) => items.get(k) ?? null,
      setItem: (k: string, v: string) => void items.set(k, v),
      removeItem: (k: string) => void items.delete(k),
      items,
    };
  };

  it('refreshes once for concurrent requests when the token is about to end, and saves the new session', async () => {
    const storage = memory();
    storage.setItem('fleetstream.session', JSON.stringify({ accessToken: 'old', idToken: 'i', refreshToken: 'r', expiresAt: 30_000, email: 'e' }));
    let refreshes = 0;
    const cognito = { refresh: async (s: Session) => (refreshes++, { ...s, accessToken: 'new', expiresAt: 999_999 }) } as never;
    const store = createSessionStore(
      cognito,
      storage,
      () => undefined,
      () => 0,
    );

    const headers = await Promise.all([store.headers(), store.headers(), store.headers()]);

    expect(refreshes).toBe(1);
    expect(headers).toEqual(Array(3).fill({ Authorization: 'Bearer new' }));
    expect(JSON.parse(storage.items.get('fleetstream.session')!).accessToken).toBe('new');
  });

  it('drops the session when the refresh is refused, and on sign-out even if GlobalSignOut fails', async () => {
    const storage = memory();
    const seen: unknown[] = [];
    const cognito = {
      refresh: async () => Promise.reject(new AuthError('NotAuthorizedException', 'ended')),
      signOut: async () => Promise.reject(new Error('offline')),
    } as never;
    const store = createSessionStore(
      cognito,
      storage,
      (s) => seen.push(s),
      () => 0,
    );
    store.set({ accessToken: 'a', idToken: 'i', refreshToken: 'r', expiresAt: 1, email: 'e' });

    await expect(store.headers()).rejects.toThrow('ended');
    expect(store.current()).toBeUndefined();
    expect(storage.items.size).toBe(0);

    store.set({ accessToken: 'a', idToken: 'i', refreshToken: 'r', expiresAt: 10 ** 12, email: 'e' });
    await store.signOut();
    expect(store.current()).toBeUndefined();
    expect(seen.at(-1)).toBeUndefined();
  });
});
