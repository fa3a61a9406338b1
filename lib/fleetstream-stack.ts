import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { BUCKETS, type BucketName } from '../lambdas/buckets';
import { ROUTE_HANDLER_TIMEOUT_SECONDS, ROUTE_HANDLERS, ROUTES, routesOf, type RouteHandler } from '../lambdas/routes';
import { SCHEDULES, type ScheduledHandler } from '../lambdas/schedules';
import { REGISTRY_FIRMWARE_USE_INDEX, REGISTRY_SWEEP_INDEX } from '../lambdas/stores/keys';
import { REGISTRY_STREAM, type StreamConsumer } from '../lambdas/streams';
import { QUEUE_CONSUMERS, QUEUE_PRODUCERS, QUEUE_REPLAYERS, QUEUES, type QueueName } from '../lambdas/queues';
import { API_STAGE, Api, IDENTITY_HEADERS, type AuthorizedBy } from './constructs/api';
import { Buckets } from './constructs/buckets';
import type { ISource } from 'aws-cdk-lib/aws-s3-deployment';
import { ConsoleSite } from './constructs/console-site';
import { ConsoleUsers } from './constructs/console-users';
import { DeviceMqtt } from './constructs/device-mqtt';
import { ConsoleLive } from './constructs/console-live';
import { grantAlarmEmail } from './constructs/alarm-email';
import { HandlerFunction, type TableAccess } from './constructs/handler-function';
import { OperatorMetrics } from './constructs/operator-metrics';
import { Queues } from './constructs/queues';
import { RegistryStream } from './constructs/registry-stream';
import { RegistryTable } from './constructs/registry-table';
import { ScheduledRun } from './constructs/scheduled-run';
import { TimeseriesStore } from './constructs/timeseries-store';
import { pascalCase } from './names';
import type { FleetstreamConfig } from './stack-config';

/** The variable the handlers read the registry table's name from (`lambdas/shared/env.ts`). */
export const REGISTRY_TABLE_ENV = 'REGISTRY_TABLE';

/** The variable the handlers read every workspace's default limits from (`lambdas/shared/env.ts`). */
export const LIMIT_DEFAULTS_ENV = 'WORKSPACE_LIMIT_DEFAULTS';

// The handlers that apply workspaces' limits: every API route (quotas, the rate per key, the HTTPS
// devices' daily quotas), the ingest Lambda (MQTT devices' daily points) and the MQTT door's
// consumer (their daily events and other messages).
const APPLIES_LIMITS = (source: string) =>
  !WITHOUT_REGISTRY.has(source) && (ROUTE_HANDLERS.includes(source as RouteHandler) || source === 'ingest' || source === 'device-mqtt');

// A buffered answer must come within API Gateway's 29 s integration timeout; a streamed one may
// run for minutes (REST streaming lifts that limit), so its Lambda gets room for large queries.
const BUFFERED_TIMEOUT = Duration.seconds(ROUTE_HANDLER_TIMEOUT_SECONDS.buffered);
const STREAMED_TIMEOUT = Duration.seconds(ROUTE_HANDLER_TIMEOUT_SECONDS.streamed);

// Handlers that never touch the registry: the OpenAPI document is bundled into its code.
const WITHOUT_REGISTRY: ReadonlySet<string> = new Set(['openapi']);

