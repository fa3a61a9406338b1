import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUCKETS } from '../lambdas/buckets';
import { dlqNameOf, QUEUE_CONSUMERS, type QueueName } from '../lambdas/queues';
import type { RouteHandler } from '../lambdas/routes';
import { SCHEDULES } from '../lambdas/schedules';
import { REGISTRY_INDEXES, REGISTRY_TTL_ATTRIBUTE } from '../lambdas/stores/keys';
import { TIMESERIES_TTL_ATTRIBUTE } from '../lambdas/stores/timeseries/keys';
import { REGISTRY_STREAM, STREAM_DLQ_NAME } from '../lambdas/streams';
import { ROUTE_TABLE_IDENTITY, routeTableMethodThrottles, routeTableRoutes, startApiGateway } from './api-gateway';
import { bootstrap, ensureFirstUser } from './bootstrap';
import { type CognitoTrigger, type LocalCognito, startLocalCognito } from './cognito-local';
import { consoleSite } from './console-site';
import { deleteTables, ensureTable, LOCAL_AWS_ENV, startDynamoDbLocal } from './dynamodb-local';
import { retryDynamoDbLocalLockTimeouts } from './dynamodb-lock-retry';
import { signalTableWrites } from './dynamodb-writes';
import { type StreamHandler, startDynamoDbStreamPoller, streamFilterOf } from './dynamodb-stream-poller';
import { invokeToEnd } from './lambda-invoke';
import { brokerTls, startMqttBroker } from './mqtt-broker';
import { holdPort, listeningOn } from './ports';
import { type LocalSqs, startLocalSqs } from './queues-engine';
import { instrumentAwsSdk } from './request-counter';
import type { InProcessRuntime, InProcessRuntimeOptions } from './runtime-types';
import { consoleCorsRules, startLocalS3 } from './s3-engine';
import { LOCAL_ALARM_SENDER, type LocalSes, startLocalSes } from './ses-engine';
import { type RunningSchedule, startSchedule } from './scheduler';
import { type SqsHandler, type SqsPoller, startSqsPoller } from './sqs-poller';

export { bootstrap, ensureFirstUser } from './bootstrap';
export type { Bootstrap, InProcessRuntime, InProcessRuntimeOptions, LocalRuntime, LocalRuntimeOptions } from './runtime-types';

/** The stage's default method throttle, the management API's, as the stack deploys it by default (throttleRateLimit, throttleBurstLimit). */
export const STAGE_THROTTLE = { rateLimit: 500, burstLimit: 1000 };
/** Each device door method's throttle as the stack deploys it by default (deviceThrottleRateLimit, deviceThrottleBurstLimit). */
export const DEVICE_THROTTLE = { rateLimit: 1000, burstLimit: 2000 };
/** The WAF web ACL's per-IP rate as the stack deploys it by default (firewallIpRateLimit, firewallWindowSeconds). */
export const FIREWALL = { limit: 6000, windowSeconds: 60 };
/** The console's build output (console-ui's `npm run console:build`). */
export const CONSOLE_DIST = join(dirname(fileURLToPath(import.meta.url)), '..', 'console', 'dist');

type Log = (line: string) => void;
type Stops = Array<() => Promise<void>>;
type Held = Awaited<ReturnType<typeof holdPort>>;

/** What every phase of a start shares: its options, its progress log, and what to stop, in order. */
interface Start {
  options: InProcessRuntimeOptions;
  log: Log;
  stops: Stops;
}

/** The engines the handlers use, and the broker's TLS (its CA is in the handlers' variables). */
interface Engines {
  sqs: LocalSqs;
  s3Endpoint: string;
  /** The SES v2 emulator that alarm e-mails go to. */
  ses: LocalSes;
  tls: Awaited<ReturnType<typeof brokerTls>>;
}

/** The ports the runtime listens on, held from the start (see `holdPorts`). */
interface Ports {
  api: Held;
  mqtt: Held;
  mqttTls: Held;
  /** The broker's MQTT over WebSocket listener: the console's live updates. */
  mqttWs: Held;
  dataPlane: Held;
}

