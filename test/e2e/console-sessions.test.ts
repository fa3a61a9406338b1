import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalRuntime } from '../../local/runtime';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { codeFor, cognitoClient } from '../helpers/cognito';
import { itOnTheSources, startRuntime } from '../helpers/runtime';

// In e2e-cloud the user pool, its client and triggers are the template's (local/cloud-assembly/cognito.ts),
// the sign-up trigger and the API's authorizer run from their bundles under their roles, and the
// console's config.json is the one its BucketDeployment writes (the console's files come from `dist`).

const PASSWORD = 'Correct-horse-42';
let runtime: LocalRuntime;
let cognito: ReturnType<typeof cognitoClient>;
let dist: string;

/** An API client that sends a session instead of an API key. */
const sessionClient = (accessToken: string): ApiClient => {
  const api = apiClient(runtime.base_url);
  const call: ApiClient['call'] = (method, path, body, headers = {}) => api.call(method, path, body, { authorization: `Bearer ${accessToken}`, ...headers });
  return { call, get: (p) => call('GET', p), post: (p, b) => call('POST', p, b), put: (p, b) => call('PUT', p, b), delete: (p) => call('DELETE', p) };
};

/** Sign up → confirm with the outbox's code → sign in, as the console does. */
const newUser = async (email: string) => {
  expect((await cognito.signUp(email, PASSWORD)).status).toBe(200);
  expect((await cognito.confirmSignUp(email, await codeFor(runtime.console_url!, email))).status).toBe(200);
  const signedIn = await cognito.signIn(email, PASSWORD);
  expect(signedIn.status).toBe(200);
  return signedIn.body.AuthenticationResult;
};

beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), 'console-dist-'));
  runtime = await startRuntime({ consoleDistDir: dist, authorizerCacheTtlSeconds: 0 });
  cognito = cognitoClient(runtime.cognito_endpoint!, runtime.user_pool_client_id!);
});
afterAll(async () => {
  await runtime?.stop();
});

