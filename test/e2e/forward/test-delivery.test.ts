/**
 * "Send a test delivery" (POST /workspaces/{workspaceId}/integrations/{integrationId}/test, an
 * addition to the v3 interface for the console): one signed test batch to a real receiver, sent
 * while the caller waits, answered with what happened, and shown in the integration's status.
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalRuntime } from '../../../local/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { codeFor, cognitoClient } from '../../helpers/cognito';
import { startRuntime } from '../../helpers/runtime';
import { verifySignature, webhookReceivers } from '../../helpers/webhook-receiver';

// Short enough for the hanging receiver's case, long enough that a loaded machine's receivers answer in time.
const TIMEOUT_MS = 3000;

let runtime: LocalRuntime;
let api: ApiClient;
let workspaceId: string;
const receivers = webhookReceivers();

beforeAll(async () => {
  // A console folder, so that the runtime runs its user pool: sessions call the route too.
  runtime = await startRuntime({ webhookTimeoutMs: TIMEOUT_MS, consoleDistDir: mkdtempSync(join(tmpdir(), 'console-dist-')) });
  api = apiClient(runtime.base_url, runtime.api_key);
  workspaceId = (await api.post('/workspaces', { name: 'test-delivery' })).body.workspace.id;
}, 120_000);
afterAll(async () => {
  await receivers.stopAll();
  await runtime?.stop();
});

const receiver = receivers.start;

/** A port on 127.0.0.1 that nothing listens on: taken, then closed. */
const deadPort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

const createHook = async (settings: Record<string, unknown>, client = api, workspace = workspaceId) => {
  const { status, body } = await client.post(`/workspaces/${workspace}/integrations`, settings);
  expect(status).toBe(200);
  return body as { integration: { id: string }; secret: string };
};

/** A new console user, signed up, confirmed and signed in; an API client that sends their session (Bearer access token). */
const sessionOf = async (email: string): Promise<ApiClient> => {
  const password = 'Correct-horse-42';
  const cognito = cognitoClient(runtime.cognito_endpoint!, runtime.user_pool_client_id!);
  expect((await cognito.signUp(email, password)).status).toBe(200);
  expect((await cognito.confirmSignUp(email, await codeFor(runtime.console_url!, email))).status).toBe(200);
  const { AccessToken } = (await cognito.signIn(email, password)).body.AuthenticationResult;
  const anonymous = apiClient(runtime.base_url);
  const call: ApiClient['call'] = (method, path, body, headers = {}) =>
    anonymous.call(method, path, body, { authorization: `Bearer ${AccessToken}`, ...headers });
  return { call, get: (p) => call('GET', p), post: (p, b) => call('POST', p, b), put: (p, b) => call('PUT', p, b), delete: (p) => call('DELETE', p) };
};

const testHook = (integrationId: string, client = api, workspace = workspaceId) => client.post(`/workspaces/${workspace}/integrations/${integrationId}/test`);
const statusOf = async (integrationId: string) => (await api.get(`/workspaces/${workspaceId}/integrations/${integrationId}`)).body.integration.status;

