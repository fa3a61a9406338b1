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
  /**
   * The management API's method throttle (the stage's default method settings, `/*\/*`): each of
   * its methods' steady rate, per second, and burst, in requests.
   */
  readonly throttleRateLimit: number;
  readonly throttleBurstLimit: number;
  /** The device door's method throttle (each `/device/...` method's own settings): steady rate per second, and burst. */
  readonly deviceThrottleRateLimit: number;
  readonly deviceThrottleBurstLimit: number;
  /** The WAF web ACL's per-IP rate rule: requests one address may send in `firewallWindowSeconds` before it is blocked (403). */
  readonly firewallIpRateLimit: number;
  /** The rule's evaluation window, in seconds (WAF takes 60, 120, 300 or 600). */
  readonly firewallWindowSeconds: number;
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
  /** The From address of alarm e-mails; empty: the deployment sends none (rules that ask for e-mail show it). */
  readonly alarmSender: string;
  /** The SES identity (verified domain or address) the notifier may send from: the sender's domain unless set. */
  readonly alarmSenderIdentity: string;
}

/** Every context key the stack reads, with its default. */
export const CONTEXT_DEFAULTS = {
  removalPolicy: 'retain',
  authorizerCacheTtlSeconds: 30,
  /** Each management API method's throttle (the stage's default method settings). */
  throttleRateLimit: 500,
  throttleBurstLimit: 1000,
  /** Each device door method's throttle (`/device/...`), apart from the management API's. */
  deviceThrottleRateLimit: 1000,
  deviceThrottleBurstLimit: 2000,
  /** The WAF's per-IP rate: 6,000 requests a minute (100 a second on average, one key's default rate). */
  firewallIpRateLimit: 6000,
  firewallWindowSeconds: 60,
  logRetentionDays: 30,
  timeseries: 'dynamodb',
  timestreamMemoryRetentionHours: 24,
  timestreamMagneticRetentionDays: 3650,
  firmwareUploadUrlTtlSeconds: 3600,
  /** Some or all of the per-workspace limits (lambdas/schemas/limits.ts), e.g. `{"devices": 50000}`; the others keep LIMIT_DEFAULTS. */
  limits: {},
  /** The From address of alarm e-mails (an address of an identity verified in SES); empty: no alarm e-mail. */
  alarmSender: '',
  /** The SES identity that covers alarmSender, when it is the address itself rather than its domain (the default). */
  alarmSenderIdentity: '',
} as const;

type ContextKey = keyof typeof CONTEXT_DEFAULTS;

const REMOVAL_POLICIES: Record<string, RemovalPolicy> = { retain: RemovalPolicy.RETAIN, destroy: RemovalPolicy.DESTROY };
const TIMESERIES_BACKENDS: readonly TimeseriesBackend[] = ['dynamodb', 'timestream'];
const RETENTION_DAYS = new Set<number>(Object.values(RetentionDays).filter((v): v is number => typeof v === 'number'));
// API Gateway caps the authorizer result cache at one hour.
const MAX_AUTHORIZER_CACHE_TTL_SECONDS = 3600;
// A WAF rate-based rule's bounds: https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based-high-level-settings.html
const WAF_RATE_LIMITS = { min: 10, max: 2_000_000_000 };
const WAF_WINDOWS_SECONDS = [60, 120, 300, 600];

// An address as SES takes one for FromEmailAddress: local part, @, a dotted domain.
const EMAIL_ADDRESS = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

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

  const firewallWindowSeconds = integer('firewallWindowSeconds', 60, 600);
  if (!WAF_WINDOWS_SECONDS.includes(firewallWindowSeconds)) {
    throw invalid('firewallWindowSeconds', firewallWindowSeconds, `a WAF evaluation window (${WAF_WINDOWS_SECONDS.join(', ')})`);
  }
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
  const alarmSender = read('alarmSender');
  if (typeof alarmSender !== 'string' || (alarmSender !== '' && !EMAIL_ADDRESS.test(alarmSender)))
    throw invalid('alarmSender', alarmSender, 'an e-mail address');
  const alarmSenderIdentity = read('alarmSenderIdentity');
  if (typeof alarmSenderIdentity !== 'string' || (alarmSenderIdentity !== '' && !/^[^@\s]+(@[^@\s]+)?$/.test(alarmSenderIdentity)))
    throw invalid('alarmSenderIdentity', alarmSenderIdentity, 'a domain or an e-mail address verified in SES');
  return {
    alarmSender,
    alarmSenderIdentity: alarmSenderIdentity || alarmSender.slice(alarmSender.indexOf('@') + 1),
    limitDefaults: { ...LIMIT_DEFAULTS, ...parsedLimits.data },
    removalPolicy: oneOf('removalPolicy', REMOVAL_POLICIES),
    authorizerCacheTtl: Duration.seconds(integer('authorizerCacheTtlSeconds', 0, MAX_AUTHORIZER_CACHE_TTL_SECONDS)),
    throttleRateLimit: integer('throttleRateLimit', 1, 10_000),
    throttleBurstLimit: integer('throttleBurstLimit', 0, 5_000),
    deviceThrottleRateLimit: integer('deviceThrottleRateLimit', 1, 10_000),
    deviceThrottleBurstLimit: integer('deviceThrottleBurstLimit', 0, 5_000),
    firewallIpRateLimit: integer('firewallIpRateLimit', WAF_RATE_LIMITS.min, WAF_RATE_LIMITS.max),
    firewallWindowSeconds,
    logRetention: logRetentionDays as RetentionDays,
    timeseries: oneOf('timeseries', Object.fromEntries(TIMESERIES_BACKENDS.map((b) => [b, b]))),
    // Timestream's limits: https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html
    timestreamMemoryRetentionHours: integer('timestreamMemoryRetentionHours', 1, 8766),
    timestreamMagneticRetentionDays: integer('timestreamMagneticRetentionDays', 1, 73_000),
    // S3 takes a presigned URL for at most a week. https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html
    firmwareUploadUrlTtl: Duration.seconds(integer('firmwareUploadUrlTtlSeconds', 60, 7 * 24 * 3600)),
  };
};