/** A handler module's export, loaded as Lambda loads a function's: when first needed. */
const importHandler = async <T>(name: string) => ((await import(`../lambdas/handlers/${name}/handler.ts`)) as { handler: T }).handler;

/**
 * Brings the whole system up on this machine: the engines (DynamoDB Local, fauxqs, the local S3),
 * the tables, the first account and console user, the registry stream's consumer, the API Gateway
 * emulator over the route table, the MQTT broker, the queue consumers and the scheduled handlers,
 * each a phase below, in that order. A failed start stops what had started.
 */
export const startLocalRuntime = async (options: InProcessRuntimeOptions = {}): Promise<InProcessRuntime> => {
  const start: Start = { options, log: options.log ?? (() => undefined), stops: [] };
  const stop = async () => {
    for (const fn of start.stops.reverse()) await fn().catch(() => undefined);
  };
  // The handlers run in this process, outside Lambda, where their X-Ray tracer does nothing. In its
  // default (automatic) mode the X-Ray SDK still installs an async hook as it loads, which every
  // promise of the process then pays for, and a fresh module registry (a jest test file) installs
  // another each time. Manual mode installs none.
  process.env.AWS_XRAY_MANUAL_MODE ??= '1';
  // Every AWS request of the runtime and its handlers is counted (local/request-counter.ts): the
  // benchmarks and the data-path test read the counts.
  instrumentAwsSdk();
  retryDynamoDbLocalLockTimeouts();
  // The registry stream's poller reads at once after a write, and seldom when idle.
  signalTableWrites();
  try {
    if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
    const ports = await holdPorts(start);
    const engines = await startEngines(start, ports);
    const { sqs } = engines;
    await createTables(start);
    start.log('creating the bootstrap account…');
    const account = await bootstrap(options.dataDir, options.devApiKey);
    const cognito = await startUserPool(start);
    const firstUser = await ensureFirstUser(cognito, account.account_id, options.firstUser ?? {}, options.dataDir && join(options.dataDir, 'cognito'));
    const streamDlqUrl = await startRegistryStream(start);
    await startGateway(start, ports, cognito);
    const mqtt = await startBroker(start, ports, engines);
    const pollers = await startQueueConsumers(start, sqs);
    const schedules = await startSchedules(start);
    const base = `http://127.0.0.1:${ports.api.port}/v3`;
    return {
      ...account,
      base_url: base,
      storage_url: base,
      sqs_endpoint: sqs.endpoint,
      queue_urls: { ...queueUrlsOf(sqs), [STREAM_DLQ_NAME]: streamDlqUrl },
      s3_endpoint: engines.s3Endpoint,
      ses_endpoint: engines.ses.endpoint,
      mail_url: engines.ses.pageUrl,
      mail: { stop: engines.ses.stop, start: engines.ses.start },
      buckets: Object.fromEntries(Object.entries(BUCKETS).map(([name, definition]) => [name, definition.name])),
      mqtt_url: mqtt.url,
      mqtts_url: mqtt.tlsUrl,
      mqtt_ws_url: mqtt.wsUrl,
      console_url: `http://127.0.0.1:${ports.api.port}/`,
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

/**
 * Holds the ports the runtime will listen on, first of all: a port already taken fails the start
 * at once, naming the variable that moves it. They are held, not only probed, until their servers
 * listen: a port only probed may meanwhile go to one of this process's outgoing connections (a test
 * run once lost one so).
 */
const holdPorts = async ({ options, stops }: Start): Promise<Ports> => {
  const ports: Ports = {
    api: await holdPort(options.port || 0, 'PORT'),
    mqtt: await holdPort(options.mqttPort || 0, 'MQTT_PORT'),
    mqttTls: await holdPort(options.mqttTlsPort || 0, 'MQTTS_PORT'),
    mqttWs: await holdPort(options.mqttWsPort || 0, 'MQTT_WS_PORT'),
    dataPlane: await holdPort(),
  };
  for (const held of Object.values(ports)) stops.push(held.release); // a failed start lets go of them too
  return ports;
};

/**
 * DynamoDB Local (or the one `dynamoDbEndpoint` names), fauxqs and the local S3 with the stack's
 * buckets, and the variables through which the handlers find them, exactly as in the cloud: the
 * standard SDK endpoint variables and the stack's own, the MQTT door's among them. All are set
 * before the first handler loads (lambdas/shared/env.ts reads them once).
 */
const startEngines = async (start: Start, ports: Ports): Promise<Engines> => {
  const apiPort = ports.api.port;
  const { options, log, stops } = start;
  const dynamo = await startDynamoDb(start);
  // Queues are in memory whatever dataDir says: fauxqs keeps nothing across restarts.
  log('starting the SQS engine (fauxqs)…');
  const sqs = await startLocalSqs({ overrides: options.queues });
  stops.push(sqs.stop);
  // The local S3: fauxqs's, behind a front that checks signatures, expiry and checksums as S3 does.
  log(`starting the local S3 (${options.dataDir ? `objects in ${join(options.dataDir, 's3')}` : 'in memory'})…`);
  const s3 = await listeningOn('S3_PORT', options.s3Port, () =>
    startLocalS3({
      engine: sqs.endpoint,
      port: options.s3Port,
      credentials: { [LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID]: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
      dataDir: options.dataDir,
    }),
  );
  stops.push(s3.stop);
  // Alarm e-mails (SES v2 SendEmail) go to aws-ses-v2-local, whose page shows them.
  log('starting the local SES (aws-ses-v2-local)…');
  const ses = await listeningOn('SES_PORT', options.sesPort, () => startLocalSes({ port: options.sesPort }));
  stops.push(ses.stop);
  // Stopped before the engines, after everything that invokes a handler: the handlers' containers
  // end as Lambda ends them, writing what they kept (lambdas/shared/shutdown.ts).
  // (Imported when used, as the handlers are: lambdas/shared/env.ts reads the variables set here.
  // Nothing kills this process after 500 ms, so the handlers get 5 s, for a loaded machine.)
  stops.push(async () => (await import('../lambdas/shared/shutdown')).shutDown(5_000));
  // The buckets, their CORS rules naming the console's origin (the API's port, by address or as
  // localhost); presigned URLs name the local S3.
  for (const definition of Object.values(BUCKETS)) {
    await s3.createBucket(definition.name, consoleCorsRules(definition, [`http://127.0.0.1:${apiPort}`, `http://localhost:${apiPort}`]));
    process.env[definition.env] = definition.name;
  }
  Object.assign(process.env, LOCAL_AWS_ENV, engineVariables(options, { dynamo, sqs, s3Endpoint: s3.endpoint, sesEndpoint: ses.endpoint, apiPort }));
  if (options.devicePlaceCacheSeconds !== undefined) process.env.DEVICE_PLACE_CACHE_SECONDS = String(options.devicePlaceCacheSeconds);
  // The MQTT door (DESIGN §9): credentials name the broker's TLS port and carry its CA;
  // cloud-to-device publishes reach the broker through the IoT data plane's standard variable.
  const tls = await brokerTls(options.dataDir);
  Object.assign(process.env, {
    DEVICE_MQTT_URL: `mqtts://127.0.0.1:${ports.mqttTls.port}`,
    DEVICE_MQTT_CACERT: tls.caCert,
    AWS_ENDPOINT_URL_IOT_DATA_PLANE: `http://127.0.0.1:${ports.dataPlane.port}`,
    MQTT_LIVE_DELIVERY: 'true',
    MQTT_SESSION_CLOSE: 'true',
    CONSOLE_LIVE: 'true',
  });
  return { sqs, s3Endpoint: s3.endpoint, ses, tls };
};

/** The DynamoDB engine the runtime's tables are on, and their names. */
interface Dynamo {
  endpoint: string;
  registryTable: string;
  timeseriesTable: string;
}

/**
 * DynamoDB Local started for this runtime, or the shared one `dynamoDbEndpoint` names: there the
 * tables get names of this runtime's own (`tableNames`, or random ones), and are deleted at its
 * stop, which leaves the engine running.
 */
const startDynamoDb = async ({ options, log, stops }: Start): Promise<Dynamo> => {
  if (options.dynamoDbEndpoint) {
    const suffix = randomBytes(4).toString('hex');
    const { registry = `fleetstream-registry-${suffix}`, timeseries = `fleetstream-timeseries-${suffix}` } = options.tableNames ?? {};
    const shared = { endpoint: options.dynamoDbEndpoint, registryTable: registry, timeseriesTable: timeseries };
    stops.push(() => deleteTables(shared.endpoint, [registry, timeseries]));
    return shared;
  }
  log(`starting DynamoDB Local (${options.dataDir ? `data in ${options.dataDir}` : 'in memory'})…`);
  const dynamo = await startDynamoDbLocal({ dataDir: options.dataDir && join(options.dataDir, 'dynamodb') });
  stops.push(dynamo.stop);
  const { registry = 'fleetstream-registry', timeseries = 'fleetstream-timeseries' } = options.tableNames ?? {};
  return { endpoint: dynamo.endpoint, registryTable: registry, timeseriesTable: timeseries };
};

/**
 * The variables the handlers read once, when the first of them loads (lambdas/shared/env.ts): the
 * engines' endpoints (DynamoDB Local serves DynamoDB Streams on its own), the tables and queues,
 * and the settings the options change.
 */
const engineVariables = (
  options: InProcessRuntimeOptions,
  engines: { dynamo: Dynamo; sqs: LocalSqs; s3Endpoint: string; sesEndpoint: string; apiPort: number },
): Record<string, string> => {
  const forward = engines.sqs.queues.forward.definition;
  const notifications = engines.sqs.queues['alarm-notifications'].definition;
  return {
    AWS_ENDPOINT_URL_DYNAMODB: engines.dynamo.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB_STREAMS: engines.dynamo.endpoint,
    REGISTRY_TABLE: engines.dynamo.registryTable,
    TIMESERIES_BACKEND: 'dynamodb',
    TIMESERIES_TABLE: engines.dynamo.timeseriesTable,
    AWS_ENDPOINT_URL_SQS: engines.sqs.endpoint,
    ...Object.fromEntries(Object.values(engines.sqs.queues).map((q) => [q.definition.urlEnv, q.url])),
    FORWARD_DLQ_URL: engines.sqs.queues.forward.dlqUrl,
    FORWARD_RETRY_BASE_SECONDS: String(forward.retry?.baseSeconds ?? 0),
    FORWARD_RETRY_MAX_SECONDS: String(forward.retry?.maxSeconds ?? 0),
    AWS_ENDPOINT_URL_S3: engines.s3Endpoint,
    AWS_ENDPOINT_URL_SESV2: engines.sesEndpoint,
    ALARM_EMAIL_SENDER: LOCAL_ALARM_SENDER,
    ALARM_NOTIFICATIONS_RETRY_BASE_SECONDS: String(notifications.retry?.baseSeconds ?? 0),
    ALARM_NOTIFICATIONS_RETRY_MAX_SECONDS: String(notifications.retry?.maxSeconds ?? 0),
    ALARM_NOTIFICATIONS_MAX_RECEIVE_COUNT: String(notifications.maxReceiveCount),
    DEVICE_ENDPOINT_URL: `http://127.0.0.1:${engines.apiPort}/v3/device`,
    // Local receivers listen on 127.0.0.1 over http.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    ...(options.webhookTimeoutMs ? { WEBHOOK_TIMEOUT_MS: String(options.webhookTimeoutMs) } : {}),
    ...(options.usageFlushSeconds !== undefined ? { USAGE_FLUSH_SECONDS: String(options.usageFlushSeconds) } : {}),
    ...(options.limitsCacheSeconds !== undefined ? { LIMITS_CACHE_SECONDS: String(options.limitsCacheSeconds) } : {}),
    ...(options.firmwareUploadUrlTtlSeconds ? { FIRMWARE_UPLOAD_URL_TTL_SECONDS: String(options.firmwareUploadUrlTtlSeconds) } : {}),
    ...(options.exportRunSeconds ? { EXPORT_RUN_SECONDS: String(options.exportRunSeconds) } : {}),
  };
};

/**
 * The registry table and the time-series table, as the stack declares them. The registry's change
 * stream turns job and FOTA writes into their events (lambdas/streams.ts); its indexes find the
 * sweep's due work and a rollout's devices, and the FOTA of a firmware version
 * (lambdas/stores/keys.ts REGISTRY_INDEXES); its TTL deletes the delivery and rollout count ledgers'
 * entries, rate counters and exports past their expiry, as the stack's table does. A table of an
 * older data folder gets them. The time-series table expires points by TTL on the stack's attribute
 * (DynamoDB Local deletes them within seconds).
 */
const createTables = async ({ log }: Start) => {
  log('creating the tables…');
  const client = new DynamoDBClient({});
  await ensureTable(client, process.env.REGISTRY_TABLE!, { stream: true, indexes: REGISTRY_INDEXES, ttl: REGISTRY_TTL_ATTRIBUTE });
  await ensureTable(client, process.env.TIMESERIES_TABLE!, { ttl: TIMESERIES_TTL_ATTRIBUTE });
  client.destroy();
};

/**
 * The console's user pool (DESIGN §10): cognito-local in this process, with the stack's
 * PostConfirmation/PostAuthentication trigger (lambdas/handlers/user-account) called as Cognito
 * calls it. The API authorizer reads the pool's settings at each call (lambdas/shared/env.ts
 * userPoolSettings).
 */
const startUserPool = async ({ options, log, stops }: Start): Promise<LocalCognito> => {
  log(`starting the user pool (cognito-local, ${options.dataDir ? `data in ${join(options.dataDir, 'cognito')}` : 'in memory'})…`);
  const trigger = await importHandler<CognitoTrigger>('user-account');
  const cognito = await listeningOn('COGNITO_PORT', options.cognitoPort, () =>
    startLocalCognito({
      port: options.cognitoPort ?? 0,
      dataDir: options.dataDir && join(options.dataDir, 'cognito'),
      triggers: { PostConfirmation: trigger, PostAuthentication: trigger },
      onMessage: options.onMessage,
    }),
  );
  stops.push(cognito.stop);
  Object.assign(process.env, { USER_POOL_ID: cognito.userPoolId, USER_POOL_CLIENT_ID: cognito.userPoolClientId, USER_POOL_ISSUER: cognito.issuer });
  return cognito;
};

/**
 * The registry stream's consumer, reading from now on (LATEST), before the API takes its first
 * write; what it fails goes to its on-failure queue, whose URL this answers.
 */
const startRegistryStream = async ({ options, log, stops }: Start): Promise<string> => {
  const stream = { ...REGISTRY_STREAM, ...options.registryStream };
  const sqsClient = new SQSClient({});
  const { QueueUrl: onFailureQueueUrl } = await sqsClient.send(
    new CreateQueueCommand({ QueueName: STREAM_DLQ_NAME, Attributes: { MessageRetentionPeriod: String(14 * 24 * 3600) } }),
  );
  sqsClient.destroy();
  log(`reading the registry table's stream for ${stream.consumer}…`);
  const poller = await startDynamoDbStreamPoller({
    tableName: process.env.REGISTRY_TABLE!,
    batchSize: stream.batchSize,
    maxBatchingWindowMs: stream.maxBatchingWindowSeconds * 1000,
    parallelizationFactor: stream.parallelizationFactor,
    retryAttempts: stream.retryAttempts,
    bisectBatchOnError: stream.bisectBatchOnError,
    timeoutMs: stream.consumerTimeoutSeconds * 1000,
    functionName: stream.consumer,
    handler: await importHandler<StreamHandler>(stream.consumer),
    filter: streamFilterOf(stream),
    onFailureQueueUrl,
    startingPosition: 'LATEST',
    onError: options.onStreamError,
  });
  stops.push(poller.stop);
  return onFailureQueueUrl!;
};

/**
 * The API Gateway emulator on the held API port: the route table's routes, each handler loaded on
 * its first request, the two authorizers, the firewall's per-IP rate and the method throttles
 * (the device door's apart from the management API's), and the console's files and `config.json`
 * outside the stage.
 */
const startGateway = async ({ options, log, stops }: Start, { api, mqttWs }: Ports, cognito: LocalCognito) => {
  const handlers = new Map<RouteHandler, Promise<never>>();
  const loadHandler = (name: RouteHandler) => {
    if (!handlers.has(name)) handlers.set(name, importHandler<never>(name));
    return handlers.get(name)!;
  };
  const port = api.port;
  log(`starting the API on port ${port}…`);
  const cacheTtlSeconds = options.authorizerCacheTtlSeconds ?? 30;
  // The API authorizer caches accepted credentials itself (API Gateway's cache is off for it).
  process.env.AUTHORIZER_CACHE_TTL_SECONDS = String(cacheTtlSeconds);
  const identity = (kind: keyof typeof ROUTE_TABLE_IDENTITY) => ({
    identityHeaders: [...ROUTE_TABLE_IDENTITY[kind].headers],
    missingMessage: ROUTE_TABLE_IDENTITY[kind].missing,
  });
  const authorizers = {
    'api-key': { handler: await importHandler<never>('authorizer'), ...identity('api-key'), cacheTtlMs: 0, functionName: 'authorizer' },
    device: {
      handler: await importHandler<never>('device-authorizer'),
      ...identity('device'),
      cacheTtlMs: cacheTtlSeconds * 1000,
      functionName: 'device-authorizer',
    },
  };
  await api.release();
  const server: Server = await startApiGateway({
    port,
    // The firewall and throttles of a stack deployed with the defaults (lib/stack-config.ts).
    firewall: options.firewall ?? FIREWALL,
    throttle: options.stageThrottle ?? STAGE_THROTTLE,
    methodThrottles: routeTableMethodThrottles(options.deviceThrottle ?? DEVICE_THROTTLE),
    routes: routeTableRoutes(),
    loadHandler: (name) => loadHandler(name as RouteHandler),
    authorizers,
    outsideStage: consoleSite({
      distDir: options.consoleDistDir ?? CONSOLE_DIST,
      config: () => ({
        apiUrl: `http://127.0.0.1:${port}/v3`,
        region: LOCAL_AWS_ENV.AWS_REGION,
        userPoolId: cognito.userPoolId,
        userPoolClientId: cognito.userPoolClientId,
        cognitoEndpoint: cognito.endpoint,
        liveUrl: `ws://127.0.0.1:${mqttWs.port}/mqtt`,
      }),
      outbox: () => cognito.outbox,
      // The firmware page's presigned uploads go to the local S3 (the deployed policy names the bucket).
      uploadOrigins: () => (process.env.AWS_ENDPOINT_URL_S3 ? [process.env.AWS_ENDPOINT_URL_S3] : []),
    }),
  });
  stops.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // keep-alive clients would otherwise hold the stop
      }),
  );
};

/**
 * The MQTT door's broker on the held ports, with the TLS its credentials name: it asks the MQTT
 * authorizer, and its topic rules send to the queues.
 */
const startBroker = async ({ log, stops }: Start, ports: Ports, { sqs, tls }: Engines) => {
  const [port, tlsPort, dataPlanePort, wsPort] = [ports.mqtt.port, ports.mqttTls.port, ports.dataPlane.port, ports.mqttWs.port];
  log(`starting the MQTT broker on ports ${port}, ${tlsPort} (TLS) and ${wsPort} (WebSocket, the console's live updates)…`);
  const { sendMessages } = await import('../lambdas/stores/queue-store');
  const { recordAuthorizationRefusal } = await import('../lambdas/domain/doors/device-mqtt');
  const { forwardAndLog } = await import('../lambdas/domain/webhooks/events');
  const { registryDb } = await import('../lambdas/shared/clients');
  const authorizer = await importHandler<never>('mqtt-authorizer');
  const consoleAuthorizer = await importHandler<never>('console-authorizer');
  await Promise.all([ports.mqtt.release(), ports.mqttTls.release(), ports.dataPlane.release(), ports.mqttWs.release()]);
  const mqtt = await startMqttBroker({
    port,
    tlsPort,
    dataPlanePort,
    wsPort,
    tls,
    authorizer,
    consoleAuthorizer,
    sendToQueue: (queue, message) => sendMessages(sqs.queues[queue].url, [message]),
    onSubscribeRefused: (deviceId, topic) => recordAuthorizationRefusal(registryDb(), forwardAndLog(registryDb()), deviceId, 'subscribe', topic),
  });
  stops.push(mqtt.stop);
  return mqtt;
};

/** Each queue's consumer, fed by the poller as Lambda's event source mapping feeds it (lambdas/queues.ts). */
const startQueueConsumers = async ({ options, log, stops }: Start, sqs: LocalSqs) => {
  const pollers = new Map<QueueName, SqsPoller>();
  for (const [name, consumer] of Object.entries(QUEUE_CONSUMERS) as Array<[QueueName, string]>) {
    const queue = sqs.queues[name];
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
      handler: await importHandler<SqsHandler>(consumer),
      concurrency: options.consumerConcurrency ?? 2,
      enabled: !options.disabledEventSources?.includes(name),
    });
    pollers.set(name, poller);
    stops.push(poller.stop);
  }
  return pollers;
};

