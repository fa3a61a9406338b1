import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BUCKETS, type BucketName } from '../../lambdas/buckets';
import { ACCESS_LOG_RETENTION_DAYS } from '../../lib/constructs/buckets';
import { FleetstreamStack } from '../../lib/fleetstream-stack';
import { configFromContext } from '../../lib/stack-config';
import { mentions } from './template-queries';

/**
 * S3 server access logs of the data buckets (docs/security.md, "Firmware objects and S3"): every
 * request to the firmware and exports buckets, presigned uploads and downloads included, is
 * logged into a log bucket of its own.
 */
// Wiring, not code: no bundling, so that the stack synthesizes in seconds.
const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
const stack = new FleetstreamStack(app, 'Fleetstream', { config: configFromContext(app.node) });
const template = Template.fromStack(stack);
const resources = template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
const idOf = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const logBucketId = () => idOf(stack.buckets.accessLogs);
const names = Object.keys(BUCKETS) as BucketName[];

describe('server access logs of the data buckets', () => {
  it.each(names)('logs every request to the %s bucket into the log bucket, under its name, partitioned by the requests’ time', (name) => {
    expect(resources[idOf(stack.buckets.buckets[name])].Properties.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logBucketId() },
      LogFilePrefix: `${BUCKETS[name].name}/`,
      TargetObjectKeyFormat: { PartitionedPrefix: { PartitionDateSource: 'EventTime' } },
    });
  });

  it('keeps the logs in a private, SSE-S3 encrypted, TLS-only bucket for a year, retained with the stack’s data', () => {
    const bucket = resources[logBucketId()];

    expect(bucket.Properties).toMatchObject({
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      // S3 delivers server access logs only to a bucket with SSE-S3 (not SSE-KMS) as its default encryption.
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      LifecycleConfiguration: { Rules: [{ Id: 'expire-logs', ExpirationInDays: ACCESS_LOG_RETENTION_DAYS, Status: 'Enabled' }] },
    });
    expect(ACCESS_LOG_RETENTION_DAYS).toBe(365);
    expect(bucket.Properties.LoggingConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
  });

  it('lets S3’s logging service alone write there, for the data buckets of this account only, and refuses requests without TLS', () => {
    const policy = Object.values(resources).find((r) => r.Type === 'AWS::S3::BucketPolicy' && mentions(r.Properties.Bucket, logBucketId()))!;
    const statements = policy.Properties.PolicyDocument.Statement as Array<Record<string, any>>;
    const allows = statements.filter((s) => s.Effect === 'Allow');

    expect(statements.filter((s) => s.Effect === 'Deny')).toEqual([
      expect.objectContaining({ Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } }, Principal: { AWS: '*' } }),
    ]);
    expect(allows.length).toBe(names.length);
    for (const name of names) {
      const sourceArn = { 'Fn::GetAtt': [idOf(stack.buckets.buckets[name]), 'Arn'] };
      expect(allows).toContainEqual({
        Effect: 'Allow',
        Principal: { Service: 'logging.s3.amazonaws.com' },
        Action: 's3:PutObject',
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logBucketId(), 'Arn'] }, `/${BUCKETS[name].name}/*`]] },
        Condition: { ArnLike: { 'aws:SourceArn': sourceArn }, StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      });
    }
  });

  it('grants no function of the stack any access to the logs', () => {
    const policies = Object.values(resources).filter((r) => r.Type === 'AWS::IAM::Policy');
    expect(policies.length).toBeGreaterThan(0);
    for (const policy of policies) expect(mentions(policy.Properties.PolicyDocument, logBucketId())).toBe(false);
  });

  it('acknowledges AwsSolutions-S1 (no access logs) on the log bucket alone: the data buckets are logged', () => {
    const s1 = stack.node
      .findAll()
      .filter((c) =>
        c.node.metadata.some(
          (m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY && Object.keys(m.data as object).some((rule) => rule.endsWith('AwsSolutions-S1')),
        ),
      )
      .map((c) => c.node.path);

    expect(s1).not.toContain(stack.buckets.buckets.firmware.node.path);
    expect(s1).not.toContain(stack.buckets.buckets.exports.node.path);
    expect(s1.filter((path) => path.startsWith(`${stack.buckets.node.path}/`))).toEqual([stack.buckets.accessLogs.node.path]);
  });
});
