import type { QueueName, QueueSettings } from '../lambdas/queues';
import type { QueueOverrides } from './queues-engine';
import type { LocalRuntimeOptions } from './runtime';

/** What `npm start` reads from its environment: the runtime's options and where it keeps its files. */
export interface StartConfig {
  /** The runtime's options (port, data folder, queues, timeouts) without `log`. */
  options: Omit<LocalRuntimeOptions, 'log'>;
  /** Where `runtime-<port>.json` goes; also the data folder unless in memory. */
  dataDir: string;
}

/** A variable with a bad value, named in the message so that `npm start` can say which. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** An integer variable in [min, max], or undefined when unset or empty. @throws ConfigError */
const intVar = (env: Env, name: string, min: number, max: number): number | undefined => {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name}=${raw}: expected a whole number from ${min} to ${max}.`);
  return n;
};

/** An http(s) URL variable, or undefined when unset or empty. @throws ConfigError */
const urlVar = (env: Env, name: string): string | undefined => {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw new ConfigError(`${name}=${raw}: expected an http:// or https:// URL.`);
  return raw;
};

/** An e-mail address variable (the pool names users by e-mail). @throws ConfigError */
const emailVar = (env: Env, name: string) => {
  const value = env[name]!.trim();
  if (!/^[^@\s]+@[^@\s]+$/.test(value)) throw new ConfigError(`${name}=${value}: expected an e-mail address.`);
  return value;
};

/** A password variable that the user pool's policy accepts (local/cognito-local.ts LOCAL_POOL). @throws ConfigError */
const passwordVar = (env: Env, name: string) => {
  const value = env[name]!;
  if (value.length < 12 || !/[a-z]/.test(value) || !/[A-Z]/.test(value) || !/[0-9]/.test(value)) {
    throw new ConfigError(`${name}: expected at least 12 characters with lower and upper case letters and digits.`);
  }
  return value;
};

// SQS's own bounds: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html
const MAX_VISIBILITY_SECONDS = 43_200;
const MAX_RECEIVE_COUNT = 1000;

/** The queue settings one queue's variables change (`<QUEUE>_QUEUE_VISIBILITY_TIMEOUT_SECONDS`, `<QUEUE>_QUEUE_MAX_RECEIVE_COUNT`). */
const queueOverrides = (env: Env, queue: QueueName): Partial<QueueSettings> => {
  const prefix = `${queue.toUpperCase().replaceAll('-', '_')}_QUEUE`;
  const visibilityTimeoutSeconds = intVar(env, `${prefix}_VISIBILITY_TIMEOUT_SECONDS`, 0, MAX_VISIBILITY_SECONDS);
  const maxReceiveCount = intVar(env, `${prefix}_MAX_RECEIVE_COUNT`, 1, MAX_RECEIVE_COUNT);
  return {
    ...(visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds } : {}),
    ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
  };
};

/**
 * Reads `npm start`'s variables (docs/configuration.md), including the handler settings that the
 * runtime itself would otherwise set from `lambdas/queues.ts`, so that retries and the DLQ can be
 * tried in seconds: `FORWARD_RETRY_BASE_SECONDS`, `FORWARD_RETRY_MAX_SECONDS`, `WEBHOOK_TIMEOUT_MS`,
 * each queue's visibility timeout and receive count, `SWEEP_INTERVAL_SECONDS` (the rollout sweep's),
 * `S3_PORT` and `FIRMWARE_UPLOAD_URL_TTL_SECONDS`, `USAGE_FLUSH_SECONDS` and
 * `LIMITS_CACHE_SECONDS` (how soon usage shows and changed limits apply), and `EXPORT_RUN_SECONDS`
 * (how long an export's run reads before it goes on in a new message).
 *
 * `flags.inMemory` is `fleetstream start --in-memory`, which FLEETSTREAM_IN_MEMORY=1 also asks for.
 *
 * @throws ConfigError naming the first variable with a bad value
 * @example const { options, dataDir } = startConfig(process.env, { inMemory: true });
 */