// What the handlers that neither create nor list registry items may do there (found by use: the
// cloud-assembly run of the e2e suite saw no other registry action of theirs): the storage API checks
// that the workspace is the caller's and that the fleets a filter names are the workspace's (one
// BatchGetItem), counts the request against its key's rate and in the workspace's usage, and writes,
// reads and lists exports; the ingest Lambda looks up the devices of MQTT data publishes and the
// workspaces' retention, reads the windows of its batch's devices' closed sessions (one BatchGetItem
// of their locators), counts their daily points on their locators and adds each batch to the
// workspaces' usage, and evaluates the threshold alarm rules (queries a workspace's rules, reads
// alarm guards and timers in batches, puts and deletes a timer, opens and closes alarms in
// transactions: no batch writes); the limits and usage routes read a workspace, query its usage days and count
// their own requests; the retention re-stamp reads its workspace and clears what it owes, by key; an
// export's run reads its workspace and updates its export, and an export with names reads the names
// of its devices and fleets in batches (BatchGetItem). The groups' routes read as the device list
// does and write one group at a time, with its quota's count: no batch writes. The device state's
// routes read the workspace and the device by key and update the device item (and count requests).
// The alarms' routes (rules and alarms) read and write items one at a time or in transactions (a
// rule with its quota's count, an alarm with its guard and its transition's record): no batch writes.
const REGISTRY_ACCESS: Readonly<Record<string, TableAccess>> = {
  timeseries: 'storage',
  groups: 'read-items-write-one',
  alarms: 'read-items-write-one',
  state: 'get-update',
  ingest: 'read-items-write-one',
  limits: 'read-update',
  retention: 'get-update',
  export: 'batch-get-update',
  // The alarm notifier reads and writes the marks of what it sent (GetItem, UpdateItem) and shows a
  // failure on its rule (a conditional UpdateItem).
  'alarm-notifier': 'get-update',
};
const registryAccess = (source: string): TableAccess => REGISTRY_ACCESS[source] ?? 'read-write';

// The registry's indexes a route handler queries: the firmware handler finds the FOTA that use a
// version before deleting it; the rollouts' reads a rollout's devices by state (their entries in
// the sweep index); the alarms' list of open or acknowledged alarms reads their guards' entries
// in the sweep index. No other route handler queries an index.
const ROUTE_REGISTRY_INDEXES: Partial<Record<RouteHandler, readonly string[]>> = {
  firmwares: [REGISTRY_FIRMWARE_USE_INDEX.name],
  rollouts: [REGISTRY_SWEEP_INDEX.name],
  alarms: [REGISTRY_SWEEP_INDEX.name],
};

// The data path, traced with X-Ray (their Powertools Tracer sends the segments: lambdas/shared/tracer.ts).
const TRACED: ReadonlySet<string> = new Set(['ingest', 'forwarder']);

// What each scheduled handler may do with the registry: the sweep finds due work and a rollout's
// devices on its index, reads rollouts (queries) and changes items by conditional updates, one at
// a time. Releasing a state rollout's device reads the device item (GetItem) whose desired state
// it sets. Its alarm timers are read with their devices in batches (BatchGetItem), moved and
// deleted one at a time, and an alarm opens or closes in a transaction (its item, its guard, its
// transition's record: Put, Update, Delete, ConditionCheck): no batch writes.
const SCHEDULED_REGISTRY_ACCESS: Record<ScheduledHandler, { access: TableAccess; indexes: readonly string[] }> = {
  'rollout-sweep': { access: 'read-items-write-one', indexes: [REGISTRY_SWEEP_INDEX.name] },
};

/** Stack props plus the deploy-time settings (see `configFromContext`). */
export interface FleetstreamStackProps extends StackProps {
  readonly config: FleetstreamConfig;
  /** The console's built files. @default built at synth (lib/constructs/console-site.ts consoleSource) */
  readonly consoleSource?: ISource;
}

/**
 * Fleetstream in one stack: the registry table, one Lambda per handler of the route table, the
 * authorizers, and the REST API built from the route table. The parts are public so that later
 * constructs (queues, the time-series store) can bind the handlers they serve.
 */
