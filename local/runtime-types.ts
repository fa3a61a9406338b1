import type { IpRateRule, StageThrottle } from './api-gateway-throttling';
import type { OutboxMessage } from './cognito-local';
import type { QueueName } from '../lambdas/queues';
import type { QueueOverrides } from './queues-engine';
import type { StreamDefinition } from '../lambdas/streams';
import type { ScheduleStatus } from './scheduler';

/**
 * What the local runtimes take and answer: the options of `npm start` and of the tests, and the
 * addresses a started runtime gives its clients.
 */
export interface LocalRuntimeOptions {
  /**
   * A DynamoDB Local already running (the test projects share one per run): the runtime makes its
   * tables there under names of its own, and leaves the engine running when it stops. Without it,
   * the runtime starts its own.
   */
  dynamoDbEndpoint?: string;
  /**
   * The names of the registry and time-series tables (REGISTRY_TABLE, TIMESERIES_TABLE);
   * `fleetstream-registry` and `fleetstream-timeseries` when absent, or random ones on a shared engine.
   */
  tableNames?: { registry?: string; timeseries?: string };
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
  /** Port of the broker's MQTT over WebSocket listener, the console's live updates (MQTT_WS_PORT); a free one when 0 or absent. */
  mqttWsPort?: number;
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
  /**
   * Seconds the rollout sweep's scheduled events are stamped ahead of the clock: the handler sweeps
   * the alarm timers as of that time, so that a test sees an `offline` rule's 60 s pass at once.
   * EventBridge's are stamped with the scheduled minute, never ahead (tests only; 0 when absent).
   */
  sweepClockAheadSeconds?: number;
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
  /** Port of the local SES v2 emulator and its page of sent mails (SES_PORT); a free one when 0 or absent. */
  sesPort?: number;
  /** How long a firmware version's upload URL works, in seconds (FIRMWARE_UPLOAD_URL_TTL_SECONDS; an hour when absent). */
  firmwareUploadUrlTtlSeconds?: number;
  /**
   * The stage's default method throttle, which each management API method has a bucket of (a
   * token bucket); STAGE_THROTTLE, the stack's default, when absent.
   */
  stageThrottle?: StageThrottle;
  /** Each device door method's throttle (`/device/...`); DEVICE_THROTTLE, the stack's default, when absent. */
  deviceThrottle?: StageThrottle;
  /**
   * The WAF web ACL's per-IP rate (requests from one address in a window, the connection's address);
   * FIREWALL, the stack's default, when absent.
   */
  firewall?: IpRateRule;
  /** Seconds a handler counts API requests before writing them to the usage (USAGE_FLUSH_SECONDS; 10 when absent, 0: every request). */
  usageFlushSeconds?: number;
  /** Seconds a container relies on a workspace's limits as read (LIMITS_CACHE_SECONDS; 60 when absent). */
  limitsCacheSeconds?: number;
  /**
   * Longest an export's run reads before it goes on in a new message, in seconds
   * (EXPORT_RUN_SECONDS; until a minute before the Lambda's timeout when absent). A run always
   * writes a part first: tests make it a millisecond, so that an export spans a run per part.
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
  /**
   * The local SES v2 emulator (aws-ses-v2-local, AWS_ENDPOINT_URL_SESV2) and its page of the sent
   * e-mails (alarm notifications); `GET <mail_url>store` answers them as JSON.
   */
  ses_endpoint?: string;
  mail_url?: string;
  /** The embedded MQTT broker: plain and TLS addresses; device credentials name the TLS one. */
  mqtt_url: string;
  mqtts_url: string;
  /** The broker's MQTT over WebSocket address, the console's live updates (`ws://127.0.0.1:<port>/mqtt`); absent in the cloud-assembly mode. */
  mqtt_ws_url?: string;
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
  /** Stops and starts the SES emulator on its port (an SES outage, in tests). */
  mail: { stop: () => Promise<void>; start: () => Promise<void> };
}
