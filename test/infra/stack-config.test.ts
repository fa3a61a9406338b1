import { App, RemovalPolicy } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { LIMIT_DEFAULTS } from '../../lambdas/schemas/limits';
import { configFromContext } from '../../lib/stack-config';

const configOf = (context: Record<string, unknown>) => configFromContext(new App({ context }).node);

describe('configFromContext', () => {
  it('defaults to a retained, dynamodb-backed stack with a 30 s authorizer cache', () => {
    const config = configOf({});
    expect(config).toMatchObject({
      removalPolicy: RemovalPolicy.RETAIN,
      throttleRateLimit: 500,
      throttleBurstLimit: 1000,
      deviceThrottleRateLimit: 1000,
      deviceThrottleBurstLimit: 2000,
      firewallIpRateLimit: 6000,
      firewallWindowSeconds: 60,
      logRetention: RetentionDays.ONE_MONTH,
      timeseries: 'dynamodb',
    });
    expect(config.authorizerCacheTtl.toSeconds()).toBe(30);
    expect(config.firmwareUploadUrlTtl.toSeconds()).toBe(3600);
    expect(config.limitDefaults).toEqual(LIMIT_DEFAULTS);
  });

  it('takes workspaces’ default limits from `limits`, as an object (cdk.json) or JSON text (-c), the others kept', () => {
    expect(configOf({ limits: { devices: 500, requests_per_second_per_key: 20 } }).limitDefaults).toEqual({
      ...LIMIT_DEFAULTS,
      devices: 500,
      requests_per_second_per_key: 20,
    });
    expect(configOf({ limits: '{"fleets":3}' }).limitDefaults).toEqual({ ...LIMIT_DEFAULTS, fleets: 3 });
  });

  it('reads -c values, which arrive as strings', () => {
    const config = configOf({
      removalPolicy: 'destroy',
      authorizerCacheTtlSeconds: '0',
      throttleRateLimit: '20',
      throttleBurstLimit: '40',
      deviceThrottleRateLimit: '30',
      deviceThrottleBurstLimit: '60',
      firewallIpRateLimit: '100',
      firewallWindowSeconds: '300',
      logRetentionDays: '7',
      timeseries: 'timestream',
    });
    expect(config).toMatchObject({
      removalPolicy: RemovalPolicy.DESTROY,
      throttleRateLimit: 20,
      throttleBurstLimit: 40,
      deviceThrottleRateLimit: 30,
      deviceThrottleBurstLimit: 60,
      firewallIpRateLimit: 100,
      firewallWindowSeconds: 300,
      logRetention: RetentionDays.ONE_WEEK,
      timeseries: 'timestream',
    });
    expect(config.authorizerCacheTtl.toSeconds()).toBe(0);
  });

  it.each([
    ['removalPolicy', 'snapshot'],
    ['authorizerCacheTtlSeconds', '3601'],
    ['authorizerCacheTtlSeconds', 'thirty'],
    ['throttleRateLimit', '0'],
    ['throttleBurstLimit', '1.5'],
    ['deviceThrottleRateLimit', '0'],
    ['deviceThrottleBurstLimit', '5001'],
    // WAF's rate-based rules: a limit of at least 10, a window of 60, 120, 300 or 600 s.
    ['firewallIpRateLimit', '9'],
    ['firewallWindowSeconds', '90'],
    ['logRetentionDays', '31'],
    ['timeseries', 'influx'],
    // S3 takes a presigned URL for at most a week.
    ['firmwareUploadUrlTtlSeconds', '604801'],
    ['firmwareUploadUrlTtlSeconds', '59'],
    ['limits', '{"devices":-1}'],
    ['limits', '{"lasers":1}'],
    ['limits', 'devices=5'],
  ])('rejects %s=%s, naming the key', (key, value) => {
    expect(() => configOf({ [key]: value })).toThrow(new RegExp(`^Context ${key}=`));
  });
});
