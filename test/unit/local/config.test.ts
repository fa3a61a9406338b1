import { ConfigError, startConfig } from '../../../local/config';

describe('startConfig (npm start’s variables)', () => {
  it('keeps the queue table’s settings and port 3000 when nothing is set', () => {
    const { options, dataDir } = startConfig({});

    expect(dataDir).toBe('.local');
    expect(options).toEqual({
      port: 3000,
      mqttPort: 1883,
      mqttTlsPort: 8883,
      mqttWsPort: 8083,
      cognitoPort: 9229,
      s3Port: 0,
      sesPort: 8005,
      firstUser: {},
      dataDir: '.local',
      devApiKey: undefined,
      queues: { ingest: {}, forward: {}, 'alarm-notifications': {} },
    });
  });

  it('reads the user pool’s port and first user, and refuses a bad e-mail or a password the pool would refuse', () => {
    const { options } = startConfig({ COGNITO_PORT: '0', FLEETSTREAM_DEV_USER_EMAIL: 'me@example.com', FLEETSTREAM_DEV_USER_PASSWORD: 'Long-enough-pass-1' });

    expect(options).toMatchObject({ cognitoPort: 0, firstUser: { email: 'me@example.com', password: 'Long-enough-pass-1' } });
    expect(() => startConfig({ FLEETSTREAM_DEV_USER_EMAIL: 'not-an-address' })).toThrow(
      /FLEETSTREAM_DEV_USER_EMAIL=not-an-address: expected an e-mail address/,
    );
    expect(() => startConfig({ FLEETSTREAM_DEV_USER_PASSWORD: 'short1A' })).toThrow(/FLEETSTREAM_DEV_USER_PASSWORD: expected at least 12 characters/);
    expect(() => startConfig({ FLEETSTREAM_DEV_USER_PASSWORD: 'alllowercase-and-1' })).toThrow(/FLEETSTREAM_DEV_USER_PASSWORD/);
  });

  it('turns the retry, queue and timeout variables into the runtime’s overrides', () => {
    const { options } = startConfig({
      FORWARD_RETRY_BASE_SECONDS: '1',
      FORWARD_RETRY_MAX_SECONDS: '4',
      FORWARD_QUEUE_VISIBILITY_TIMEOUT_SECONDS: '5',
      FORWARD_QUEUE_MAX_RECEIVE_COUNT: '2',
      INGEST_QUEUE_MAX_RECEIVE_COUNT: '3',
      ALARM_NOTIFICATIONS_QUEUE_VISIBILITY_TIMEOUT_SECONDS: '4',
      ALARM_NOTIFICATIONS_QUEUE_MAX_RECEIVE_COUNT: '2',
      SES_PORT: '0',
      WEBHOOK_TIMEOUT_MS: '1500',
      AUTHORIZER_CACHE_TTL_SECONDS: '0',
      SWEEP_INTERVAL_SECONDS: '2',
      FIRMWARE_UPLOAD_URL_TTL_SECONDS: '30',
      EXPORT_RUN_SECONDS: '2',
      S3_PORT: '9000',
      PORT: '0',
    });

    expect(options.queues).toEqual({
      ingest: { maxReceiveCount: 3 },
      forward: { visibilityTimeoutSeconds: 5, maxReceiveCount: 2, retry: { baseSeconds: 1, maxSeconds: 4 } },
      'alarm-notifications': { visibilityTimeoutSeconds: 4, maxReceiveCount: 2 },
    });
    expect(options).toMatchObject({
      webhookTimeoutMs: 1500,
      authorizerCacheTtlSeconds: 0,
      sweepIntervalSeconds: 2,
      firmwareUploadUrlTtlSeconds: 30,
      exportRunSeconds: 2,
      s3Port: 9000,
      sesPort: 0,
      port: 0,
    });
    expect(() => startConfig({ EXPORT_RUN_SECONDS: '901' })).toThrow(/EXPORT_RUN_SECONDS=901: expected a whole number from 1 to 900/);
    expect(() => startConfig({ SWEEP_INTERVAL_SECONDS: '0' })).toThrow(/SWEEP_INTERVAL_SECONDS=0: expected a whole number from 1 to 86400/);
    // S3 takes a presigned URL for at most a week.
    expect(() => startConfig({ FIRMWARE_UPLOAD_URL_TTL_SECONDS: '604801' })).toThrow(
      /FIRMWARE_UPLOAD_URL_TTL_SECONDS=604801: expected a whole number from 1 to 604800/,
    );
  });

  it.each([
    [{ FORWARD_RETRY_BASE_SECONDS: '5' }, { baseSeconds: 5, maxSeconds: 900 }],
    [{ FORWARD_RETRY_MAX_SECONDS: '10' }, { baseSeconds: 10, maxSeconds: 10 }],
  ])('fills the other retry bound from its default when one is given: %j', (env, retry) => {
    expect(startConfig(env).options.queues?.forward?.retry).toEqual(retry);
  });

  it('keeps nothing on disk in memory, but still names the folder for the runtime file', () => {
    const { options, dataDir } = startConfig({ FLEETSTREAM_DATA_DIR: '/tmp/x' }, { inMemory: true });

    expect([options.dataDir, dataDir]).toEqual([undefined, '/tmp/x']);
  });

  it('uses a DynamoDB Local already running only in memory, and refuses one that is not a URL', () => {
    const endpoint = 'http://127.0.0.1:8000';

    expect(startConfig({ FLEETSTREAM_DYNAMODB_ENDPOINT: endpoint }, { inMemory: true }).options.dynamoDbEndpoint).toBe(endpoint);
    expect(startConfig({ FLEETSTREAM_DYNAMODB_ENDPOINT: endpoint, FLEETSTREAM_IN_MEMORY: '1' }).options.dynamoDbEndpoint).toBe(endpoint);
    expect(startConfig({}, { inMemory: true }).options.dynamoDbEndpoint).toBeUndefined();
    expect(() => startConfig({ FLEETSTREAM_DYNAMODB_ENDPOINT: endpoint })).toThrow(/^FLEETSTREAM_DYNAMODB_ENDPOINT needs --in-memory/);
    expect(() => startConfig({ FLEETSTREAM_DYNAMODB_ENDPOINT: '127.0.0.1:8000' }, { inMemory: true })).toThrow(
      /^FLEETSTREAM_DYNAMODB_ENDPOINT=127.0.0.1:8000: expected/,
    );
  });

  it.each([
    ['FORWARD_RETRY_BASE_SECONDS', 'soon'],
    ['FORWARD_QUEUE_MAX_RECEIVE_COUNT', '0'],
    ['INGEST_QUEUE_VISIBILITY_TIMEOUT_SECONDS', '-1'],
    ['WEBHOOK_TIMEOUT_MS', '1.5'],
    ['PORT', '70000'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => startConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => startConfig({ [name]: value })).toThrow(new RegExp(`^${name}=`));
  });

  it('refuses a retry base above the retry max', () => {
    expect(() => startConfig({ FORWARD_RETRY_BASE_SECONDS: '10', FORWARD_RETRY_MAX_SECONDS: '5' })).toThrow(/larger than FORWARD_RETRY_MAX_SECONDS/);
  });
});
