import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, ScheduledEvent } from 'aws-lambda';
import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RouteHandler } from '../lambdas/routes';
import { BUCKETS } from '../lambdas/buckets';
import { SCHEDULES } from '../lambdas/schedules';
import { REGISTRY_INDEXES, REGISTRY_TTL_ATTRIBUTE } from '../lambdas/stores/keys';
import { TIMESERIES_TTL_ATTRIBUTE } from '../lambdas/stores/timeseries/keys';
import { REGISTRY_STREAM, STREAM_DLQ_NAME, type StreamDefinition } from '../lambdas/streams';
import { ROUTE_TABLE_IDENTITY, routeTableRoutes, startApiGateway } from './api-gateway';
import { startLocalCognito, type CognitoTrigger, type LocalCognito, type OutboxMessage } from './cognito-local';
import { consoleSite } from './console-site';
import { ensureTable, LOCAL_AWS_ENV, startDynamoDbLocal } from './dynamodb-local';
import { startDynamoDbStreamPoller, streamFilterOf, type StreamHandler } from './dynamodb-stream-poller';
import { invokeToEnd } from './lambda-invoke';
import { brokerTls, startMqttBroker } from './mqtt-broker';
import { holdPort } from './ports';
import { dlqNameOf, QUEUE_CONSUMERS, type QueueName } from '../lambdas/queues';
import { startLocalSqs, type QueueOverrides } from './queues-engine';
import { instrumentAwsSdk } from './request-counter';
import { consoleCorsRules, startLocalS3 } from './s3-engine';
import { startSchedule, type RunningSchedule, type ScheduleStatus } from './scheduler';
import { startSqsPoller, type SqsHandler, type SqsPoller } from './sqs-poller';

export interface LocalRuntimeOptions {
  /** HTTP port of the API; a free one when 0 or absent. */
  port?: number;
  /** Folder that keeps the data between runs; in memory when undefined. */
  dataDir?: string;
  /** The bootstrap API key's secret (FLEETSTREAM_DEV_API_KEY); a random one when absent. */
  devApiKey?: string;
  /** Seconds the authorizer's answer is reused, as API Gateway's cache. */
  authorizerCacheTtlSeconds?: number;
  /** Progress lines ("starting DynamoDB Local…"). */
  log?: (line: string) => void;
  /** Changes to the queues of lambdas/queues.ts, e.g. second-long visibility timeouts and retries in tests. */
  queues?: QueueOverrides;
  /** How long the forwarder waits for a webhook receiver, in milliseconds (WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs?: number;
  /** Batches each queue consumer runs at once (Lambda scales; here it is fixed). */
  consumerConcurrency?: number;
  /** Changes to the registry stream's consumer settings of lambdas/streams.ts, e.g. fewer retries in tests. */
  registryStream?: Partial<Pick<StreamDefinition, 'batchSize' | 'maxBatchingWindowSeconds' | 'parallelizationFactor' | 'retryAttempts'>>;
  /** A failed invocation (or read) of the registry stream's consumer; logged to stderr when absent. */
  onStreamError?: (error: unknown, what: string) => void;
  /** Ports of the embedded MQTT broker, plain and TLS; free ones when 0 or absent. */
  mqttPort?: number;
  mqttTlsPort?: number;
  /** Port of the local user pool's JSON API (cognito-local); a free one when 0 or absent. */
  cognitoPort?: number;
  /** The first console user's e-mail and password (FLEETSTREAM_DEV_USER_EMAIL / _PASSWORD); a random password when absent. */
  firstUser?: { email?: string; password?: string };
  /** The built console served at `/` (default `console/dist` of the project). */
  consoleDistDir?: string;
  /** Each code the user pool "e-mails" (npm start prints them). */
  onMessage?: (message: OutboxMessage) => void;
  /**
   * Seconds between runs of the rollout sweep (SWEEP_INTERVAL_SECONDS for npm start): its
   * rule's rate, one minute (lambdas/schedules.ts), when absent. Tests run it every second.
   */
  sweepIntervalSeconds?: number;
  /** A scheduled run that failed; logged to stderr when absent. */
  onScheduleError?: (error: unknown, rule: string) => void;
  /**
   * How long the ingest remembers a device's place and a workspace's retention, in seconds
   * (DEVICE_PLACE_CACHE_SECONDS, 600 when absent): also how long a retention change waits for
   * its re-stamp. Tests make it a second.
   */
  devicePlaceCacheSeconds?: number;
  /** Port of the local S3 (the presigned URLs name it); a free one when 0 or absent. */
  s3Port?: number;
  /** How long a firmware version's upload URL works, in seconds (FIRMWARE_UPLOAD_URL_TTL_SECONDS; an hour when absent). */
  firmwareUploadUrlTtlSeconds?: number;
  /** The API stage's throttling (a token bucket); STAGE_THROTTLE, the stack's defaults, when absent. */
  stageThrottle?: { rateLimit: number; burstLimit: number };
  /** Seconds a handler counts API requests before writing them to the usage (USAGE_FLUSH_SECONDS; 10 when absent, 0: every request). */
  usageFlushSeconds?: number;
  /** Seconds a container relies on a workspace's limits as read (LIMITS_CACHE_SECONDS; 60 when absent). */
  limitsCacheSeconds?: number;
  /**
   * Longest an export's run reads before it goes on in a new message, in seconds
   * (EXPORT_RUN_SECONDS; until a minute before the Lambda's timeout when absent). Tests make it a
   * second, so that an export spans several runs.
   */
  exportRunSeconds?: number;
}

