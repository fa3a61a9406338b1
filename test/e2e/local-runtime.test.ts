import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { until } from '../../local/ports';
import { apiClient } from '../helpers/api-client';
import { cognitoClient } from '../helpers/cognito';
import { fleetstreamArgs } from '../helpers/cli';
import { startLocalStack, type LocalStack } from '../helpers/local-stack';
import { startWebhookReceiver } from '../helpers/webhook-receiver';

const run = promisify(execFile);

/** PIDs of processes whose command line mentions `text` (DynamoDB Local runs with -dbPath <data dir>). */
const processesMentioning = (text: string) => {
  try {
    return execFileSync('pgrep', ['-f', text], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
};

/**
 * One `npm start` on defaults (in memory) for the two tests that need nothing else of it: its READY
 * line, then `create-account --email` against it, whose new account, user and workspace no other
 * test reads (and it sends no alarm e-mail). Started on first use, so that either runs alone;
 * stopped after the file.
 */
let plain: Promise<LocalStack> | undefined;
const plainStack = () => (plain ??= startLocalStack());
afterAll(async () => {
  await (await plain?.catch(() => undefined))?.stop();
});

describe('npm start', () => {
  it('uses FLEETSTREAM_DEV_API_KEY, keeps data across restarts, and leaves no Java process behind', async () => {
    const devKey = `fsk_dev_${Date.now()}`;
    const first = await startLocalStack({ FLEETSTREAM_DEV_API_KEY: devKey }, []);
    const created = await apiClient(first.base_url, devKey).post(`/workspaces/${first.workspace_id}/devices`, { name: 'persisted' });
    expect(processesMentioning(first.dataDir).length).toBeGreaterThan(0);

    const exitCode = await first.stop();

    expect(exitCode).toBe(0);
    expect(processesMentioning(first.dataDir)).toEqual([]);

    const second = await startLocalStack({ FLEETSTREAM_DEV_API_KEY: devKey, FLEETSTREAM_DATA_DIR: first.dataDir }, []);
    try {
      const { body } = await apiClient(second.base_url, devKey).get(`/workspaces/${second.workspace_id}/devices/${created.body.device.id}`);

      expect(first.api_key).toBe(devKey);
      expect([second.account_id, second.workspace_id]).toEqual([first.account_id, first.workspace_id]);
      expect(body.device.name).toBe('persisted');
    } finally {
      await second.stop();
    }
  });

  it('prints READY with every field a client needs', async () => {
    const stack = await plainStack();

    expect(stack.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v3$/);
    expect(stack.storage_url).toMatch(/\/v3$/);
    expect(stack.account_id).toMatch(/^acc-/);
    expect(stack.workspace_id).toMatch(/^wks-/);
    expect((await apiClient(stack.base_url, stack.api_key).get('/workspaces')).status).toBe(200);
    // The page where alarm e-mails can be read, and their JSON.
    expect(stack.mail_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect((await fetch(stack.mail_url!)).status).toBe(200);
    expect(await (await fetch(`${stack.mail_url}store`)).json()).toMatchObject({ emails: [] });
  });
});

/** The runtime files in a data folder. */
const runtimeFiles = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.startsWith('runtime'))
    .sort();
const portOf = (stack: LocalStack) => Number(new URL(stack.base_url).port);

describe('several npm start on one data folder', () => {
  it('keeps one runtime file per instance, and create-account --local picks the one named by --port', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-shared-'));
    const [a, b] = await Promise.all([startLocalStack({ FLEETSTREAM_DATA_DIR: dataDir }), startLocalStack({ FLEETSTREAM_DATA_DIR: dataDir })]);
    const createAccount = (...args: string[]) =>
      run(process.execPath, fleetstreamArgs('create-account', ['--name', 'Acme', '--local', '--data-dir', dataDir, ...args]), { env: process.env });
    try {
      const files = runtimeFiles(dataDir);
      const ambiguous = (await createAccount().catch((error: unknown) => error)) as { code: number; stderr: string };
      const { stdout } = await createAccount('--port', String(portOf(b)));
      const account = JSON.parse(stdout) as { api_key: string; base_url: string };

      expect(files).toEqual([`runtime-${portOf(a)}.json`, `runtime-${portOf(b)}.json`].sort());
      expect(ambiguous.code).toBe(2);
      expect(ambiguous.stderr).toContain(`2 local runtimes use ${dataDir}`);
      expect(ambiguous.stderr).toMatch(new RegExp(`${portOf(a)} \\(pid \\d+, in memory\\)`));
      expect(ambiguous.stderr).toMatch(new RegExp(`${portOf(b)} \\(pid \\d+, in memory\\)`));
      expect(account.base_url).toBe(b.base_url);
      // the account is in b's (in-memory) registry, and only there
      expect((await apiClient(b.base_url, account.api_key).get('/workspaces')).status).toBe(200);
      expect((await apiClient(a.base_url, account.api_key).get('/workspaces')).status).toBe(401);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(runtimeFiles(dataDir)).toEqual([]);
  });
});

describe('create-account --email on npm start', () => {
  it('makes the account’s first console user, who signs in to that account with the password printed once; an address taken writes nothing', async () => {
    const stack = await plainStack();
    const ready = stack as LocalStack & { cognito_endpoint: string; user_pool_client_id: string; console_url: string };
    const email = `ops-${Date.now()}@acme.example`;
    const createAccount = (...args: string[]) =>
      run(process.execPath, fleetstreamArgs('create-account', ['--name', 'Acme', '--local', '--data-dir', stack.dataDir, ...args]), { env: process.env });
    const { stdout } = await createAccount('--email', email);
    const account = JSON.parse(stdout) as {
      workspace_id: string;
      account_id: string;
      console_user: { email: string; password: string; user_id: string; console_url: string };
    };
    const { password } = account.console_user;
    const signedIn = await cognitoClient(ready.cognito_endpoint, ready.user_pool_client_id).signIn(email, password);
    const token = signedIn.body.AuthenticationResult?.AccessToken;
    const workspaces = await fetch(`${stack.base_url}/workspaces`, { headers: { authorization: `Bearer ${token}` } });
    const taken = (await createAccount('--name', 'Again', '--email', email).catch((error: unknown) => error)) as {
      code: number;
      stdout: string;
      stderr: string;
    };

    expect(account.console_user).toEqual({ email, password: expect.any(String), user_id: expect.any(String), console_url: ready.console_url });
    // generated: long, and of every kind the pool's policy asks for
    expect(password).toMatch(/^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{20,}$/);
    expect(signedIn.status).toBe(200);
    // the session is the created account's: its workspace, not one the sign-in trigger would have made
    expect(workspaces.status).toBe(200);
    expect(((await workspaces.json()) as { workspaces: Array<{ id: string; account_id: string }> }).workspaces).toEqual([
      expect.objectContaining({ id: account.workspace_id, account_id: account.account_id }),
    ]);
    expect([taken.code, taken.stdout]).toEqual([2, '']);
    expect(taken.stderr).toBe(`create-account: a console user ${email} already exists in the user pool: sign in as that user, or give another --email.\n`);
  });
});

describe('npm start’s retry variables', () => {
  it('refuses to start on a bad value, naming the variable', async () => {
    const failure = await startLocalStack({ FORWARD_QUEUE_MAX_RECEIVE_COUNT: 'many' }).then(
      (stack) => stack.stop().then(() => 'started'),
      (error: Error) => error.message,
    );

    expect(failure).toContain('bad configuration: FORWARD_QUEUE_MAX_RECEIVE_COUNT=many: expected a whole number from 1 to 1000.');
  });

  it('honours FORWARD_RETRY_* and the forward queue’s variables: a dead webhook’s event reaches the DLQ within seconds', async () => {
    const dead = await startWebhookReceiver(() => 503);
    const stack = await startLocalStack({
      FORWARD_RETRY_BASE_SECONDS: '1',
      FORWARD_RETRY_MAX_SECONDS: '1',
      FORWARD_QUEUE_VISIBILITY_TIMEOUT_SECONDS: '5',
      FORWARD_QUEUE_MAX_RECEIVE_COUNT: '2',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    const sqs = new SQSClient({
      endpoint: stack.sqs_endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      useQueueUrlAsEndpoint: false,
    });
    const attributes = async (url: string, names: Array<'VisibilityTimeout' | 'RedrivePolicy' | 'ApproximateNumberOfMessages'>) =>
      (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names }))).Attributes ?? {};
    try {
      const api = apiClient(stack.base_url, stack.api_key);
      await api.post(`/workspaces/${stack.workspace_id}/integrations`, { url: dead.url, data: false });
      const { body } = await api.post(`/workspaces/${stack.workspace_id}/devices`, { name: 'd' });
      await api.post(`/devices/${body.device.id}/jobs/reboot`, { value: {} });

      // With the defaults the first retry alone waits 30 s, and the DLQ takes 10 receives (~75 min).
      await until(
        async () => (await attributes(stack.queue_urls['forward-dlq'], ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages === '1',
        'the job event in the DLQ',
        30_000,
      );
      const forward = await attributes(stack.queue_urls.forward, ['VisibilityTimeout', 'RedrivePolicy']);

      expect(forward.VisibilityTimeout).toBe('5');
      expect(JSON.parse(forward.RedrivePolicy!).maxReceiveCount).toBe(2);
      // one POST per receive: exactly FORWARD_QUEUE_MAX_RECEIVE_COUNT attempts, then the DLQ
      expect(dead.posts.map((p) => p.body.result[0].type)).toEqual(['job', 'job']);

      // replay-dlq --local finds this instance through its runtime file, with no endpoint given
      const replay = await run(process.execPath, fleetstreamArgs('replay-dlq', ['--local', '--data-dir', stack.dataDir, '--queue', 'forward']), {
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
      });
      expect(JSON.parse(replay.stdout)).toEqual(expect.objectContaining({ moved: 1, queue: stack.queue_urls.forward }));
    } finally {
      sqs.destroy();
      await stack.stop();
      await dead.stop();
    }
  });
});

describe('npm start on a machine that lacks something', () => {
  /** `fleetstream start` run to its end, as a user runs it: its exit code and what it printed. */
  const startAndFail = (env: Record<string, string>) =>
    run(process.execPath, fleetstreamArgs('start', ['--in-memory']), {
      env: { ...process.env, PORT: '0', MQTT_PORT: '0', MQTTS_PORT: '0', MQTT_WS_PORT: '0', COGNITO_PORT: '0', SES_PORT: '0', ...env },
    }).then(
      () => ({ code: 0, stderr: 'started' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );

  it('without Java, says in one line what is missing and the command that installs it', async () => {
    const noJava = mkdtempSync(join(tmpdir(), 'fleetstream-path-')); // a PATH with no java on it

    const { code, stderr } = await startAndFail({ PATH: noJava });

    expect(code).toBe(1);
    expect(stderr).toContain('fleetstream: failed to start: DynamoDB Local needs Java 17 or later, and there is no `java` on the PATH');
    expect(stderr).toContain('apt-get install -y openjdk-17-jre-headless');
    expect(stderr).not.toMatch(/ENOENT|\n\s+at /); // no stack trace
  });

  it.each([
    ['MQTT_PORT', 'the MQTT port'],
    ['MQTTS_PORT', 'the MQTT TLS port'],
    ['MQTT_WS_PORT', 'the MQTT over WebSocket port (the console’s live updates)'],
    ['PORT', 'the API port'],
    ['SES_PORT', 'the local SES (alarm e-mails)'],
  ])('names %s when %s is taken by another process', async (variable) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const { code, stderr } = await startAndFail({ [variable]: String(port) });

      expect(code).toBe(1);
      expect(stderr).toContain(`port ${port} is taken (another fleetstream start?): choose another with ${variable}=…`);
      expect(stderr).not.toMatch(/\n\s+at /);
    } finally {
      taken.close();
    }
  });
});
