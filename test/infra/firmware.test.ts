import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUCKETS } from '../../lambdas/buckets';
import { REGISTRY_FIRMWARE_USE_INDEX } from '../../lambdas/stores/keys';
import { BUCKET_ACTIONS } from '../../lib/constructs/buckets';
import { REGISTRY_WARM_WRITES_PER_SECOND } from '../../lib/constructs/registry-table';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, mentions, statementsOfFunction, targetOf } from './template-queries';

// Wiring, not code: no bundling, so that the stack synthesizes in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [], firmwareUploadUrlTtlSeconds: '900' } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const bucketId = () => idOf(stack.buckets.buckets.firmware);
const objectsArn = () => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId(), 'Arn'] }, '/*']] });
const bucketArn = () => ({ 'Fn::GetAtt': [bucketId(), 'Arn'] });
const functions = () => Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');

/** A function's statements that name the firmware bucket, as `actions on resource`. */
const bucketGrantsOf = (functionId: string) =>
  statementsOfFunction(template, functionId)
    .filter((s) => mentions(s.Resource, bucketId()))
    .map((s) => ({ actions: actionsOf(s).sort(), resource: s.Resource }));

describe('the firmware bucket', () => {
  it('is private, encrypted, TLS only, unversioned, and retained', () => {
    const bucket = resources[bucketId()];

    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
    expect(bucket.Properties.VersioningConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId() },
      PolicyDocument: { Statement: [{ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Principal: { AWS: '*' } }] },
    });
  });

  it('aborts uploads left unfinished after a day, freeing their parts', () => {
    expect(resources[bucketId()].Properties.LifecycleConfiguration).toEqual({
      Rules: [
        {
          Id: 'abort-unfinished-uploads',
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: BUCKETS.firmware.abortIncompleteUploadsAfterDays },
          Status: 'Enabled',
        },
      ],
    });
  });

  it('lets the console’s origin alone PUT an image with the checksum header its URL is signed with (CORS)', () => {
    const [rule, ...others] = resources[bucketId()].Properties.CorsConfiguration.CorsRules;

    expect(others).toEqual([]);
    expect(rule).toEqual({
      AllowedOrigins: [{ 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [idOf(stack.consoleSite.distribution), 'DomainName'] }]] }],
      AllowedMethods: ['PUT'],
      AllowedHeaders: ['content-type', 'x-amz-checksum-sha256'],
      ExposedHeaders: ['ETag', 'x-amz-checksum-sha256'],
      MaxAge: 3600,
    });
  });

  it('tells its name in the FirmwareBucketName output', () => {
    expect(template.toJSON().Outputs.FirmwareBucketName.Value).toEqual({ Ref: bucketId() });
  });
});

describe('least privilege on firmware images', () => {
  const handlerIds = () => ({
    firmwares: idOf(stack.routeHandlers.get('firmwares')!),
    fota: idOf(stack.routeHandlers.get('fota')!),
    'registry-stream': idOf(stack.streamFunctions.get('registry-stream')!),
    'device-api': idOf(stack.routeHandlers.get('device-api')!),
    'device-mqtt': idOf(stack.consumerFunctions.get('device-mqtt')!),
    workspaces: idOf(stack.routeHandlers.get('workspaces')!),
  });

  it('lets the workspaces handler delete images only (a workspace’s deletion), nothing else of the bucket', () => {
    expect(bucketGrantsOf(handlerIds().workspaces)).toEqual([{ actions: ['s3:DeleteObject'], resource: objectsArn() }]);
  });

  it('lets the firmware handler presign uploads, check and delete objects, and list the bucket (a missing image is a 404, not a 403)', () => {
    expect(bucketGrantsOf(handlerIds().firmwares)).toEqual([
      { actions: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'], resource: objectsArn() },
      { actions: ['s3:ListBucket'], resource: bucketArn() },
    ]);
  });

  it('lets the FOTA scheduling check that an image is stored, and nothing more', () => {
    expect(bucketGrantsOf(handlerIds().fota)).toEqual([
      { actions: ['s3:GetObject'], resource: objectsArn() },
      { actions: ['s3:ListBucket'], resource: bucketArn() },
    ]);
  });

  it.each(['registry-stream', 'device-api', 'device-mqtt'] as const)('lets %s, a publisher of @fota, presign downloads only (GetObject)', (name) => {
    expect(bucketGrantsOf(handlerIds()[name])).toEqual([{ actions: ['s3:GetObject'], resource: objectsArn() }]);
  });

  it('gives no other function any access to the bucket', () => {
    const granted = new Set(Object.values(handlerIds()));
    const others = functions().filter(([id]) => !granted.has(id) && bucketGrantsOf(id).length);

    expect(others.map(([id]) => id)).toEqual([]);
    expect(Object.keys(BUCKETS.firmware.access).sort()).toEqual(Object.keys(handlerIds()).sort());
    expect(BUCKET_ACTIONS.download.bucket).toEqual([]);
  });

  it('tells each of them the bucket’s name, and the firmware handler how long its upload URLs work', () => {
    for (const id of Object.values(handlerIds())) expect(resources[id].Properties.Environment.Variables.FIRMWARE_BUCKET).toEqual({ Ref: bucketId() });
    expect(resources[handlerIds().firmwares].Properties.Environment.Variables.FIRMWARE_UPLOAD_URL_TTL_SECONDS).toBe('900');
  });
});

describe('the registry’s firmware-use index', () => {
  const table = () => resources[idOf(stack.registry.table)].Properties;

  it('is a keys-only index of firmware_ref and status, pre-warmed as the table', () => {
    expect(table().GlobalSecondaryIndexes).toContainEqual({
      IndexName: REGISTRY_FIRMWARE_USE_INDEX.name,
      KeySchema: [
        { AttributeName: 'firmware_ref', KeyType: 'HASH' },
        { AttributeName: 'status', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
      WarmThroughput: { WriteUnitsPerSecond: REGISTRY_WARM_WRITES_PER_SECOND },
    });
  });

  it('may be queried by the firmware handler only, which queries no other index', () => {
    const naming = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.PolicyDocument).includes(`/index/${REGISTRY_FIRMWARE_USE_INDEX.name}"`))
      .flatMap((r) => r.Properties.Roles.map(targetOf));
    const firmwares = idOf(stack.routeHandlers.get('firmwares')!);
    const indexStatements = statementsOfFunction(template, firmwares).filter((s) => JSON.stringify(s.Resource).includes('/index/'));

    expect(naming).toEqual([targetOf(resources[firmwares].Properties.Role)]);
    expect(indexStatements.map((s) => [actionsOf(s), JSON.stringify(s.Resource)])).toEqual([
      [
        ['dynamodb:Query'],
        JSON.stringify({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [idOf(stack.registry.table), 'Arn'] }, `/index/${REGISTRY_FIRMWARE_USE_INDEX.name}`]] }),
      ],
    ]);
  });
});