/** Options of the in-process runtime alone (the cloud-assembly runtime takes its mappings from the template). */
export interface InProcessRuntimeOptions extends LocalRuntimeOptions {
  /**
   * Queues whose consumer starts disabled, as an event source mapping created with `Enabled: false`:
   * their messages wait until `enableEventSource` (e.g. a test that measures a queue's backlog).
   */
  disabledEventSources?: QueueName[];
}

export interface Bootstrap {
  account_id: string;
  workspace_id: string;
  api_key: string;
}

export interface LocalRuntime extends Bootstrap {
  base_url: string;
  storage_url: string;
  /** The local SQS engine (AWS_ENDPOINT_URL_SQS) and its queue URLs, DLQs as `<name>-dlq`. */
  sqs_endpoint: string;
  queue_urls: Record<string, string>;
  /** The local S3 (AWS_ENDPOINT_URL_S3) and its buckets' names, by the stack's names for them (`firmware`). */
  s3_endpoint: string;
  buckets: Record<string, string>;
  /** The embedded MQTT broker: plain and TLS addresses; device credentials name the TLS one. */
  mqtt_url: string;
  mqtts_url: string;
  /**
   * The console (`/` of the API's port, configuration at `/config.json`) and the local user pool:
   * its JSON API, IDs and the first user, who belongs to the bootstrap account. In the
   * cloud-assembly mode, absent when the template has no console (no BucketDeployment of a
   * config.json) or no user pool.
   */
  console_url?: string;
  cognito_endpoint?: string;
  user_pool_id?: string;
  user_pool_client_id?: string;
  user_email?: string;
  user_password?: string;
  /** What each scheduled rule (the rollout sweep) has run so far. */
  schedules: () => ScheduleStatus[];
  stop: () => Promise<void>;
}

export interface InProcessRuntime extends LocalRuntime {
  /** Starts a queue's consumer that `disabledEventSources` held (UpdateEventSourceMapping with `Enabled: true`). */
  enableEventSource: (queue: QueueName) => void;
}

const REGISTRY_TABLE = 'fleetstream-registry';
/** API Gateway's throttling of the stage as the stack deploys it by default (throttleRateLimit, throttleBurstLimit). */
export const STAGE_THROTTLE = { rateLimit: 500, burstLimit: 1000 };
/** The console's build output (console-ui's `npm run console:build`). */
export const CONSOLE_DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'console', 'dist');
const TIMESERIES_TABLE = 'fleetstream-timeseries';

/**
 * The first account, its workspace and API key, in the registry table (`table`, or REGISTRY_TABLE). With a data folder it is remembered in
 * `bootstrap.json` there (the key's secret is kept only as a hash in the table), so that a
 * restart prints the same key.
 */
