/** Configuration, read once from the environment. Endpoints are never read here: the SDK takes them
 * from the standard AWS_ENDPOINT_URL_* variables. */
import { LIMIT_DEFAULTS, LimitOverridesSchema, type Limits } from '../schemas/limits';

const intFrom = (value: string | undefined, fallback: number): number => {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(n) ? n : fallback;
};

/** The DynamoDB table holding accounts, workspaces, fleets, devices, jobs, FOTA and keys. */
export const REGISTRY_TABLE = process.env.REGISTRY_TABLE ?? 'fleetstream-registry';

/** Largest accepted request body, in bytes (job values must also fit a DynamoDB item). */
export const MAX_BODY_BYTES = intFrom(process.env.MAX_BODY_BYTES, 64 * 1024);

/** Parallel BatchWriteItem calls per bulk write: jobs on whole fleets, data points in the `dynamodb` time-series store. */
export const WRITE_CONCURRENCY = intFrom(process.env.WRITE_CONCURRENCY, 16);

/**
 * How long the ingest Lambda uses what it read of an MQTT-publishing device (workspace, fleet,
 * name) and of a workspace's data retention, in seconds: a move or rename reaches MQTT data, and a
 * retention change the expiry of new points, within this time (docs/devices.md, "The MQTT door",
 * and docs/storage.md, "Data retention per workspace"). Read at each call, so that the local
 * runtime can set it before a handler loads and a workspaces Lambda computes the same bound as the
 * ingest.
 */
export const devicePlaceCacheSeconds = () => intFrom(process.env.DEVICE_PLACE_CACHE_SECONDS, 600);

/**
 * Queue of a workspace's retention re-stamps (the workspaces Lambda fills it; the retention Lambda
 * drains and refills it). Read at each call: the local runtime creates its queues after a test
 * file may have loaded this module.
 */
export const retentionQueueUrl = () => process.env.RETENTION_QUEUE_URL ?? '';

/** Queue that the device API and the MQTT data rule fill and the ingest Lambda drains. */
export const INGEST_QUEUE_URL = process.env.INGEST_QUEUE_URL ?? '';

/** Queue of data points and events on their way to webhooks. */
export const FORWARD_QUEUE_URL = process.env.FORWARD_QUEUE_URL ?? '';

/** The forward queue's dead-letter queue: the integrations handler replays a webhook's messages from it. */
export const FORWARD_DLQ_URL = process.env.FORWARD_DLQ_URL ?? '';

/** Base address of the device API, written into device credentials (`endpoint` of zdevice.json). */
export const DEVICE_ENDPOINT_URL = process.env.DEVICE_ENDPOINT_URL ?? '';

/** Longest lifetime (exp − now) the device authorizer accepts in a device token, in seconds. */
export const DEVICE_TOKEN_MAX_TTL_SECONDS = intFrom(process.env.DEVICE_TOKEN_MAX_TTL_SECONDS, 3600);

/** Forward-queue retry backoff: base × 2^(receives − 1) seconds, at most the max (the stack sets both from lambdas/queues.ts). */
export const FORWARD_RETRY_BASE_SECONDS = intFrom(process.env.FORWARD_RETRY_BASE_SECONDS, 30);
export const FORWARD_RETRY_MAX_SECONDS = intFrom(process.env.FORWARD_RETRY_MAX_SECONDS, 900);

/**
 * How long a forwarder container relies on what it read of a workspace's integrations and on the
 * delivery statuses it wrote, in seconds (domain/forwarder-memory.ts): a change to an integration
 * reaches deliveries within this time, and `last_delivery_at` lags at most this much. 0: read and
 * write on every invocation.
 */
export const FORWARDER_CACHE_SECONDS = intFrom(process.env.FORWARDER_CACHE_SECONDS, 10);

/** How long the forwarder waits for a webhook receiver's answer, in milliseconds. */
export const WEBHOOK_TIMEOUT_MS = intFrom(process.env.WEBHOOK_TIMEOUT_MS, 10_000);

/**
 * Lets webhooks use http and private, loopback or link-local addresses. Only the local runtime
 * sets it (its receivers are on 127.0.0.1); in the cloud webhooks are https to public addresses.
 */
export const WEBHOOK_ALLOW_PRIVATE_TARGETS = process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS === 'true';

/** Which time-series store the handlers use: `dynamodb` (default; also the local runtime's) or `timestream`. */
export const TIMESERIES_BACKEND = process.env.TIMESERIES_BACKEND ?? 'dynamodb';

