import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { handler } from '../../lambdas/handlers/authorizer/handler';
import { createApiKey } from '../../lambdas/domain/tenancy/api-keys';
import { ensureUserAccount } from '../../lambdas/domain/tenancy/users';
import type { Db } from '../../lambdas/shared/clients';
import { REGISTRY_TABLE } from '../../lambdas/shared/env';
import { readWorkspacesOfAccount } from '../../lambdas/stores/workspace-store';
import { handler as userAccountTrigger } from '../../lambdas/handlers/user-account/handler';
import { until } from '../../local/ports';
import { newAccount } from '../helpers/callers';
import { freshTable } from '../helpers/db';

// A user pool's JWKS served from this process: the authorizer fetches it as it fetches Cognito's.
let db: Db;
let server: Server;
let issuer: string;
let otherIssuer: string;
let poolKey: CryptoKey;
let strangerKey: CryptoKey;
const CLIENT_ID = 'console-client';

beforeAll(async () => {
  db = await freshTable(REGISTRY_TABLE);
  const pool = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('RS256');
  poolKey = pool.privateKey;
  strangerKey = stranger.privateKey;
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pool.publicKey)), kid: 'pool-key', alg: 'RS256', use: 'sig' }] });
  server = createServer((req, res) => {
    // Both "pools" on this server publish the same key: only the issuer tells them apart.
    if (req.url?.endsWith('/.well-known/jwks.json')) res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  issuer = `http://127.0.0.1:${port}/local_pool`;
  otherIssuer = `http://127.0.0.1:${port}/local_other`;
  Object.assign(process.env, { USER_POOL_ISSUER: issuer, USER_POOL_ID: 'local_pool', USER_POOL_CLIENT_ID: CLIENT_ID, AUTHORIZER_CACHE_TTL_SECONDS: '0' });
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const requestWith = (headers: Record<string, string>) =>
  ({
    type: 'REQUEST',
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/GET/workspaces',
    headers,
  }) as unknown as APIGatewayRequestAuthorizerEvent;

/** A token as Cognito issues it: an access token unless the claims say otherwise. */
const token = (claims: JWTPayload, options: { key?: CryptoKey; issuer?: string; expiresIn?: string | number } = {}) =>
  new SignJWT({ token_use: 'access', client_id: CLIENT_ID, scope: 'aws.cognito.signin.user.admin', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'pool-key' })
    .setIssuer(options.issuer ?? issuer)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h')
    .sign(options.key ?? poolKey);

/** A confirmed user with its account, made by the sign-up trigger as Cognito calls it. */
const signedUpUser = async () => {
  const sub = randomUUID();
  await userAccountTrigger({
    triggerSource: 'PostConfirmation_ConfirmSignUp',
    userName: sub,
    request: { userAttributes: { sub, email: `${sub}@example.com` } },
  });
  return sub;
};

describe('API authorizer with a session (Authorization: Bearer <Cognito access token>)', () => {
  it('allows a valid access token as the user’s account, with no bound workspace and no key', async () => {
    const sub = await signedUpUser();
    const user = await ensureUserAccount(db, { sub, email: 'ignored@example.com' });

    const result = await handler(requestWith({ Authorization: `Bearer ${await token({ sub })}` }));

    expect(result.principalId).toBe(user.account_id);
    expect(result.policyDocument.Statement).toEqual([
      { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abcdef/v3/*/*' },
    ]);
    expect(result.context).toEqual({ accountId: user.account_id, userId: sub });
  });

  it.each([
    ['expired', async (sub: string) => token({ sub }, { expiresIn: Math.floor(Date.now() / 1000) - 60 })],
    ['from another pool (issuer)', async (sub: string) => token({ sub }, { issuer: otherIssuer })],
    ['for another app client', async (sub: string) => token({ sub, client_id: 'someone-elses-client' })],
    ['an ID token instead of an access token', async (sub: string) => token({ sub, token_use: 'id', aud: CLIENT_ID })],
    ['signed with another key', async (sub: string) => token({ sub }, { key: strangerKey })],
    [
      'tampered (claims changed after signing)',
      async (sub: string) => {
        const [header, , signature] = (await token({ sub })).split('.');
        return [
          header,
          Buffer.from(JSON.stringify({ sub: randomUUID(), token_use: 'access', client_id: CLIENT_ID, iss: issuer, exp: 9_999_999_999 })).toString('base64url'),
          signature,
        ].join('.');
      },
    ],
    ['not a JWT', async () => 'abc.def'],
  ])('refuses a token %s with API Gateway’s 401', async (_what, make) => {
    const sub = await signedUpUser();

    await expect(handler(requestWith({ authorization: `Bearer ${await make(sub)}` }))).rejects.toThrow(/^Unauthorized$/);
  });

  it('refuses a valid token of a user with no account (its sign-up trigger never ran)', async () => {
    await expect(handler(requestWith({ authorization: `Bearer ${await token({ sub: randomUUID() })}` }))).rejects.toThrow(/^Unauthorized$/);
  });

  it('refuses a request with neither an API key nor a Bearer session, or a non-Bearer Authorization', async () => {
    await expect(handler(requestWith({}))).rejects.toThrow(/^Unauthorized$/);
    await expect(handler(requestWith({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }))).rejects.toThrow(/^Unauthorized$/);
  });

  it('never reuses an accepted answer past the token’s expiry, whatever the cache TTL', async () => {
    const sub = await signedUpUser();
    const bearer = `Bearer ${await token({ sub }, { expiresIn: Math.floor(Date.now() / 1000) + 2 })}`;
    process.env.AUTHORIZER_CACHE_TTL_SECONDS = '300';
    try {
      expect((await handler(requestWith({ authorization: bearer }))).principalId).toMatch(/^acc-/);

      await until(
        () =>
          handler(requestWith({ authorization: bearer })).then(
            () => false,
            () => true,
          ),
        'the expired session refused',
        10_000,
      );
    } finally {
      process.env.AUTHORIZER_CACHE_TTL_SECONDS = '0';
    }
  });

  it('reuses an accepted answer for AUTHORIZER_CACHE_TTL_SECONDS', async () => {
    const sub = await signedUpUser();
    const bearer = `Bearer ${await token({ sub }, { expiresIn: '1h' })}`;
    process.env.AUTHORIZER_CACHE_TTL_SECONDS = '300';
    try {
      const first = await handler(requestWith({ authorization: bearer }));
      // The user's link is gone (as if the table were emptied): a cached answer does not look again.
      await db.doc.send(new (await import('@aws-sdk/lib-dynamodb')).DeleteCommand({ TableName: db.table, Key: { pk: `USER#${sub}`, sk: 'USER' } }));
      expect(await handler(requestWith({ authorization: bearer }))).toEqual(first);
      process.env.AUTHORIZER_CACHE_TTL_SECONDS = '0';
      await expect(handler(requestWith({ authorization: bearer }))).rejects.toThrow(/^Unauthorized$/);
    } finally {
      process.env.AUTHORIZER_CACHE_TTL_SECONDS = '0';
    }
  });
});

describe('API keys in the API authorizer', () => {
  it('never reuses an accepted key past its expires_at, whatever the cache TTL', async () => {
    const { caller, workspace_id } = await newAccount(db);
    const { key } = await createApiKey(db, caller, workspace_id, { name: 'short', expires_at: new Date(Date.now() + 2000).toISOString() });
    process.env.AUTHORIZER_CACHE_TTL_SECONDS = '300';
    try {
      expect((await handler(requestWith({ 'x-api-key': key }))).principalId).toBe(caller.accountId);

      await until(
        () =>
          handler(requestWith({ 'x-api-key': key })).then(
            () => false,
            () => true,
          ),
        'the expired key refused',
        10_000,
      );
    } finally {
      process.env.AUTHORIZER_CACHE_TTL_SECONDS = '0';
    }
  });
});

describe('sign-up trigger (PostConfirmation / PostAuthentication)', () => {
  it('creates one account with one workspace and its default fleet, however often and however concurrently it runs', async () => {
    const sub = randomUUID();
    const event = { triggerSource: 'PostConfirmation_ConfirmSignUp', userName: sub, request: { userAttributes: { sub, email: 'new@example.com' } } };

    const answers = await Promise.all([
      userAccountTrigger(event),
      userAccountTrigger(event),
      userAccountTrigger({ ...event, triggerSource: 'PostAuthentication_Authentication' }),
    ]);

    expect(answers).toEqual([event, event, { ...event, triggerSource: 'PostAuthentication_Authentication' }]);
    const user = await ensureUserAccount(db, { sub, email: 'new@example.com' });
    const workspaces = [];
    for await (const { value } of readWorkspacesOfAccount(db, user.account_id, {})) workspaces.push(value);
    expect(workspaces).toHaveLength(1);
    expect(workspaces[0].default_fleet_id).toMatch(/^flt-/);
  });

  it('refuses an event without a sub and creates nothing', async () => {
    await expect(userAccountTrigger({ triggerSource: 'PostConfirmation_ConfirmSignUp', userName: 'x', request: { userAttributes: {} } })).rejects.toThrow(
      /no sub/,
    );
  });
});