/**
 * The scheduled handlers (lambdas/schedules.ts), as their EventBridge rules run them: the same
 * handler at the same rate, one run at a time (the rollout sweep every `sweepIntervalSeconds` when set).
 */
const startSchedules = async ({ options, log, stops }: Start) => {
  const schedules: RunningSchedule[] = [];
  for (const schedule of SCHEDULES) {
    const handler = await importHandler<(event: ScheduledEvent, context: Context) => Promise<unknown>>(schedule.handler);
    const seconds = schedule.handler === 'rollout-sweep' && options.sweepIntervalSeconds ? options.sweepIntervalSeconds : schedule.everyMinutes * 60;
    log(`running ${schedule.handler} every ${seconds} s…`);
    const running = startSchedule({
      rule: schedule.handler,
      function: schedule.handler,
      intervalMs: seconds * 1000,
      ruleArn: `arn:aws:events:${LOCAL_AWS_ENV.AWS_REGION}:000000000000:rule/${schedule.handler}`,
      region: LOCAL_AWS_ENV.AWS_REGION,
      account: '000000000000',
      clockAheadMs: schedule.handler === 'rollout-sweep' ? (options.sweepClockAheadSeconds ?? 0) * 1000 : 0,
      invoke: (event) => invokeToEnd(handler, event, { functionName: schedule.handler, timeoutMs: schedule.timeoutSeconds * 1000 }),
      onError: options.onScheduleError,
    });
    schedules.push(running);
    stops.push(running.stop);
  }
  return schedules;
};

/** Every queue's URL by its name, and its DLQ's as `<name>-dlq`. */
const queueUrlsOf = (sqs: LocalSqs): Record<string, string> =>
  Object.fromEntries(
    Object.values(sqs.queues).flatMap((q) => [
      [q.definition.name, q.url],
      [dlqNameOf(q.definition.name), q.dlqUrl],
    ]),
  );