export class FleetstreamStack extends Stack {
  readonly config: FleetstreamConfig;
  readonly registry: RegistryTable;
  /** The Lambda of each `handler` value of the route table. */
  readonly routeHandlers: ReadonlyMap<RouteHandler, HandlerFunction>;
  /** The authorizer Lambda of each kind of caller the routes use. */
  readonly authorizerFunctions: ReadonlyMap<AuthorizedBy, HandlerFunction>;
  readonly api: Api;
  readonly queues: Queues;
  /** The Lambda of each queue consumer (lambdas/queues.ts QUEUE_CONSUMERS), by handler folder. */
  readonly consumerFunctions: ReadonlyMap<string, HandlerFunction>;
  /** The Lambda of each table stream consumer (lambdas/streams.ts), by handler folder. */
  readonly streamFunctions: ReadonlyMap<StreamConsumer, HandlerFunction>;
  /** The Lambda of each scheduled handler (lambdas/schedules.ts), by handler folder. */
  readonly scheduledFunctions: ReadonlyMap<ScheduledHandler, HandlerFunction>;
  /** The EventBridge schedule of each scheduled handler, with its alarm. */
  readonly schedules: ReadonlyMap<ScheduledHandler, ScheduledRun>;
  /** The registry table's stream into its consumer, with its on-failure queue and alarms. */
  readonly registryStream: RegistryStream;
  /** Where data points are kept: a DynamoDB table or Timestream (`-c timeseries=…`). */
  readonly timeseries: TimeseriesStore;
  /** The IoT Core custom authorizer's Lambda (the MQTT door). */
  readonly mqttAuthorizer: HandlerFunction;
  /** The custom resource's Lambda that reads the MQTT domain name and the IoT data endpoint. */
  readonly iotEndpointsReader: HandlerFunction;
  /** The MQTT door on IoT Core: authorizer, domain configuration, topic rules. */
  readonly deviceMqtt: DeviceMqtt;
  /** The console's live updates on IoT Core: its authorizer, MQTT over WebSocket domain, publishers. */
  readonly consoleLive: ConsoleLive;
  /** The console's IoT Core custom authorizer's Lambda (its live updates). */
  readonly consoleAuthorizer: HandlerFunction;
  /** The console's user pool, app client and sign-up trigger. */
  readonly users: ConsoleUsers;
  /** The console on S3 + CloudFront. */
  readonly consoleSite: ConsoleSite;
  /** The S3 buckets of lambdas/buckets.ts: firmware images and data exports. */
  readonly buckets: Buckets;
  /** The handlers' operator metrics on the dashboard, and the stage's throttled requests. */
  readonly operatorMetrics: OperatorMetrics;

