import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Node } from 'constructs';
import { LIMIT_DEFAULTS, LimitOverridesSchema, type Limits } from '../lambdas/schemas/limits';

/** Which time-series store the stack deploys (DESIGN §5). */
export type TimeseriesBackend = 'dynamodb' | 'timestream';

/** Deploy-time settings of the Fleetstream stack, all from CDK context (`-c key=value` or cdk.json). */
export interface FleetstreamConfig {
  /** What CloudFormation does with the tables and log groups when they leave the stack. */
  readonly removalPolicy: RemovalPolicy;
  /** How long API Gateway reuses an authorizer answer; a revoked key keeps working this long. */
  readonly authorizerCacheTtl: Duration;
  /** Stage-wide steady request rate, per second. */
  readonly throttleRateLimit: number;
  /** Stage-wide burst, in requests. */
  readonly throttleBurstLimit: number;
  /** Retention of the Lambda and API access log groups. */
  readonly logRetention: RetentionDays;
  readonly timeseries: TimeseriesBackend;
  /** Timestream backend: hours a point stays in the memory store, then days in the magnetic store. */
  readonly timestreamMemoryRetentionHours: number;
  readonly timestreamMagneticRetentionDays: number;
  /** How long a firmware version's presigned upload URL works. */
  readonly firmwareUploadUrlTtl: Duration;
  /** Every workspace's limits until the operator sets its own (`npm run limits`): LIMIT_DEFAULTS with the context's `limits`. */
  readonly limitDefaults: Limits;
}

/** Every context key the stack reads, with its default. */
export const CONTEXT_DEFAULTS = {
  removalPolicy: 'retain',
  authorizerCacheTtlSeconds: 30,
  throttleRateLimit: 500,
  throttleBurstLimit: 1000,
  logRetentionDays: 30,
  timeseries: 'dynamodb',
  timestreamMemoryRetentionHours: 24,
  timestreamMagneticRetentionDays: 3650,
  firmwareUploadUrlTtlSeconds: 3600,
  /** Some or all of the per-workspace limits (lambdas/schemas/limits.ts), e.g. `{"devices": 50000}`; the others keep LIMIT_DEFAULTS. */
  limits: {},
} as const;

type ContextKey = keyof typeof CONTEXT_DEFAULTS;

const REMOVAL_POLICIES: Record<string, RemovalPolicy> = { retain: RemovalPolicy.RETAIN, destroy: RemovalPolicy.DESTROY };
const TIMESERIES_BACKENDS: readonly TimeseriesBackend[] = ['dynamodb', 'timestream'];
const RETENTION_DAYS = new Set<number>(Object.values(RetentionDays).filter((v): v is number => typeof v === 'number'));
// API Gateway caps the authorizer result cache at one hour.
const MAX_AUTHORIZER_CACHE_TTL_SECONDS = 3600;

const invalid = (key: ContextKey, value: unknown, expected: string) => new Error(`Context ${key}=${JSON.stringify(value)} is invalid: expected ${expected}.`);

/**
 * Reads and checks the stack's context, filling in defaults, so that a typo fails `cdk synth`
 * instead of deploying something unintended.
 * @throws Error naming the context key when a value is out of range or unknown.
 */
export const configFromContext = (node: Node): FleetstreamConfig => {
  // `-c key=value` gives strings, cdk.json gives JSON values: accept both.
  const read = (key: ContextKey): unknown => node.tryGetContext(key) ?? CONTEXT_DEFAULTS[key];
  const integer = (key: ContextKey, min: number, max: number) => {
    const value = read(key);
    const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw invalid(key, value, `an integer from ${min} to ${max}`);
    return n;
  };
  const oneOf = <T>(key: ContextKey, choices: Record<string, T>) => {
    const value = read(key);
    if (typeof value !== 'string' || !Object.hasOwn(choices, value)) throw invalid(key, value, Object.keys(choices).join(' | '));
    return choices[value];
  };

  const logRetentionDays = integer('logRetentionDays', 1, 3653);
  if (!RETENTION_DAYS.has(logRetentionDays)) {
    throw invalid('logRetentionDays', logRetentionDays, `a CloudWatch Logs retention period (${[...RETENTION_DAYS].join(', ')})`);
  }
  // `-c limits='{"devices":5}'` gives JSON text, cdk.json an object.
  const rawLimits = read('limits');
  let limits: unknown = rawLimits;
  if (typeof rawLimits === 'string') {
    try {
      limits = JSON.parse(rawLimits);
    } catch {
      throw invalid('limits', rawLimits, 'a JSON object of limits');
    }
  }
  const parsedLimits = LimitOverridesSchema.safeParse(limits);
  if (!parsedLimits.success) {
    throw invalid(
      'limits',
      limits,
      `limits among ${Object.keys(LIMIT_DEFAULTS).join(', ')} (${parsedLimits.error.issues.map((i) => `${i.path.join('.') || 'limits'}: ${i.message}`).join('; ')})`,
    );
  }
  return {
    limitDefaults: { ...LIMIT_DEFAULTS, ...parsedLimits.data },
    removalPolicy: oneOf('removalPolicy', REMOVAL_POLICIES),
    authorizerCacheTtl: Duration.seconds(integer('authorizerCacheTtlSeconds', 0, MAX_AUTHORIZER_CACHE_TTL_SECONDS)),
    throttleRateLimit: integer('throttleRateLimit', 1, 10_000),
    throttleBurstLimit: integer('throttleBurstLimit', 0, 5_000),
    logRetention: logRetentionDays as RetentionDays,
    timeseries: oneOf('timeseries', Object.fromEntries(TIMESERIES_BACKENDS.map((b) => [b, b]))),
    // Timestream's limits: https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html
    timestreamMemoryRetentionHours: integer('timestreamMemoryRetentionHours', 1, 8766),
    timestreamMagneticRetentionDays: integer('timestreamMagneticRetentionDays', 1, 73_000),
    // S3 takes a presigned URL for at most a week. https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html
    firmwareUploadUrlTtl: Duration.seconds(integer('firmwareUploadUrlTtlSeconds', 60, 7 * 24 * 3600)),
  };
};