export const bootstrap = async (dataDir: string | undefined, devApiKey: string | undefined, table?: string): Promise<Bootstrap> => {
  const { createAccount } = await import('../lambdas/domain/tenancy/accounts');
  const { authenticateApiKey } = await import('../lambdas/domain/tenancy/api-keys');
  const { documentClient, registryDb: defaultDb } = await import('../lambdas/shared/clients');
  // A named table (the cloud assembly's) is used as named, whatever REGISTRY_TABLE said when env.ts loaded.
  const db = table ? { doc: documentClient(new DynamoDBClient({})), table } : undefined;
  const registryDb = () => db ?? defaultDb();
  const file = dataDir && join(dataDir, 'bootstrap.json');
  const remembered = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Bootstrap) : undefined;
  const wanted = devApiKey ?? remembered?.api_key;
  if (wanted) {
    const caller = await authenticateApiKey(registryDb(), wanted).catch(() => undefined);
    if (caller) return { account_id: caller.accountId, workspace_id: caller.workspaceId, api_key: wanted };
  }
  const account = await createAccount(registryDb(), { name: 'local', apiKey: devApiKey });
  const result = { account_id: account.account_id, workspace_id: account.workspace_id, api_key: account.api_key };
  if (file) writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`, { mode: 0o600 });
  return result;
};

const DEFAULT_USER_EMAIL = 'admin@fleetstream.local';

/** A password the pool's policy accepts (≥ 12 characters with lower and upper case and digits). */
const randomPassword = () => `Fs-${randomBytes(12).toString('base64url')}-a1A`;

/**
 * The first console user: created (confirmed, with a permanent password) on the first start, found
 * again on the next (its password is remembered beside the pool in the data folder; a given
 * password replaces it), and made a member of the bootstrap account (in the registry table
 * `table`, or REGISTRY_TABLE).
 */
export const ensureFirstUser = async (
  cognito: LocalCognito,
  accountId: string,
  wanted: { email?: string; password?: string },
  dataDir: string | undefined,
  table?: string,
) => {
  const { addUserToAccount } = await import('../lambdas/domain/tenancy/users');
  const { documentClient, registryDb: defaultDb } = await import('../lambdas/shared/clients');
  // A named table (the cloud assembly's) is used as named, whatever REGISTRY_TABLE said when env.ts loaded.
  const registryDb = () => (table ? { doc: documentClient(new DynamoDBClient({})), table } : defaultDb());
  const file = dataDir && join(dataDir, 'first-user.json');
  const remembered = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { email: string; password: string }) : undefined;
  const email = wanted.email ?? remembered?.email ?? DEFAULT_USER_EMAIL;
  const password = wanted.password ?? (remembered?.email === email ? remembered.password : undefined) ?? randomPassword();
  const UserPoolId = cognito.userPoolId;
  type Attributes = { Name: string; Value: string }[];
  let user = await cognito.call<{ Username: string; UserAttributes: Attributes }>('AdminGetUser', { UserPoolId, Username: email }).catch(() => undefined);
  if (!user) {
    await cognito.call('AdminCreateUser', {
      UserPoolId,
      Username: email,
      MessageAction: 'SUPPRESS',
      TemporaryPassword: password,
      UserAttributes: [
        { Name: 'email', Value: email },
        { Name: 'email_verified', Value: 'true' },
      ],
    });
    user = await cognito.call('AdminGetUser', { UserPoolId, Username: email });
  }
  await cognito.call('AdminSetUserPassword', { UserPoolId, Username: email, Password: password, Permanent: true });
  const sub = user!.UserAttributes.find((a) => a.Name === 'sub')!.Value;
  await addUserToAccount(registryDb(), { sub, email }, accountId);
  if (file) writeFileSync(file, `${JSON.stringify({ email, password }, null, 2)}\n`, { mode: 0o600 });
  return { email, password, sub };
};

/**
 * Brings the whole system up on this machine: DynamoDB Local, the registry table, the API
 * Gateway emulator over the same handlers and route table, and a first account.
 */
export const startLocalRuntime = async (options: InProcessRuntimeOptions = {}): Promise<InProcessRuntime> => {
  const log = options.log ?? (() => undefined);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
  };
  // Every AWS request of the runtime and its handlers is counted (local/request-counter.ts): the
  // benchmarks and the data-path test read the counts.
  instrumentAwsSdk();
  try {
    if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
    log(`starting DynamoDB Local (${options.dataDir ? `data in ${options.dataDir}` : 'in memory'})…`);
    const dynamo = await startDynamoDbLocal({ dataDir: options.dataDir && join(options.dataDir, 'dynamodb') });
    stops.push(dynamo.stop);

    // Queues are in memory whatever dataDir says: fauxqs keeps nothing across restarts.
    log('starting the SQS engine (fauxqs)…');
    const sqs = await startLocalSqs({ overrides: options.queues });
    stops.push(sqs.stop);
    const queues = Object.values(sqs.queues);
    const forward = sqs.queues.forward.definition;
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      ...Object.fromEntries(queues.map((q) => [q.definition.urlEnv, q.url])),
      FORWARD_RETRY_BASE_SECONDS: String(forward.retry?.baseSeconds ?? 0),
      FORWARD_RETRY_MAX_SECONDS: String(forward.retry?.maxSeconds ?? 0),
      ...(options.webhookTimeoutMs ? { WEBHOOK_TIMEOUT_MS: String(options.webhookTimeoutMs) } : {}),
      ...(options.usageFlushSeconds !== undefined ? { USAGE_FLUSH_SECONDS: String(options.usageFlushSeconds) } : {}),
      ...(options.limitsCacheSeconds !== undefined ? { LIMITS_CACHE_SECONDS: String(options.limitsCacheSeconds) } : {}),
      // Local receivers listen on 127.0.0.1 over http.
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    });

    // The local S3: fauxqs's, behind a front that checks signatures, expiry and checksums as S3 does.
    log(`starting the local S3 (${options.dataDir ? `objects in ${join(options.dataDir, 's3')}` : 'in memory'})…`);
    const s3 = await startLocalS3({
      engine: sqs.endpoint,
      port: options.s3Port,
      credentials: { [LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID]: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
      dataDir: options.dataDir,
    });
    stops.push(s3.stop);
    // Stopped before the engines, after everything that invokes a handler: the handlers' containers
    // end as Lambda ends them, writing what they kept (lambdas/shared/shutdown.ts).
    // (Imported when used, as the handlers are: lambdas/shared/env.ts reads the variables set above.
    // Nothing kills this process after 500 ms, so the handlers get 5 s, for a loaded machine.)
    stops.push(async () => (await import('../lambdas/shared/shutdown')).shutDown(5_000));

    // The ports are held, not only probed, until their servers listen: a port only probed may
    // meanwhile go to one of this process's outgoing connections (a test run once lost one so).
    const held = {
      api: await holdPort(options.port || 0),
      mqtt: await holdPort(options.mqttPort || 0),
      mqttTls: await holdPort(options.mqttTlsPort || 0),
      dataPlane: await holdPort(),
    };
    for (const h of Object.values(held)) stops.push(h.release); // a failed start lets go of them too
    const port = held.api.port;
    // The handlers find the engines exactly as in the cloud: standard SDK variables.
    // DynamoDB Local serves DynamoDB Streams on the same endpoint.
    Object.assign(process.env, LOCAL_AWS_ENV, {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB_STREAMS: dynamo.endpoint,
      REGISTRY_TABLE,
      TIMESERIES_BACKEND: 'dynamodb',
      TIMESERIES_TABLE,
    });
    // Read once by the handlers (lambdas/shared/env.ts), so set before the first one loads.
    process.env.DEVICE_ENDPOINT_URL = `http://127.0.0.1:${port}/v3/device`;
    if (options.devicePlaceCacheSeconds !== undefined) process.env.DEVICE_PLACE_CACHE_SECONDS = String(options.devicePlaceCacheSeconds);
    // The buckets, their CORS rules naming the console's origin (the API's port, by address or as
    // localhost); presigned URLs name the local S3.
    for (const definition of Object.values(BUCKETS)) {
      await s3.createBucket(definition.name, consoleCorsRules(definition, [`http://127.0.0.1:${port}`, `http://localhost:${port}`]));
      process.env[definition.env] = definition.name;
    }
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      ...(options.firmwareUploadUrlTtlSeconds ? { FIRMWARE_UPLOAD_URL_TTL_SECONDS: String(options.firmwareUploadUrlTtlSeconds) } : {}),
      ...(options.exportRunSeconds ? { EXPORT_RUN_SECONDS: String(options.exportRunSeconds) } : {}),
    });
    // The MQTT door (DESIGN §9): credentials name the broker's TLS port and carry its CA;
    // cloud-to-device publishes reach the broker through the IoT data plane's standard variable.
    const tls = await brokerTls(options.dataDir);
    const [mqttPort, mqttTlsPort, dataPlanePort] = [held.mqtt.port, held.mqttTls.port, held.dataPlane.port];
    Object.assign(process.env, {
      DEVICE_MQTT_URL: `mqtts://127.0.0.1:${mqttTlsPort}`,
      DEVICE_MQTT_CACERT: tls.caCert,
      AWS_ENDPOINT_URL_IOT_DATA_PLANE: `http://127.0.0.1:${dataPlanePort}`,
      MQTT_LIVE_DELIVERY: 'true',
    });
    const client = new DynamoDBClient({});
    // The registry's change stream turns job and FOTA writes into their events (lambdas/streams.ts);
    // its indexes find the sweep's due work and a rollout's devices, and the FOTA of a firmware
    // version (lambdas/stores/keys.ts REGISTRY_INDEXES); its TTL deletes the delivery and rollout
    // count ledgers' entries, rate counters and exports past their expiry, as the stack's table
    // does. A table of an older data folder gets them.
    await ensureTable(client, REGISTRY_TABLE, { stream: true, indexes: REGISTRY_INDEXES, ttl: REGISTRY_TTL_ATTRIBUTE });
    // The time-series table expires points by TTL on the stack's attribute (DynamoDB Local deletes them within seconds).
    await ensureTable(client, TIMESERIES_TABLE, { ttl: TIMESERIES_TTL_ATTRIBUTE });
    client.destroy();

    log('creating the bootstrap account…');
    const account = await bootstrap(options.dataDir, options.devApiKey);

    // The console's user pool (DESIGN §10): cognito-local in this process, with the stack's
    // PostConfirmation/PostAuthentication trigger (lambdas/user-account) called as Cognito calls it.
    log(`starting the user pool (cognito-local, ${options.dataDir ? `data in ${join(options.dataDir, 'cognito')}` : 'in memory'})…`);
    const { handler: userAccountTrigger } = (await import('../lambdas/handlers/user-account/handler')) as unknown as { handler: CognitoTrigger };
    const cognito = await startLocalCognito({
      port: options.cognitoPort ?? 0,
      dataDir: options.dataDir && join(options.dataDir, 'cognito'),
      triggers: { PostConfirmation: userAccountTrigger, PostAuthentication: userAccountTrigger },
      onMessage: options.onMessage,
    });
    stops.push(cognito.stop);
    // Read by the API authorizer at each call (lambdas/shared/env.ts userPoolSettings).
    Object.assign(process.env, { USER_POOL_ID: cognito.userPoolId, USER_POOL_CLIENT_ID: cognito.userPoolClientId, USER_POOL_ISSUER: cognito.issuer });
    const firstUser = await ensureFirstUser(cognito, account.account_id, options.firstUser ?? {}, options.dataDir && join(options.dataDir, 'cognito'));

    // The stream's consumer reads from now on (LATEST), before the API takes its first write.
    const stream = { ...REGISTRY_STREAM, ...options.registryStream };
    const sqsClient = new SQSClient({});
    const { QueueUrl: streamDlqUrl } = await sqsClient.send(
      new CreateQueueCommand({ QueueName: STREAM_DLQ_NAME, Attributes: { MessageRetentionPeriod: String(14 * 24 * 3600) } }),
    );
    sqsClient.destroy();
    const { handler: streamHandler } = (await import(`../lambdas/handlers/${stream.consumer}/handler.ts`)) as { handler: StreamHandler };
    log(`reading the registry table's stream for ${stream.consumer}…`);
    const streamPoller = await startDynamoDbStreamPoller({
      tableName: REGISTRY_TABLE,
      batchSize: stream.batchSize,
      maxBatchingWindowMs: stream.maxBatchingWindowSeconds * 1000,
      parallelizationFactor: stream.parallelizationFactor,
      retryAttempts: stream.retryAttempts,
      bisectBatchOnError: stream.bisectBatchOnError,
      timeoutMs: stream.consumerTimeoutSeconds * 1000,
      functionName: stream.consumer,
      handler: streamHandler,
      filter: streamFilterOf(stream),
      onFailureQueueUrl: streamDlqUrl,
      startingPosition: 'LATEST',
      onError: options.onStreamError,
    });
    stops.push(streamPoller.stop);

    const handlers = new Map<RouteHandler, Promise<{ handler: never }>>();
    const loadHandler = (name: RouteHandler) => {
      if (!handlers.has(name)) handlers.set(name, import(`../lambdas/handlers/${name}/handler.ts`));
      return handlers.get(name)!.then((m) => m.handler);
    };
    const { handler: authorizer } = await import('../lambdas/handlers/authorizer/handler');
    const { handler: deviceAuthorizer } = await import('../lambdas/handlers/device-authorizer/handler');
    log(`starting the API on port ${port}…`);
    const cacheTtlMs = (options.authorizerCacheTtlSeconds ?? 30) * 1000;
    // The API authorizer caches accepted credentials itself (API Gateway's cache is off for it).
    process.env.AUTHORIZER_CACHE_TTL_SECONDS = String(options.authorizerCacheTtlSeconds ?? 30);
    await held.api.release();
    const server: Server = await startApiGateway({
      port,
      // The stage's throttling of a stack deployed with the defaults (lib/stack-config.ts).
      throttle: options.stageThrottle ?? STAGE_THROTTLE,
      routes: routeTableRoutes(),
      loadHandler: (name) => loadHandler(name as RouteHandler),
      authorizers: {
        'api-key': {
          handler: authorizer,
          identityHeaders: [...ROUTE_TABLE_IDENTITY['api-key'].headers],
          missingMessage: ROUTE_TABLE_IDENTITY['api-key'].missing,
          cacheTtlMs: 0,
          functionName: 'authorizer',
        },
        device: {
          handler: deviceAuthorizer,
          identityHeaders: [...ROUTE_TABLE_IDENTITY.device.headers],
          missingMessage: ROUTE_TABLE_IDENTITY.device.missing,
          cacheTtlMs,
          functionName: 'device-authorizer',
        },
      },
      outsideStage: consoleSite({
        distDir: options.consoleDistDir ?? CONSOLE_DIST,
        config: () => ({
          apiUrl: `http://127.0.0.1:${port}/v3`,
          region: LOCAL_AWS_ENV.AWS_REGION,
          userPoolId: cognito.userPoolId,
          userPoolClientId: cognito.userPoolClientId,
          cognitoEndpoint: cognito.endpoint,
        }),
        outbox: () => cognito.outbox,
      }),
    });
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections(); // keep-alive clients would otherwise hold the stop
        }),
    );

    log(`starting the MQTT broker on ports ${mqttPort} and ${mqttTlsPort} (TLS)…`);
    const { handler: mqttAuthorizer } = await import('../lambdas/handlers/mqtt-authorizer/handler');
    const { sendMessages } = await import('../lambdas/stores/queue-store');
    const { recordAuthorizationRefusal } = await import('../lambdas/domain/doors/device-mqtt');
    const { publishForward } = await import('../lambdas/domain/webhooks/events');
    const { registryDb } = await import('../lambdas/shared/clients');
    await Promise.all([held.mqtt.release(), held.mqttTls.release(), held.dataPlane.release()]);
    const mqtt = await startMqttBroker({
      port: mqttPort,
      tlsPort: mqttTlsPort,
      dataPlanePort,
      tls,
      authorizer: mqttAuthorizer,
      sendToQueue: (queue, message) => sendMessages(sqs.queues[queue].url, [message]),
      onSubscribeRefused: (deviceId, topic) => recordAuthorizationRefusal(registryDb(), publishForward, deviceId, 'subscribe', topic),
    });
    stops.push(mqtt.stop);

    const pollers = new Map<QueueName, SqsPoller>();
    for (const [name, consumer] of Object.entries(QUEUE_CONSUMERS)) {
      const queue = sqs.queues[name as QueueName];
      const { handler } = (await import(`../lambdas/handlers/${consumer}/handler.ts`)) as { handler: SqsHandler };
      log(`polling the ${name} queue for ${consumer}…`);
      const poller = startSqsPoller({
        queueUrl: queue.url,
        queueArn: queue.arn,
        batchSize: queue.definition.batchSize,
        maxBatchingWindowMs: queue.definition.maxBatchingWindowSeconds * 1000,
        // Lambda wants visibility ≥ its timeout; a shorter visibility chosen for quick retries
        // (<QUEUE>_QUEUE_VISIBILITY_TIMEOUT_SECONDS) shortens the consumer's timeout too.
        timeoutMs: Math.min(queue.definition.consumerTimeoutSeconds, queue.definition.visibilityTimeoutSeconds || Infinity) * 1000,
        functionName: consumer,
        handler,
        concurrency: options.consumerConcurrency ?? 2,
        enabled: !options.disabledEventSources?.includes(name as QueueName),
      });
      pollers.set(name as QueueName, poller);
      stops.push(poller.stop);
    }

    // The scheduled handlers (lambdas/schedules.ts), as their EventBridge rules run them: the same
    // handler at the same rate, one run at a time.
    const schedules: RunningSchedule[] = [];
    for (const schedule of SCHEDULES) {
      const { handler } = (await import(`../lambdas/handlers/${schedule.handler}/handler.ts`)) as {
        handler: (event: ScheduledEvent, context: Context) => Promise<unknown>;
      };
      const intervalMs =
        (schedule.handler === 'rollout-sweep' && options.sweepIntervalSeconds ? options.sweepIntervalSeconds : schedule.everyMinutes * 60) * 1000;
      log(`running ${schedule.handler} every ${intervalMs / 1000} s…`);
      const running = startSchedule({
        rule: schedule.handler,
        function: schedule.handler,
        intervalMs,
        ruleArn: `arn:aws:events:${LOCAL_AWS_ENV.AWS_REGION}:000000000000:rule/${schedule.handler}`,
        region: LOCAL_AWS_ENV.AWS_REGION,
        account: '000000000000',
        invoke: (event) => invokeToEnd(handler, event, { functionName: schedule.handler, timeoutMs: schedule.timeoutSeconds * 1000 }),
        onError: options.onScheduleError,
      });
      schedules.push(running);
      stops.push(running.stop);
    }

    const base = `http://127.0.0.1:${port}/v3`;
    const queue_urls = {
      ...Object.fromEntries(
        queues.flatMap((q) => [
          [q.definition.name, q.url],
          [dlqNameOf(q.definition.name), q.dlqUrl],
        ]),
      ),
      [STREAM_DLQ_NAME]: streamDlqUrl!,
    };
    return {
      ...account,
      base_url: base,
      storage_url: base,
      sqs_endpoint: sqs.endpoint,
      queue_urls,
      s3_endpoint: s3.endpoint,
      buckets: Object.fromEntries(Object.entries(BUCKETS).map(([name, definition]) => [name, definition.name])),
      mqtt_url: mqtt.url,
      mqtts_url: mqtt.tlsUrl,
      console_url: `http://127.0.0.1:${port}/`,
      cognito_endpoint: cognito.endpoint,
      user_pool_id: cognito.userPoolId,
      user_pool_client_id: cognito.userPoolClientId,
      user_email: firstUser.email,
      user_password: firstUser.password,
      schedules: () => schedules.map((s) => s.status()),
      enableEventSource: (queue) => pollers.get(queue)?.enable(),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
};