describe('sending a test delivery', () => {
  it('POSTs one signed, clearly marked data batch in the webhook format and answers how it went', async () => {
    const hook = await receiver();
    const { integration, secret } = await createHook({ name: 'ops', url: hook.url, tags: ['temp'] });

    const { status, body } = await testHook(integration.id);

    expect(status).toBe(200);
    expect(body.delivery).toEqual({
      ok: true,
      status: 200,
      error: null,
      duration_ms: expect.any(Number),
      batch_id: expect.stringMatching(/^test-/),
      kind: 'data',
    });
    expect(hook.posts).toHaveLength(1);
    const [post] = hook.posts;
    expect(verifySignature(secret, post.headers, post.raw)).toBe(true);
    expect(post.headers).toMatchObject({
      'content-type': 'application/json',
      'x-fleetstream-test': 'true',
      'x-fleetstream-kind': 'data',
      'x-fleetstream-integration-id': integration.id,
      'x-fleetstream-batch-id': body.delivery.batch_id,
    });
    expect(post.body).toEqual({
      batch_id: body.delivery.batch_id,
      result: [
        {
          id: '0',
          workspace_id: workspaceId,
          fleet_id: 'flt-test',
          device_id: 'dev-test',
          device_name: 'Fleetstream test delivery',
          timestamp_device: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          timestamp_in: expect.any(String),
          tag: 'fleetstream-test',
          payload: { test: true, message: expect.stringContaining('test delivery'), integration_id: integration.id },
        },
      ],
    });
    expect(body.integration).toMatchObject({ id: integration.id, status: { last_delivery_at: expect.any(String), last_error: null, consecutive_failures: 0 } });
    expect(await statusOf(integration.id)).toEqual(body.integration.status);
  });

  it('signs with the new and the previous secret after a rotation, as deliveries are', async () => {
    const hook = await receiver();
    const { integration, secret: previous } = await createHook({ url: hook.url });
    const { secret: current } = (await api.post(`/workspaces/${workspaceId}/integrations/${integration.id}/secret`)).body;

    await testHook(integration.id);

    const [post] = hook.posts;
    expect(String(post.headers['x-fleetstream-signature']).split(',')).toHaveLength(2);
    expect(verifySignature(current, post.headers, post.raw)).toBe(true);
    expect(verifySignature(previous, post.headers, post.raw)).toBe(true);
  });

  it('sends an event to an integration that sends only events, and tests a disabled one too', async () => {
    const hook = await receiver();
    const { integration, secret } = await createHook({ url: hook.url, data: false, enabled: false });

    const { body } = await testHook(integration.id);

    expect(body.delivery).toMatchObject({ ok: true, status: 200, kind: 'events' });
    expect(hook.posts).toHaveLength(1);
    expect(verifySignature(secret, hook.posts[0].headers, hook.posts[0].raw)).toBe(true);
    expect(hook.posts[0].headers['x-fleetstream-kind']).toBe('events');
    expect(hook.posts[0].body.result).toEqual([
      {
        id: '0',
        ts: expect.any(String),
        workspace_id: workspaceId,
        fleet_id: 'flt-test',
        device_id: 'dev-test',
        type: 'status',
        direction: 'c2d',
        payload: expect.objectContaining({ test: true }),
      },
    ]);
    expect(body.integration.enabled).toBe(false);
  });

  it('answers ok:false with the receiver’s status when it answers 500, shows it in the status, and clears it on the next success', async () => {
    const hook = await receiver(() => 500);
    const { integration } = await createHook({ url: hook.url });

    const failed = await testHook(integration.id);

    expect(failed.status).toBe(200);
    expect(failed.body.delivery).toMatchObject({ ok: false, status: 500, error: 'HTTP 500' });
    expect(hook.posts).toHaveLength(1);
    const failing = await statusOf(integration.id);
    expect(failing).toEqual({
      last_delivery_at: null,
      last_error_at: expect.any(String),
      last_error: 'test delivery: HTTP 500',
      consecutive_failures: 1,
      // the first failure of the run: this one
      failing_since: failing.last_error_at,
    });

    hook.behave(() => 204);
    const fixed = await testHook(integration.id);

    expect(fixed.body.delivery).toMatchObject({ ok: true, status: 204, error: null });
    // the last error stays on record (with its time); the failures since the last success are none
    expect(await statusOf(integration.id)).toMatchObject({
      last_delivery_at: expect.any(String),
      last_error: 'test delivery: HTTP 500',
      consecutive_failures: 0,
      failing_since: null,
    });
  });

  it('answers ok:false naming the refused connection when nothing listens on the port', async () => {
    const port = await deadPort();
    const { integration } = await createHook({ url: `http://127.0.0.1:${port}/hook` });

    const { status, body } = await testHook(integration.id);

    expect(status).toBe(200);
    expect(body.delivery).toMatchObject({ ok: false, status: null });
    expect(body.delivery.error).toMatch(new RegExp(`^ECONNREFUSED: .*127\\.0\\.0\\.1:${port}`));
    expect((await statusOf(integration.id)).last_error).toBe(`test delivery: ${body.delivery.error}`);
  });

  it('gives up after the forwarder’s timeout when the receiver never answers', async () => {
    const hook = await receiver(() => 'hang');
    const { integration } = await createHook({ url: hook.url });

    const { body } = await testHook(integration.id);

    expect(hook.posts).toHaveLength(1);
    expect(body.delivery).toMatchObject({ ok: false, status: null, error: `no answer within ${TIMEOUT_MS} ms` });
    expect(body.delivery.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  });

  it('answers 404 for another account’s workspace or integration and sends nothing', async () => {
    const hook = await receiver();
    // Loaded only now: the in-process runtime's handlers read lambdas/shared/env.ts once, after the runtime set it.
    const { registryDb } = await import('../../../lambdas/shared/clients');
    const { newAccount } = await import('../../helpers/callers');
    const other = await newAccount(registryDb(), 'other');
    const theirApi = apiClient(runtime.base_url, other.api_key);
    const theirs = await createHook({ url: hook.url }, theirApi, other.workspace_id);
    const mine = await createHook({ url: hook.url });

    const answers = [
      await testHook(theirs.integration.id, api, other.workspace_id), // their workspace
      await testHook(theirs.integration.id), // their integration under my workspace
      await testHook(mine.integration.id, theirApi, workspaceId), // they ask for mine
      await testHook(mine.integration.id, theirApi, other.workspace_id), // mine under their workspace
    ];

    for (const answer of answers) expect(answer).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(hook.posts).toHaveLength(0);
    expect((await theirApi.get(`/workspaces/${other.workspace_id}/integrations/${theirs.integration.id}`)).body.integration.status.last_error_at).toBeNull();
  });

  it('works with a console session, under the same account rules', async () => {
    const hook = await receiver();
    const ada = await sessionOf('ada@example.com');
    const bob = await sessionOf('bob@example.com');
    const adaWorkspace: string = (await ada.get('/workspaces')).body.workspaces[0].id;
    const { integration, secret } = await createHook({ url: hook.url }, ada, adaWorkspace);

    const byAda = await testHook(integration.id, ada, adaWorkspace);
    const byBob = await testHook(integration.id, bob, adaWorkspace);
    const byKey = await testHook(integration.id, api, adaWorkspace);

    expect(byAda).toMatchObject({ status: 200, body: { delivery: { ok: true, status: 200 } } });
    expect(byBob).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(byKey).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(hook.posts).toHaveLength(1);
    expect(verifySignature(secret, hook.posts[0].headers, hook.posts[0].raw)).toBe(true);
  });

  it('answers 404 for an unknown integration, 400 for what cannot be an ID or a body, and sends nothing', async () => {
    const hook = await receiver();
    const { integration } = await createHook({ url: hook.url });

    const unknown = await testHook('int-123456789');
    const notAnId = await testHook('int%20%24bad');
    const withBody = await api.post(`/workspaces/${workspaceId}/integrations/${integration.id}/test`, { url: 'http://127.0.0.1:1/elsewhere' });

    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(notAnId).toMatchObject({
      status: 400,
      body: { error: { code: 'validation_error', details: [expect.objectContaining({ field: 'path.integrationId' })] } },
    });
    expect(withBody.status).toBe(400);
    expect(hook.posts).toHaveLength(0);
    expect((await statusOf(integration.id)).last_delivery_at).toBeNull();
  });
});
