import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY } from 'aws-cdk-lib/cx-api';
import { Grant } from 'aws-cdk-lib/aws-iam';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  HttpMethods,
  ObjectOwnership,
  PartitionDateSource,
  TargetObjectKeyFormat,
  type CfnBucket,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { BUCKETS, type BucketAccess, type BucketDefinition, type BucketName } from '../../lambdas/buckets';
import { pascalCase } from '../names';
import type { HandlerFunction } from './handler-function';

export interface BucketsProps {
  /** The console's origin (`https://<distribution>`), the one origin a bucket's CORS rules admit. */
  readonly consoleOrigin: string;
  /** What happens to the buckets (and their objects) when they leave the stack. @default RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** @default BUCKETS of lambdas/buckets.ts, the same rows the local runtimes use */
  readonly definitions?: Readonly<Record<BucketName, BucketDefinition>>;
}

/** Days S3 keeps the data buckets' server access logs before its lifecycle deletes them. */
export const ACCESS_LOG_RETENTION_DAYS = 365;

/**
 * The S3 actions of each kind of access, on the objects and on the bucket. HeadObject is
 * s3:GetObject; s3:ListBucket lets a HeadObject of a missing key answer 404 rather than 403.
 * Presigned requests are authorized as their signer when they are used, so presigning an upload
 * needs s3:PutObject, a download s3:GetObject.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html
 */
export const BUCKET_ACTIONS: Readonly<Record<BucketAccess, { objects: readonly string[]; bucket: readonly string[] }>> = {
  manage: { objects: ['s3:PutObject', 's3:GetObject', 's3:DeleteObject'], bucket: ['s3:ListBucket'] },
  check: { objects: ['s3:GetObject'], bucket: ['s3:ListBucket'] },
  download: { objects: ['s3:GetObject'], bucket: [] },
  delete: { objects: ['s3:DeleteObject'], bucket: [] },
  // CreateMultipartUpload, UploadPart and CompleteMultipartUpload are s3:PutObject; ListParts is
  // s3:ListMultipartUploadParts. https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html#mpuAndPermissions
  stream: { objects: ['s3:PutObject', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'], bucket: ['s3:ListBucket'] },
};

/**
 * The stack's S3 buckets, built from the bucket table that the local runtimes also read: private
 * (every public access blocked, ACLs off), encrypted with S3's managed keys, TLS only, no
 * versioning (a firmware image is written once, at its registration's own key: DESIGN §11; an
 * export is written once), unfinished uploads aborted and objects expired after their
 * definition's days, CORS for the console's origin only, and retained by default like the other
 * data resources. Every request to them, presigned uploads and downloads included, is recorded
 * by S3 server access logging in `accessLogs` (docs/security.md). `grant` gives a handler exactly
 * its kind of access and the bucket's name in its variable.
 */
export class Buckets extends Construct {
  readonly buckets: Readonly<Record<BucketName, Bucket>>;
  /**
   * Where S3 writes the data buckets' server access logs, under `<bucket name>/` then
   * `<account>/<region>/<bucket>/<yyyy>/<mm>/<dd>/` (partitioned by the requests' time): one line
   * per request, with the requester (the role that signed a presigned URL), its source IP, the
   * operation, key, status, bytes and user agent. Kept ACCESS_LOG_RETENTION_DAYS days. Only S3's
   * logging service writes there (the bucket policy CDK adds names it, for these buckets of this
   * account); no function of the stack has any access to it.
   * https://docs.aws.amazon.com/AmazonS3/latest/userguide/ServerLogs.html
   */
  readonly accessLogs: Bucket;
  private readonly definitions: Readonly<Record<BucketName, BucketDefinition>>;

  constructor(scope: Construct, id: string, props: BucketsProps) {
    super(scope, id);
    this.definitions = props.definitions ?? BUCKETS;
    // S3 delivers the logs as its logging service, which the log bucket's policy admits (for these
    // buckets of this account only), not by the log-delivery group's ACL: ACLs stay off
    // (BucketOwnerEnforced). Set here, for the buckets below, whatever the app's feature flags.
    // https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html#grant-log-delivery-permissions-general
    this.node.setContext(S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
    // What every bucket of the stack is: private, ACLs off, SSE-S3 (the only encryption access logs
    // are delivered to), TLS only, unversioned, kept or not with the stack.
    const privateBucket = {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    };
    // Server access logs go only to a bucket encrypted with S3's managed keys (SSE-S3), never SSE-KMS.
    // https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html
    this.accessLogs = new Bucket(this, 'AccessLogs', {
      ...privateBucket,
      lifecycleRules: [{ id: 'expire-logs', expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'This is the log bucket: it receives the server access logs of the firmware and exports buckets. Logging it into itself would log each delivery of logs (a loop AWS advises against), and into another bucket would need that one logged in turn. Only S3’s logging service writes to it, and no function of the stack is granted access to it.',
    });
    const build = (definition: BucketDefinition) => {
      const bucket = new Bucket(this, pascalCase(definition.name.replace(/^fleetstream-/, '')), {
        serverAccessLogsBucket: this.accessLogs,
        serverAccessLogsPrefix: `${definition.name}/`,
        targetObjectKeyFormat: TargetObjectKeyFormat.partitionedPrefix(PartitionDateSource.EVENT_TIME),
        ...privateBucket,
        lifecycleRules: [
          { id: 'abort-unfinished-uploads', abortIncompleteMultipartUploadAfter: Duration.days(definition.abortIncompleteUploadsAfterDays) },
          ...(definition.expireObjectsAfterDays === undefined ? [] : [{ id: 'expire-objects', expiration: Duration.days(definition.expireObjectsAfterDays) }]),
        ],
        ...(definition.consoleCors
          ? {
              cors: [
                {
                  allowedOrigins: [props.consoleOrigin],
                  allowedMethods: definition.consoleCors.methods.map((m) => HttpMethods[m]),
                  allowedHeaders: [...definition.consoleCors.headers],
                  exposedHeaders: [...definition.consoleCors.exposedHeaders],
                  maxAge: definition.consoleCors.maxAgeSeconds,
                },
              ],
            }
          : {}),
      });
      return bucket;
    };
    this.buckets = Object.fromEntries(Object.entries(this.definitions).map(([name, definition]) => [name, build(definition)])) as Record<BucketName, Bucket>;
  }

  /**
   * Lets a handler use a bucket as its definition says (`manage`, `check`, `download` or `stream`),
   * on the objects under the definition's key prefix, and puts the bucket's name in the
   * definition's variable.
   */
  grant(name: BucketName, handler: HandlerFunction, access: BucketAccess) {
    const bucket = this.buckets[name];
    const { keyPrefix, env } = this.definitions[name];
    const { objects, bucket: onBucket } = BUCKET_ACTIONS[access];
    Grant.addToPrincipal({ grantee: handler, actions: [...objects], resourceArns: [bucket.arnForObjects(`${keyPrefix}*`)] });
    if (onBucket.length) Grant.addToPrincipal({ grantee: handler, actions: [...onBucket], resourceArns: [bucket.bucketArn] });
    handler.addEnvironment(env, bucket.bucketName);
    Validations.of(handler.role!).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${Stack.of(this).getLogicalId(bucket.node.defaultChild as CfnBucket)}.Arn>/${keyPrefix}*]`,
      reason: `Each key starts with the workspace it belongs to (firmware: <workspace>/<firmware>/<version>; exports: exports/<workspace>/<export>) and the handler serves every workspace: it names a key only after checking that the caller owns its workspace. The actions are the ${access} kind's only (${objects.join(', ')}).`,
    });
  }
}
