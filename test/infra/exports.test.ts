import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUCKETS, EXPORT_LIFETIME_DAYS, EXPORT_RUN_MAX_DAYS } from '../../lambdas/buckets';
import { QUEUES } from '../../lambdas/queues';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { actionsOf, mentions, statementsOfFunction, targetOf } from './template-queries';

// Wiring, not code: no bundling, so that the stack synthesizes in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const bucketId = () => idOf(stack.buckets.buckets.exports);
const exportsArn = () => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId(), 'Arn'] }, '/exports/*']] });
const bucketArn = () => ({ 'Fn::GetAtt': [bucketId(), 'Arn'] });
const exporter = () => idOf(stack.consumerFunctions.get('export')!);
const storageApi = () => idOf(stack.routeHandlers.get('timeseries')!);
const workspacesHandler = () => idOf(stack.routeHandlers.get('workspaces')!);

/** A function's statements that name the exports bucket, as `actions on resource`. */
const bucketGrantsOf = (functionId: string) =>
  statementsOfFunction(template, functionId)
    .filter((s) => mentions(s.Resource, bucketId()))
    .map((s) => ({ actions: actionsOf(s).sort(), resource: s.Resource }));

describe('the exports bucket', () => {
  it('is private, encrypted, TLS only, unversioned, without CORS, and retained', () => {
    const bucket = resources[bucketId()];

    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
    });
    expect(bucket.Properties.VersioningConfiguration).toBeUndefined();
    expect(bucket.Properties.CorsConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucketId() },
      PolicyDocument: { Statement: [{ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Principal: { AWS: '*' } }] },
    });
  });

  it('aborts an export’s upload left unfinished after the longest run, and deletes each file its lifetime after the longest run', () => {
    expect(resources[bucketId()].Properties.LifecycleConfiguration).toEqual({
      Rules: [
        { Id: 'abort-unfinished-uploads', AbortIncompleteMultipartUpload: { DaysAfterInitiation: EXPORT_RUN_MAX_DAYS }, Status: 'Enabled' },
        { Id: 'expire-objects', ExpirationInDays: EXPORT_LIFETIME_DAYS + EXPORT_RUN_MAX_DAYS, Status: 'Enabled' },
      ],
    });
  });

  it('tells its name in the ExportsBucketName output', () => {
    expect(template.toJSON().Outputs.ExportsBucketName.Value).toEqual({ Ref: bucketId() });
  });
});

describe('least privilege on export files', () => {
  it('lets the export consumer write, complete, list the parts of and abort uploads under exports/, check what it wrote, and list the bucket (a missing file is a 404)', () => {
    expect(bucketGrantsOf(exporter())).toEqual([
      { actions: ['s3:AbortMultipartUpload', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:PutObject'], resource: exportsArn() },
      { actions: ['s3:ListBucket'], resource: bucketArn() },
    ]);
  });

  it('lets the storage API presign downloads under exports/ only (GetObject)', () => {
    expect(bucketGrantsOf(storageApi())).toEqual([{ actions: ['s3:GetObject'], resource: exportsArn() }]);
  });

  it('lets the workspaces handler delete files under exports/ only (a workspace’s deletion)', () => {
    expect(bucketGrantsOf(workspacesHandler())).toEqual([{ actions: ['s3:DeleteObject'], resource: exportsArn() }]);
  });

  it('gives no other function any access to the bucket, and tells each its name', () => {
    const granted = new Set([exporter(), storageApi(), workspacesHandler()]);
    const others = Object.entries(resources).filter(([id, r]) => r.Type === 'AWS::Lambda::Function' && !granted.has(id) && bucketGrantsOf(id).length);

    expect(others.map(([id]) => id)).toEqual([]);
    expect(Object.keys(BUCKETS.exports.access).sort()).toEqual(['export', 'timeseries', 'workspaces']);
    for (const id of granted) expect(resources[id].Properties.Environment.Variables.EXPORTS_BUCKET).toEqual({ Ref: bucketId() });
  });
});

describe('the export queue and its consumer', () => {
  const queueId = () => idOf(stack.queues.queues.export.queue);

  it('runs one export a message for up to 15 minutes, with the retry backoff of the queue table', () => {
    const fn = resources[exporter()].Properties;
    const mapping = Object.values(resources).find((r) => r.Type === 'AWS::Lambda::EventSourceMapping' && targetOf(r.Properties.EventSourceArn) === queueId())!;

    expect(fn.Timeout).toBe(QUEUES.export.consumerTimeoutSeconds);
    expect(fn.Timeout).toBe(900);
    expect(mapping.Properties).toMatchObject({ BatchSize: 1, FunctionResponseTypes: ['ReportBatchItemFailures'] });
    expect(fn.Environment.Variables).toMatchObject({
      EXPORT_QUEUE_URL: { Ref: queueId() },
      EXPORT_RETRY_BASE_SECONDS: String(QUEUES.export.retry!.baseSeconds),
      EXPORT_RETRY_MAX_SECONDS: String(QUEUES.export.retry!.maxSeconds),
    });
  });

  it('lets the storage API and the export consumer (which goes on in a new message) send to it', () => {
    for (const id of [storageApi(), exporter()]) {
      const sends = statementsOfFunction(template, id).filter((s) => actionsOf(s).includes('sqs:SendMessage'));
      expect(sends.map((s) => targetOf(s.Resource))).toEqual([queueId()]);
    }
  });
});