/** The DynamoDB table of the `dynamodb` time-series backend. */
export const TIMESERIES_TABLE = process.env.TIMESERIES_TABLE ?? 'fleetstream-timeseries';

/** The Timestream for LiveAnalytics database and table of the `timestream` backend. */
export const TIMESTREAM_DATABASE = process.env.TIMESTREAM_DATABASE ?? 'fleetstream';
export const TIMESTREAM_TABLE = process.env.TIMESTREAM_TABLE ?? 'datapoints';

/**
 * The MQTT broker devices connect to, as a URL (`mqtts://<iot-endpoint>:8883`, locally
 * `mqtts://127.0.0.1:<port>`): written into device credentials as `endpoint.host/port/mode`.
 * Empty: credentials name the HTTPS device API only.
 */
export const DEVICE_MQTT_URL = process.env.DEVICE_MQTT_URL ?? '';

/** PEM of the CA that signed the broker's certificate: the credentials' `cacert` when the broker uses TLS. */
export const DEVICE_MQTT_CACERT = process.env.DEVICE_MQTT_CACERT ?? '';

/**
 * Jobs and FOTA scheduled for a connected device are published to it at once on `j/dn/<id>`
 * through the IoT data plane (the stack and the local runtime set it to `true`).
 */
export const MQTT_LIVE_DELIVERY = process.env.MQTT_LIVE_DELIVERY === 'true';

/**
 * Revoking an identity closes the device's open MQTT session through the IoT data plane's
 * DeleteConnection (the stack sets it to `true` on the Lambdas it grants `iot:DeleteConnection`,
 * the local runtime on every handler); unset, there is no MQTT door to close.
 */
export const MQTT_SESSION_CLOSE = process.env.MQTT_SESSION_CLOSE === 'true';

/**
 * The open consoles are told of changes (connections, new data, rollout counts, webhook status) on
 * `fleetstream/console/<workspace>/<kind>` through the IoT data plane (the stack sets it to `true`
 * on the Lambdas it grants `iot:Publish` on those topics, the local runtime on every handler).
 */
export const CONSOLE_LIVE = process.env.CONSOLE_LIVE === 'true';

/** Queue that the MQTT topic rules (data, `j/up`, presence) fill and the device-mqtt Lambda drains. */
export const MQTT_QUEUE_URL = process.env.MQTT_QUEUE_URL ?? '';

/**
 * The user pool whose access tokens the API accepts (`Authorization: Bearer …`), read at each call
 * rather than once: the local runtime creates its pool (and so learns its ID) after the handlers
 * may have loaded, and a test may start several runtimes in one process. USER_POOL_ISSUER is set
 * only locally (cognito-local's issuer); in the cloud it follows from the region and the pool ID.
 */
export const userPoolSettings = () => {
  const poolId = process.env.USER_POOL_ID ?? '';
  const issuer = process.env.USER_POOL_ISSUER || (poolId ? `https://cognito-idp.${process.env.AWS_REGION}.amazonaws.com/${poolId}` : '');
  return { issuer, clientId: process.env.USER_POOL_CLIENT_ID ?? '' };
};

/**
 * How long the API authorizer reuses an answer for the same credential, in seconds (0: never). The
 * stack turns API Gateway's own cache off for this authorizer (a cached REQUEST authorizer refuses
 * a request missing any identity source, and a caller sends either X-API-KEY or a session), so the
 * authorizer caches itself; a revoked key stops working within this time. Read at each call, as above.
 */
export const authorizerCacheTtlSeconds = () => intFrom(process.env.AUTHORIZER_CACHE_TTL_SECONDS, 30);

/**
 * The console's origin (`https://<distribution>.cloudfront.net`), the one origin the browser may
 * read the API's answers from (CORS); empty: no CORS headers (the local console is same-origin).
 */
export const CORS_ALLOWED_ORIGIN = process.env.CORS_ALLOWED_ORIGIN ?? '';

/**
 * The S3 bucket of firmware images (`<workspace>/<firmware>/<version>`). Read at each call: the
 * local runtime creates its bucket (and so sets this) after the handlers may have loaded.
 */
export const firmwareBucket = () => process.env.FIRMWARE_BUCKET ?? '';

/**
 * The S3 bucket of data exports (`exports/<workspace>/<export>.<format>`). Read at each call, as
 * the firmware bucket is.
 */
export const exportsBucket = () => process.env.EXPORTS_BUCKET ?? '';

/** Queue of data exports to run (the storage API fills it; the export Lambda drains and refills it). Read at each call. */
export const exportQueueUrl = () => process.env.EXPORT_QUEUE_URL ?? '';