export const startConfig = (env: Env, flags: { inMemory?: boolean } = {}): StartConfig => {
  const inMemory = flags.inMemory === true || env.FLEETSTREAM_IN_MEMORY === '1';
  const dataDir = env.FLEETSTREAM_DATA_DIR || '.local';
  const queues: QueueOverrides = {
    ingest: queueOverrides(env, 'ingest'),
    forward: queueOverrides(env, 'forward'),
    'alarm-notifications': queueOverrides(env, 'alarm-notifications'),
  };
  const baseSeconds = intVar(env, 'FORWARD_RETRY_BASE_SECONDS', 0, MAX_VISIBILITY_SECONDS);
  const maxSeconds = intVar(env, 'FORWARD_RETRY_MAX_SECONDS', 0, MAX_VISIBILITY_SECONDS);
  if (baseSeconds !== undefined || maxSeconds !== undefined) {
    // One given alone keeps the other's default (30 s and 900 s), raised or lowered to stay consistent.
    const base = baseSeconds ?? Math.min(30, maxSeconds!);
    const max = maxSeconds ?? Math.max(900, base);
    if (base > max) throw new ConfigError(`FORWARD_RETRY_BASE_SECONDS=${base} is larger than FORWARD_RETRY_MAX_SECONDS=${max}.`);
    queues.forward = { ...queues.forward, retry: { baseSeconds: base, maxSeconds: max } };
  }
  const authorizerCacheTtlSeconds = intVar(env, 'AUTHORIZER_CACHE_TTL_SECONDS', 0, 3600);
  const webhookTimeoutMs = intVar(env, 'WEBHOOK_TIMEOUT_MS', 1, 900_000);
  // The rollout sweep's rule runs it every minute; a shorter interval tries releases and timeouts in seconds.
  const sweepIntervalSeconds = intVar(env, 'SWEEP_INTERVAL_SECONDS', 1, 86_400);
  // S3 takes a presigned URL for at most a week.
  const firmwareUploadUrlTtlSeconds = intVar(env, 'FIRMWARE_UPLOAD_URL_TTL_SECONDS', 1, 7 * 24 * 3600);
  // How soon API requests show in a workspace's usage, and an operator's change of limits applies.
  const usageFlushSeconds = intVar(env, 'USAGE_FLUSH_SECONDS', 0, 3600);
  const limitsCacheSeconds = intVar(env, 'LIMITS_CACHE_SECONDS', 0, 3600);
  // An export's run reads at most this long before it goes on in a new message (Lambda's longest run: 15 minutes).
  const exportRunSeconds = intVar(env, 'EXPORT_RUN_SECONDS', 1, 900);
  // A DynamoDB Local already running (one engine for several instances): the runtime makes its tables
  // there under names of its own and deletes them at its stop, so it keeps nothing, as --in-memory says.
  const dynamoDbEndpoint = urlVar(env, 'FLEETSTREAM_DYNAMODB_ENDPOINT');
  if (dynamoDbEndpoint && !inMemory) {
    throw new ConfigError('FLEETSTREAM_DYNAMODB_ENDPOINT needs --in-memory (or FLEETSTREAM_IN_MEMORY=1): the tables it makes there are deleted at the stop.');
  }
  return {
    dataDir,
    options: {
      port: intVar(env, 'PORT', 0, 65_535) ?? 3000,
      // The embedded MQTT broker's ports (0: any free port): IoT clients' usual 1883 and 8883.
      mqttPort: intVar(env, 'MQTT_PORT', 0, 65_535) ?? 1883,
      mqttTlsPort: intVar(env, 'MQTTS_PORT', 0, 65_535) ?? 8883,
      // The console's live updates: MQTT over WebSocket (8083, the usual MQTT-over-WebSocket port).
      mqttWsPort: intVar(env, 'MQTT_WS_PORT', 0, 65_535) ?? 8083,
      dataDir: inMemory ? undefined : dataDir,
      devApiKey: env.FLEETSTREAM_DEV_API_KEY || undefined,
      // cognito-local's usual port; 0: any free port.
      cognitoPort: intVar(env, 'COGNITO_PORT', 0, 65_535) ?? 9229,
      // The local S3's port (presigned URLs name it); by default any free one.
      s3Port: intVar(env, 'S3_PORT', 0, 65_535) ?? 0,
      // The local SES v2 emulator and its page of sent mails (aws-ses-v2-local's usual port).
      sesPort: intVar(env, 'SES_PORT', 0, 65_535) ?? 8005,
      firstUser: {
        ...(env.FLEETSTREAM_DEV_USER_EMAIL ? { email: emailVar(env, 'FLEETSTREAM_DEV_USER_EMAIL') } : {}),
        ...(env.FLEETSTREAM_DEV_USER_PASSWORD ? { password: passwordVar(env, 'FLEETSTREAM_DEV_USER_PASSWORD') } : {}),
      },
      ...(authorizerCacheTtlSeconds !== undefined ? { authorizerCacheTtlSeconds } : {}),
      ...(webhookTimeoutMs !== undefined ? { webhookTimeoutMs } : {}),
      ...(sweepIntervalSeconds !== undefined ? { sweepIntervalSeconds } : {}),
      ...(firmwareUploadUrlTtlSeconds !== undefined ? { firmwareUploadUrlTtlSeconds } : {}),
      ...(usageFlushSeconds !== undefined ? { usageFlushSeconds } : {}),
      ...(limitsCacheSeconds !== undefined ? { limitsCacheSeconds } : {}),
      ...(exportRunSeconds !== undefined ? { exportRunSeconds } : {}),
      ...(dynamoDbEndpoint ? { dynamoDbEndpoint } : {}),
      queues,
    },
  };
};