  constructor(scope: Construct, id: string, props: FleetstreamStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.config = config;
    const logs = { logRetention: config.logRetention, logRemovalPolicy: config.removalPolicy };

    this.registry = new RegistryTable(this, 'Registry', { removalPolicy: config.removalPolicy });

    this.routeHandlers = new Map(
      ROUTE_HANDLERS.map((name) => {
        const fn = new HandlerFunction(this, `${pascalCase(name)}Handler`, {
          source: name,
          description: `Fleetstream ${name} routes`,
          timeout: routesOf(name).some((r) => r.stream) ? STREAMED_TIMEOUT : BUFFERED_TIMEOUT,
          ...logs,
        });
        if (!WITHOUT_REGISTRY.has(name)) fn.bindTable(this.registry.table, REGISTRY_TABLE_ENV, registryAccess(name), { indexes: ROUTE_REGISTRY_INDEXES[name] });
        if (APPLIES_LIMITS(name)) fn.addEnvironment(LIMIT_DEFAULTS_ENV, JSON.stringify(config.limitDefaults));
        return [name, fn] as const;
      }),
    );
    // How long a firmware version's presigned upload URL works (-c firmwareUploadUrlTtlSeconds=…).
    this.routeHandlers.get('firmwares')?.addEnvironment('FIRMWARE_UPLOAD_URL_TTL_SECONDS', String(config.firmwareUploadUrlTtl.toSeconds()));

    // An authorizer looks its credential up (GetItem); the device authorizer also claims a device's
    // one sampled authentication event of a minute for unverified tokens (a conditional UpdateItem).
    // The device authorizer exists once a route of the table uses it.
    const authorizerSources: Record<AuthorizedBy, string> = { 'api-key': 'authorizer', device: 'device-authorizer' };
    const usedAuths = [...new Set(ROUTES.map((r) => r.auth))].filter((a): a is AuthorizedBy => a !== 'none');
    this.authorizerFunctions = new Map(
      usedAuths.map((auth) => {
        const fn = new HandlerFunction(this, `${pascalCase(auth)}AuthorizerHandler`, {
          source: authorizerSources[auth],
          description: `Fleetstream ${auth} authorizer`,
          ...logs,
        });
        fn.bindTable(this.registry.table, REGISTRY_TABLE_ENV, auth === 'device' ? 'get-update' : 'get-item');
        // API Gateway's cache is off for an authorizer without identity sources (lib/constructs/api.ts): it caches itself.
        if (!IDENTITY_HEADERS[auth].length) fn.addEnvironment('AUTHORIZER_CACHE_TTL_SECONDS', String(config.authorizerCacheTtl.toSeconds()));
        return [auth, fn] as const;
      }),
    );

    // The MQTT door's custom authorizer looks the device's identity up and samples unverified
    // tokens' events, as the device authorizer does.
    this.mqttAuthorizer = new HandlerFunction(this, 'MqttAuthorizerHandler', {
      source: 'mqtt-authorizer',
      description: 'Fleetstream MQTT custom authorizer (IoT Core)',
      ...logs,
    });
    this.mqttAuthorizer.bindTable(this.registry.table, REGISTRY_TABLE_ENV, 'get-update');

    // Queues and their consumers come from the same table as the local runtime's; producers are
    // granted SendMessage on the queues they feed.
    this.queues = new Queues(this, 'Queues', { removalPolicy: config.removalPolicy });
    this.consumerFunctions = new Map(
      (Object.entries(QUEUE_CONSUMERS) as Array<[QueueName, string]>).map(([queue, source]) => {
        const fn = new HandlerFunction(this, `${pascalCase(source)}Handler`, {
          source,
          description: `Fleetstream ${queue} queue consumer`,
          timeout: Duration.seconds(QUEUES[queue].consumerTimeoutSeconds),
          tracing: TRACED.has(source),
          ...logs,
        });
        if (!WITHOUT_REGISTRY.has(source)) fn.bindTable(this.registry.table, REGISTRY_TABLE_ENV, registryAccess(source));
        if (APPLIES_LIMITS(source)) fn.addEnvironment(LIMIT_DEFAULTS_ENV, JSON.stringify(config.limitDefaults));
        this.queues.consume(queue, fn);
        return [source, fn] as const;
      }),
    );
    // Alarm e-mails through SES v2 from the deploy setting's sender; the notifier's last receive of a
    // transition (the queue's maxReceiveCount) shows its failure on the rule.
    const notifier = this.consumerFunctions.get('alarm-notifier');
    if (notifier) {
      grantAlarmEmail(notifier, config.alarmSender, config.alarmSenderIdentity);
      notifier.addEnvironment('ALARM_NOTIFICATIONS_MAX_RECEIVE_COUNT', String(QUEUES['alarm-notifications'].maxReceiveCount));
    }
    // Job and FOTA events and rollout counts follow their writes: the registry stream's consumer
    // makes them. It reads the stream (granted by the event source); on the table it gets the place
    // of a device whose old job items carry none, reads rollouts (a query of a rollout and its
    // counters), puts and updates (a transaction of counted marks and counters; a rollout's end) and
    // puts in batches (what replaced jobs leave in their rollouts).
    const streamConsumer = new HandlerFunction(this, `${pascalCase(REGISTRY_STREAM.consumer)}Handler`, {
      source: REGISTRY_STREAM.consumer,
      description: 'Fleetstream registry stream consumer: job and FOTA events, rollout counts',
      timeout: Duration.seconds(REGISTRY_STREAM.consumerTimeoutSeconds),
      ...logs,
    });
    // Its alarms' part deletes timers and writes alarm transitions (deletes and condition checks in transactions).
    streamConsumer.bindTable(this.registry.table, REGISTRY_TABLE_ENV, 'read-write');
    this.streamFunctions = new Map([[REGISTRY_STREAM.consumer, streamConsumer]]);
    this.registryStream = new RegistryStream(this, 'RegistryStream', {
      table: this.registry.table,
      consumer: streamConsumer,
      dashboard: this.queues.dashboard,
      removalPolicy: config.removalPolicy,
    });

    // The scheduled handlers (the minute sweep of rollouts), each on its EventBridge rule.
    const scheduled = SCHEDULES.map((definition) => {
      const name = pascalCase(definition.handler);
      const fn = new HandlerFunction(this, `${name}Handler`, {
        source: definition.handler,
        description: definition.description,
        timeout: Duration.seconds(definition.timeoutSeconds),
        ...logs,
      });
      const { access, indexes } = SCHEDULED_REGISTRY_ACCESS[definition.handler];
      fn.bindTable(this.registry.table, REGISTRY_TABLE_ENV, access, { indexes });
      const run = new ScheduledRun(this, `${name}Schedule`, { definition, handler: fn, dashboard: this.queues.dashboard });
      return { handler: definition.handler, fn, run };
    });
    this.scheduledFunctions = new Map(scheduled.map(({ handler, fn }) => [handler, fn]));
    this.schedules = new Map(scheduled.map(({ handler, run }) => [handler, run]));

    const bySource = new Map(
      [
        ...this.routeHandlers.values(),
        ...this.authorizerFunctions.values(),
        ...this.consumerFunctions.values(),
        ...this.streamFunctions.values(),
        ...this.scheduledFunctions.values(),
        this.mqttAuthorizer,
      ].map((fn) => [fn.source, fn]),
    );
    for (const [queue, sources] of Object.entries(QUEUE_PRODUCERS) as Array<[QueueName, readonly string[]]>) {
      for (const source of sources) {
        const fn = bySource.get(source);
        if (fn) this.queues.allowSend(queue, fn);
      }
    }
    // A webhook's DLQ replay (POST …/integrations/{id}/replay) moves its messages back to the forward queue.
    for (const [queue, sources] of Object.entries(QUEUE_REPLAYERS) as Array<[QueueName, readonly string[]]>) {
      for (const source of sources) {
        const fn = bySource.get(source);
        if (fn) this.queues.allowReplay(queue, fn);
      }
    }

    // The storage query reads the time-series store (and keeps its rollups); the ingest consumer writes to it.
    this.timeseries = new TimeseriesStore(this, 'Timeseries', {
      backend: config.timeseries,
      removalPolicy: config.removalPolicy,
      memoryRetentionHours: config.timestreamMemoryRetentionHours,
      magneticRetentionDays: config.timestreamMagneticRetentionDays,
    });
    this.timeseries.bindReader(this.routeHandlers.get('timeseries')!).bindRollupKeeper(this.routeHandlers.get('timeseries')!);
    const ingest = this.consumerFunctions.get('ingest');
    if (ingest) this.timeseries.bindWriter(ingest);
    const restamper = this.consumerFunctions.get('retention');
    if (restamper) this.timeseries.bindRestamper(restamper);
    // A device's DELETE with ?purge=data is refused where the store cannot delete points.
    this.timeseries.bindBackendName(this.routeHandlers.get('devices')!);
    // An export's runs read the range as the storage query does.
    const exporter = this.consumerFunctions.get('export');
    if (exporter) this.timeseries.bindReader(exporter);

    // The console (DESIGN §10): its users, and its site, whose origin is the API's one CORS origin.
    this.users = new ConsoleUsers(this, 'Users', {
      registry: this.registry.table,
      registryEnv: REGISTRY_TABLE_ENV,
      removalPolicy: config.removalPolicy,
      ...logs,
    });
    this.consoleSite = new ConsoleSite(this, 'Console', { source: props.consoleSource });
    const apiAuthorizer = this.authorizerFunctions.get('api-key');
    apiAuthorizer?.addEnvironment('USER_POOL_ID', this.users.userPool.userPoolId);
    apiAuthorizer?.addEnvironment('USER_POOL_CLIENT_ID', this.users.client.userPoolClientId);
    for (const fn of this.routeHandlers.values()) fn.addEnvironment('CORS_ALLOWED_ORIGIN', this.consoleSite.url);

    // Firmware images (DESIGN §11) and data exports (§12), each handler granted what lambdas/buckets.ts says it does with them.
    this.buckets = new Buckets(this, 'Buckets', { consoleOrigin: this.consoleSite.url, removalPolicy: config.removalPolicy });
    for (const [bucket, definition] of Object.entries(BUCKETS) as Array<[BucketName, (typeof BUCKETS)[BucketName]]>) {
      for (const [source, access] of Object.entries(definition.access)) {
        const fn = bySource.get(source);
        if (!fn) throw new Error(`Bucket ${bucket}: no handler ${source} in the stack.`);
        this.buckets.grant(bucket, fn, access);
      }
    }

    this.api = new Api(this, 'Api', {
      corsOrigin: this.consoleSite.url,
      routes: ROUTES,
      handlers: this.routeHandlers,
      authorizers: Object.fromEntries(this.authorizerFunctions),
      authorizerCacheTtl: config.authorizerCacheTtl,
      throttleRateLimit: config.throttleRateLimit,
      throttleBurstLimit: config.throttleBurstLimit,
      deviceThrottleRateLimit: config.deviceThrottleRateLimit,
      deviceThrottleBurstLimit: config.deviceThrottleBurstLimit,
      firewallIpRateLimit: config.firewallIpRateLimit,
      firewallWindowSeconds: config.firewallWindowSeconds,
      logRetention: config.logRetention,
      logRemovalPolicy: config.removalPolicy,
    });

    this.operatorMetrics = new OperatorMetrics(this, 'OperatorMetrics', { dashboard: this.queues.dashboard, accessLogs: this.api.accessLogs });

    // Device credentials (zdevice.json) name the device API's address: built from the API's ID and
    // the stage's name, not the stage resource, which depends on this Lambda through its methods.
    this.routeHandlers
      .get('identities')
      ?.addEnvironment('DEVICE_ENDPOINT_URL', `https://${this.api.restApi.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${API_STAGE}/device`);

    // Jobs and FOTA go out live to connected devices; `j/up` requests are answered on `j/dn`.
    this.iotEndpointsReader = new HandlerFunction(this, 'IotEndpointsHandler', {
      source: 'iot-endpoints',
      description: 'Fleetstream custom resource: the MQTT domain name and IoT data endpoint',
      timeout: Duration.seconds(30),
      ...logs,
    });
    this.deviceMqtt = new DeviceMqtt(this, 'DeviceMqtt', {
      authorizer: this.mqttAuthorizer,
      endpointsReader: this.iotEndpointsReader,
      queues: { ingest: this.queues.queues.ingest, mqtt: this.queues.queues.mqtt },
      // Jobs and FOTA reach connected devices from the registry stream, after their writes.
      publishers: [this.streamFunctions.get(REGISTRY_STREAM.consumer), this.consumerFunctions.get('device-mqtt')].filter(
        (fn): fn is HandlerFunction => fn !== undefined,
      ),
      // Revoking an identity, or deleting a device, closes the device's open connection at once.
      sessionClosers: [this.routeHandlers.get('identities'), this.routeHandlers.get('devices')].filter((fn): fn is HandlerFunction => fn !== undefined),
      credentialsWriter: this.routeHandlers.get('identities'),
    });

    // The console's live updates: a user's token checked by its own authorizer (the user, the
    // account's workspace: GetItem), its own domain (MQTT over WebSocket); the Lambdas that record
    // connections, store points, count rollouts, write webhook statuses and export files publish to it.
    this.consoleAuthorizer = new HandlerFunction(this, 'ConsoleAuthorizerHandler', {
      source: 'console-authorizer',
      description: 'Fleetstream console live updates custom authorizer (IoT Core)',
      ...logs,
    });
    this.consoleAuthorizer.bindTable(this.registry.table, REGISTRY_TABLE_ENV, 'get-item');
    this.consoleAuthorizer.addEnvironment('USER_POOL_ID', this.users.userPool.userPoolId);
    this.consoleAuthorizer.addEnvironment('USER_POOL_CLIENT_ID', this.users.client.userPoolClientId);
    this.consoleLive = new ConsoleLive(this, 'ConsoleLive', {
      authorizer: this.consoleAuthorizer,
      endpointsReader: this.iotEndpointsReader,
      dataEndpoint: this.deviceMqtt.dataEndpoint,
      publishers: {
        connection: this.consumerFunctions.get('device-mqtt'),
        data: this.consumerFunctions.get('ingest'),
        rollout: this.streamFunctions.get(REGISTRY_STREAM.consumer),
        webhook: this.consumerFunctions.get('forwarder'),
        export: this.consumerFunctions.get('export'),
        alarm: this.consumerFunctions.get('alarm-notifier'),
      },
    });

    // What the console's pages call, and nothing else (its Content-Security-Policy's connect-src):
    // the API, the user pool's Cognito endpoint, and S3 in the stack's region, where the firmware
    // page PUTs an image through its presigned URL (virtual-hosted: <bucket>.s3.<region>.<suffix>).
    // S3 by the region rather than by the bucket: the bucket's CORS names the distribution, whose
    // headers policy would then name the bucket, a cycle CloudFormation refuses (docs/security.md).
    this.consoleSite.connectTo(
      `https://${this.api.restApi.restApiId}.execute-api.${this.region}.${this.urlSuffix}`,
      `https://cognito-idp.${this.region}.amazonaws.com`,
      `https://*.s3.${this.region}.${this.urlSuffix}`,
      // the live updates' MQTT over WebSocket, its own domain only
      `wss://${this.consoleLive.host}`,
    );
    this.consoleSite.writeConfig({
      apiUrl: this.api.url,
      region: this.region,
      userPoolId: this.users.userPool.userPoolId,
      userPoolClientId: this.users.client.userPoolClientId,
      liveUrl: this.consoleLive.url,
    });
    new CfnOutput(this, 'ConsoleUrl', { value: this.consoleSite.url, description: 'The web console (CloudFront)' });
    new CfnOutput(this, 'UserPoolId', { value: this.users.userPool.userPoolId, description: 'The console users’ Cognito user pool' });
    new CfnOutput(this, 'UserPoolClientId', { value: this.users.client.userPoolClientId, description: 'The console’s app client (public: no secret)' });
    new CfnOutput(this, 'ConsoleBucketName', { value: this.consoleSite.bucket.bucketName, description: 'The bucket behind the console’s distribution' });
    new CfnOutput(this, 'MqttEndpoint', { value: this.deviceMqtt.host, description: 'The devices’ MQTT broker host (port 8883, TLS, no ALPN)' });
    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'base_url of the management API (ends in /v3)' });
    new CfnOutput(this, 'StorageUrl', { value: this.api.url, description: 'storage_url of the time-series API (the same API for now)' });
    new CfnOutput(this, 'RegistryTableName', { value: this.registry.table.tableName, description: 'The registry DynamoDB table' });
    new CfnOutput(this, 'FirmwareBucketName', {
      value: this.buckets.buckets.firmware.bucketName,
      description: 'The bucket of firmware images (<workspace>/<firmware>/<version>)',
    });
    new CfnOutput(this, 'ExportsBucketName', {
      value: this.buckets.buckets.exports.bucketName,
      description: 'The bucket of data exports (exports/<workspace>/<export>.<csv|ndjson>)',
    });
    for (const { definition, queue, dlq } of Object.values(this.queues.queues)) {
      const name = pascalCase(definition.name);
      new CfnOutput(this, `${name}QueueUrl`, { value: queue.queueUrl, description: `The ${definition.name} queue (npm run replay-dlq -- --queue <this>)` });
      new CfnOutput(this, `${name}DlqUrl`, { value: dlq.queueUrl, description: `The ${definition.name} queue's dead-letter queue` });
    }
    new CfnOutput(this, 'RegistryStreamDlqUrl', {
      value: this.registryStream.dlq.queueUrl,
      description: 'Descriptions of registry stream batches whose job/FOTA events could not be forwarded',
    });
    for (const [handler, run] of this.schedules) {
      // The local runtimes find the rule by this output; an operator disables the rule to pause the runs.
      new CfnOutput(this, `${pascalCase(handler)}RuleName`, {
        value: run.rule.ruleName,
        description: `The EventBridge rule that runs ${handler} (disable it to pause the runs)`,
      });
    }
    new CfnOutput(this, 'DashboardName', {
      value: this.queues.dashboard.dashboardName,
      description: 'CloudWatch dashboard of the queues, their consumers and the operator metrics (points, webhook POSTs, refusals, throttles)',
    });
  }
}