/**
 * Queue of alarm transitions on their way to notifications (the alarm transitions fill it; the
 * alarm-notifier Lambda drains it). Read at each call, as the export queue's is.
 */
export const alarmNotificationsQueueUrl = () => process.env.ALARM_NOTIFICATIONS_QUEUE_URL ?? '';

/**
 * The notifications queue's retries (the stack sets them from lambdas/queues.ts, the local runtime
 * from its queue): backoff base × 2^(receives − 1) seconds, at most the max; the receive that is
 * the queue's last (maxReceiveCount) shows its failure on the rule before the DLQ keeps it.
 */
export const alarmNotificationRetry = () => ({
  baseSeconds: intFrom(process.env.ALARM_NOTIFICATIONS_RETRY_BASE_SECONDS, 30),
  maxSeconds: intFrom(process.env.ALARM_NOTIFICATIONS_RETRY_MAX_SECONDS, 900),
  maxReceiveCount: intFrom(process.env.ALARM_NOTIFICATIONS_MAX_RECEIVE_COUNT, 8),
});

/**
 * The address alarm e-mails come from (deploy setting `alarmSender`, an identity verified in SES;
 * the local runtime's `alarms@fleetstream.local`). Empty: this deployment sends no e-mail, and a
 * rule that asks for some shows it (`last_notification_error`).
 */
export const alarmEmailSender = () => process.env.ALARM_EMAIL_SENDER ?? '';

/** Export-queue retry backoff: base × 2^(receives − 1) seconds, at most the max (the stack sets both from lambdas/queues.ts). */
export const exportRetrySeconds = () => ({
  baseSeconds: intFrom(process.env.EXPORT_RETRY_BASE_SECONDS, 30),
  maxSeconds: intFrom(process.env.EXPORT_RETRY_MAX_SECONDS, 900),
});

/**
 * Longest a run of the export Lambda reads before it puts the export back on its queue, in seconds
 * (0, the default: until a minute before the Lambda's timeout). A run always writes at least one
 * part first. Tests make it a millisecond, so that each run writes one part and an export goes on
 * across a run per part.
 */
export const exportRunSeconds = () => intFrom(process.env.EXPORT_RUN_SECONDS, 0);

/**
 * How long a firmware version's presigned upload URL is valid, in seconds (S3 takes a presigned
 * URL for at most a week). Read at each call, as the local runtime may set it after loading.
 */
export const firmwareUploadUrlTtlSeconds = () => Math.min(Math.max(intFrom(process.env.FIRMWARE_UPLOAD_URL_TTL_SECONDS, 3600), 1), 7 * 24 * 3600);

/**
 * The limits of a workspace whose operator set none (deploy context `limits`, which the stack
 * passes as WORKSPACE_LIMIT_DEFAULTS, JSON): LIMIT_DEFAULTS with the deployment's changes.
 * @throws Error at load when the variable is not valid limits: a deployment must not run on limits it did not mean.
 */
export const WORKSPACE_LIMIT_DEFAULTS: Readonly<Limits> = (() => {
  const raw = process.env.WORKSPACE_LIMIT_DEFAULTS;
  if (!raw) return LIMIT_DEFAULTS;
  const parsed = LimitOverridesSchema.safeParse(JSON.parse(raw));
  if (!parsed.success)
    throw new Error(`WORKSPACE_LIMIT_DEFAULTS is not valid limits: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return { ...LIMIT_DEFAULTS, ...parsed.data };
})();

/**
 * How long a container relies on a workspace's limits as it read them, in seconds: a limit the
 * operator changes (`npm run limits`) applies everywhere within this time. Quotas of things created
 * (devices, fleets, keys, integrations) are checked against the stored limits in the creating
 * transaction itself, whatever this says.
 */
export const LIMITS_CACHE_SECONDS = intFrom(process.env.LIMITS_CACHE_SECONDS, 60);

/**
 * How long a handler container keeps counting API requests before it writes them to the usage
 * counters, in seconds (domain/usage.ts): the lag of `api_requests`, and what a container that
 * crashes may take with it unwritten (one that Lambda shuts down writes it: shared/shutdown.ts).
 * 0: written at the end of every request.
 */
export const USAGE_FLUSH_SECONDS = intFrom(process.env.USAGE_FLUSH_SECONDS, 10);

/**
 * Where Lambda's Runtime and Extensions APIs listen in this container (`host:port`, set by Lambda;
 * the cloud-assembly runtime sets it too). Absent in the in-process local runtime and in tests.
 */
export const LAMBDA_RUNTIME_API = process.env.AWS_LAMBDA_RUNTIME_API;