describe('console sessions on the API', () => {
  it('signs up, confirms with the e-mailed code, signs in and finds the first workspace with its default fleet', async () => {
    const session = sessionClient((await newUser('ada@example.com')).AccessToken);

    const workspaces = await session.get('/workspaces');

    expect(workspaces.status).toBe(200);
    expect(workspaces.body.workspaces).toHaveLength(1);
    const [workspace] = workspaces.body.workspaces;
    const fleets = await session.get(`/workspaces/${workspace.id}/fleets`);
    expect(fleets.body.fleets.map((f: { name: string }) => f.name)).toEqual(['default']);
  });

  itOnTheSources('refuses a wrong confirmation code and keeps the user unconfirmed (no account, no sign-in)', async () => {
    expect((await cognito.signUp('bob@example.com', PASSWORD)).status).toBe(200);
    const code = await codeFor(runtime.console_url!, 'bob@example.com');
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');

    const confirmed = await cognito.confirmSignUp('bob@example.com', wrong);

    expect(confirmed.status).toBe(400);
    expect(confirmed.body.__type).toBe('CodeMismatchException');
    expect((await cognito.signIn('bob@example.com', PASSWORD)).body.__type).toBe('UserNotConfirmedException');
  });

  it('refuses a password the pool’s policy refuses and a sign-in flow the console’s client does not allow', async () => {
    const weak = await cognito.signUp('weak@example.com', 'no-upper-case-42');
    const srp = await cognito.call('InitiateAuth', {
      ClientId: runtime.user_pool_client_id,
      AuthFlow: 'USER_SRP_AUTH',
      AuthParameters: { USERNAME: runtime.user_email, SRP_A: 'ab' },
    });

    expect([weak.status, weak.body.__type, weak.body.message]).toEqual([
      400,
      'InvalidPasswordException',
      'Password did not conform with policy: Password must have uppercase characters',
    ]);
    // Nothing was kept of the refused sign-up.
    expect((await cognito.signUp('weak@example.com', PASSWORD)).status).toBe(200);
    expect([srp.status, srp.body.__type, srp.body.message]).toEqual([400, 'InvalidParameterException', 'USER_SRP_AUTH flow not enabled for this client']);
  });

  it('manages fleets, devices, keys and data with a session, under the same account rules as a key', async () => {
    const session = sessionClient((await newUser('grace@example.com')).AccessToken);
    const workspace = (await session.post('/workspaces', { name: 'second' })).body.workspace;
    expect(workspace.name).toBe('second');

    const fleet = await session.post(`/workspaces/${workspace.id}/fleets`, { name: 'north' });
    expect(fleet.status).toBe(200);
    const device = await session.post(`/workspaces/${workspace.id}/devices`, { name: 'd1', fleet_id: fleet.body.fleet.id });
    expect(device.status).toBe(200);
    const key = await session.post(`/workspaces/${workspace.id}/api-keys`, { name: 'made in the console' });
    expect(key.status).toBe(200);
    // The key made with the session works on its own, in the same account.
    const withKey = apiClient(runtime.base_url, key.body.key);
    expect((await withKey.get(`/workspaces/${workspace.id}/devices/${device.body.device.id}`)).status).toBe(200);
    expect((await session.get(`/timeseries/${workspace.id}/data`)).status).toBe(200);

    // A session has no bound workspace: the list is oldest first, the sign-up workspace leading.
    const listed = (await session.get('/workspaces')).body.workspaces.map((w: { name: string }) => w.name);
    expect(listed).toEqual(['default', 'second']);
    // Listed with the key, its bound workspace comes first.
    expect((await withKey.get('/workspaces')).body.workspaces[0].id).toBe(workspace.id);
  });

  itOnTheSources("answers 404 for another user's workspace, device and keys, and 404 for the bootstrap account's", async () => {
    const alice = sessionClient((await newUser('alice@example.com')).AccessToken);
    const mallory = sessionClient((await newUser('mallory@example.com')).AccessToken);
    const aliceWorkspace = (await alice.get('/workspaces')).body.workspaces[0].id;
    const aliceDevice = (await alice.post(`/workspaces/${aliceWorkspace}/devices`, { name: 'private' })).body.device.id;

    expect((await mallory.get(`/workspaces/${aliceWorkspace}`)).status).toBe(404);
    expect((await mallory.get(`/workspaces/${aliceWorkspace}/devices/${aliceDevice}`)).status).toBe(404);
    expect((await mallory.get(`/devices/${aliceDevice}/jobs`)).status).toBe(404);
    expect((await mallory.post(`/workspaces/${aliceWorkspace}/api-keys`, { name: 'steal' })).status).toBe(404);
    expect((await mallory.get(`/timeseries/${aliceWorkspace}/data`)).status).toBe(404);
    expect((await mallory.get(`/workspaces/${runtime.workspace_id}`)).status).toBe(404);
    expect((await mallory.get('/workspaces')).body.workspaces.map((w: { id: string }) => w.id)).not.toContain(aliceWorkspace);
  });

  it('signs the first user of the READY line in to the bootstrap account (the dev API key’s)', async () => {
    const signedIn = await cognito.signIn(runtime.user_email!, runtime.user_password!);
    expect(signedIn.status).toBe(200);
    const session = sessionClient(signedIn.body.AuthenticationResult.AccessToken);

    const workspaces = await session.get('/workspaces');

    expect(workspaces.body.workspaces.map((w: { id: string }) => w.id)).toContain(runtime.workspace_id);
  });

  itOnTheSources('refuses an ID token, a tampered token and a missing credential with 401', async () => {
    const tokens = await newUser('eve@example.com');
    const [header, payload, signature] = tokens.AccessToken.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = [header, Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url'), signature].join('.');

    for (const token of [tokens.IdToken, tampered, 'not-a-jwt']) {
      const answer = await sessionClient(token).get('/workspaces');
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('unauthorized');
    }
    expect((await apiClient(runtime.base_url).get('/workspaces')).status).toBe(401);
  });

  itOnTheSources('after GlobalSignOut, the refresh token stops working; the access token lasts until it expires', async () => {
    const tokens = await newUser('leaving@example.com');
    expect((await cognito.refresh(tokens.RefreshToken)).status).toBe(200);

    expect((await cognito.globalSignOut(tokens.AccessToken)).status).toBe(200);

    expect((await cognito.refresh(tokens.RefreshToken)).body.__type).toBe('NotAuthorizedException');
    // As with Cognito, whose access tokens verified offline (JWKS) hold until `exp` (one hour here):
    // docs/api.md, "Sessions", documents it.
    expect((await sessionClient(tokens.AccessToken).get('/workspaces')).status).toBe(200);
  });
});

/** A GET with the Host header a browser would send for `host` (fetch sets its own). */
const getWithHost = (url: string, host: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });

describe('the console on the runtime’s port', () => {
  it('answers the outbox only to requests naming the console’s own host and port (no DNS rebinding)', async () => {
    expect((await cognito.signUp('rebind@example.com', PASSWORD)).status).toBe(200);
    const outbox = `${runtime.console_url}local/outbox?to=rebind%40example.com`;
    const { port } = new URL(runtime.console_url!);

    const rebound = await getWithHost(outbox, `attacker.example:${port}`);
    const otherPort = await getWithHost(outbox, `127.0.0.1:${Number(port) + 1}`);
    const byName = await getWithHost(outbox, `localhost:${port}`);
    const byAddress = await getWithHost(outbox, `127.0.0.1:${port}`);

    expect([rebound.status, JSON.parse(rebound.body).error.code]).toEqual([403, 'forbidden']);
    expect(rebound.body).not.toMatch(/"code":"\d/);
    expect(otherPort.status).toBe(403);
    expect([byName.status, byAddress.status]).toEqual([200, 200]);
    expect(JSON.parse(byAddress.body).messages).toHaveLength(1);
  });

  it('sends the deployed security headers: a strict CSP whose connect-src is the API, the user pool, the live WebSocket and the local S3, HSTS, nosniff, no framing', async () => {
    const answers = [await fetch(runtime.console_url!), await fetch(`${runtime.console_url}config.json`)];
    const origin = (url: string) => new URL(url).origin;

    for (const answer of answers) {
      const csp = answer.headers.get('content-security-policy')!.split('; ');
      expect(csp).toEqual([
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        `connect-src 'self' ${origin(runtime.base_url)} ${origin(runtime.cognito_endpoint!)} ${origin(runtime.mqtt_ws_url!)} ${origin(runtime.s3_endpoint!)}`,
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
      ]);
      expect(answer.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('x-frame-options')).toBe('DENY');
      expect(answer.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
    }
  });

  itOnTheSources('answers 503 with a clear page while console/dist is not built', async () => {
    const page = await fetch(runtime.console_url!);
    expect(page.status).toBe(503);
    expect(await page.text()).toContain('npm run console:build');
  });

  it('serves config.json per the console contract', async () => {
    const answer = await fetch(`${runtime.console_url}config.json`);
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(answer.headers.get('cache-control')).toBe('no-cache');
    expect(await answer.json()).toEqual({
      apiUrl: runtime.base_url,
      region: expect.any(String),
      userPoolId: runtime.user_pool_id,
      userPoolClientId: runtime.user_pool_client_id,
      cognitoEndpoint: runtime.cognito_endpoint,
      liveUrl: `${runtime.mqtt_ws_url}`,
    });
  });

  it('serves the built console: files with their types and caching, the app for its own routes, 404 for a missing file', async () => {
    mkdirSync(join(dist, 'assets'), { recursive: true });
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>console</title>');
    writeFileSync(join(dist, 'assets', 'app-1a2b3c.js'), 'export {};');
    writeFileSync(join(dist, 'assets', 'app-1a2b3c.css'), 'body{}');

    const index = await fetch(runtime.console_url!);
    expect([index.status, index.headers.get('content-type'), index.headers.get('cache-control')]).toEqual([200, 'text/html; charset=utf-8', 'no-cache']);
    const script = await fetch(`${runtime.console_url}assets/app-1a2b3c.js`);
    expect([script.status, script.headers.get('content-type'), script.headers.get('cache-control')]).toEqual([
      200,
      'text/javascript; charset=utf-8',
      'public, max-age=31536000, immutable',
    ]);
    expect((await fetch(`${runtime.console_url}assets/app-1a2b3c.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const route = await fetch(`${runtime.console_url}workspaces/wks-1/devices`);
    expect([route.status, await route.text()]).toEqual([200, '<!doctype html><title>console</title>']);
    expect((await fetch(`${runtime.console_url}assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${runtime.console_url}..%2f..%2fpackage.json`)).status).toBe(404);
    // The API keeps its own answers under /v3.
    const unknown = await fetch(`${runtime.base_url}/no-such-route`);
    expect([unknown.status, ((await unknown.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found']);
  });
});
