import type { IncomingMessage } from 'node:http';
import type { Access } from './iam-policy';

/** Where the ARNs of a local deployment point. */
export interface ArnContext {
  region: string;
  account: string;
}

const dynamoTableArn = (ctx: ArnContext, table: string, index?: string) =>
  `arn:aws:dynamodb:${ctx.region}:${ctx.account}:table/${table}${index ? `/index/${index}` : ''}`;

// DynamoDB's transaction items are authorized as the item actions inside them.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
const TRANSACT_ACTIONS: Record<string, string> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
};

/** The accesses of a DynamoDB JSON request (`X-Amz-Target: DynamoDB_20120810.<Operation>`). */
export const dynamoAccesses = (ctx: ArnContext, operation: string, body: any): Access[] => {
  const one = (action: string, table: string, index?: string): Access => ({
    action: `dynamodb:${action}`,
    resource: dynamoTableArn(ctx, table, index),
    table,
    ...(index ? { index } : {}),
  });
  /** The `pk` of a batch write's request: its Item's (put) or Key's (delete). */
  const partitionKey = (request: { PutRequest?: { Item?: any }; DeleteRequest?: { Key?: any } }): string =>
    String((request.PutRequest?.Item ?? request.DeleteRequest?.Key)?.pk?.S ?? '');
  switch (operation) {
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems ?? {}).map(([table, requests]) => ({
        ...one(operation, table),
        leadingKeys: (requests as any[]).map(partitionKey),
      }));
    case 'BatchGetItem':
      return Object.keys(body.RequestItems ?? {}).map((table) => one(operation, table));
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems ?? []).flatMap((item: Record<string, { TableName: string }>) =>
        Object.entries(item).map(([kind, op]) => one(TRANSACT_ACTIONS[kind] ?? kind, op.TableName)),
      );
    case 'ListTables':
      return [{ action: 'dynamodb:ListTables', resource: '*' }];
    default:
      return [one(operation, body.TableName ?? body.TableArn ?? '', body.IndexName)];
  }
};

/**
 * A stream ARN as IAM sees it on this deployment. DynamoDB Local writes its own region (`ddblocal`)
 * into the ARNs it hands out; the template's ARNs carry the deployment's region and account, as
 * the table ARNs built from a table name do.
 */
export const localStreamArn = (ctx: ArnContext, arn: string): string => {
  const match = /^arn:aws:dynamodb:[^:]*:[^:]*:table\/([^/]+)\/stream\/(.+)$/.exec(arn);
  if (!match) throw new Error(`not a DynamoDB stream ARN: ${arn}`);
  return `arn:aws:dynamodb:${ctx.region}:${ctx.account}:table/${match[1]}/stream/${match[2]}`;
};

/**
 * The accesses of a DynamoDB Streams request (`X-Amz-Target: DynamoDBStreams_20120810.<Operation>`):
 * each is authorized on the stream's ARN, ListStreams on `*` (it takes no resource-level
 * permissions). GetRecords names only its shard iterator, which AWS ties to the stream; DynamoDB
 * Local's iterators begin with the stream ARN (`<arn>|<version>|<position>`), so the stream is read
 * from there, and an iterator that does not (an opaque one) cannot be checked.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
 */
export const streamsAccesses = (ctx: ArnContext, operation: string, body: any): Access[] => {
  const action = `dynamodb:${operation}`;
  if (operation === 'ListStreams') return [{ action, resource: '*', ...(body.TableName ? { table: body.TableName } : {}) }];
  const arn: string | undefined = operation === 'GetRecords' ? /^(arn:[^|]+)\|/.exec(String(body.ShardIterator ?? ''))?.[1] : body.StreamArn;
  if (!arn) throw new Error(`${operation}: no stream ARN to check`);
  const resource = localStreamArn(ctx, arn);
  return [{ action, resource, table: resource.split('/')[1] }];
};

// SQS authorizes a batch as its single action.
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-api-permissions-reference.html
const SQS_BATCH: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

/** The accesses of an SQS request, JSON protocol (`X-Amz-Target: AmazonSQS.<Action>`) or query (`Action=`). */
export const sqsAccesses = (ctx: ArnContext, operation: string, params: Record<string, any>): Access[] => {
  const queueName = params.QueueUrl ? String(params.QueueUrl).split('/').at(-1) : params.QueueName;
  const action = `sqs:${SQS_BATCH[operation] ?? operation}`;
  if (operation === 'ListQueues') return [{ action, resource: '*' }];
  return [{ action, resource: `arn:aws:sqs:${ctx.region}:${ctx.account}:${queueName ?? ''}` }];
};

/**
 * The accesses of an IoT data-plane request (REST JSON): `Publish` (`POST /topics/{topic}`) is
 * `iot:Publish` on the topic's ARN, `DeleteConnection` (`DELETE /connections/{clientId}`)
 * `iot:DeleteConnection` on the client's. Other operations (shadows, retained messages) are not
 * read, so the proxy refuses them.
 */
export const iotDataAccesses = (ctx: ArnContext, method: string, url: string): Access[] | undefined => {
  const path = new URL(url, 'http://localhost').pathname;
  const topic = /^\/topics\/(.+)$/.exec(path)?.[1];
  if (method === 'POST' && topic) return [{ action: 'iot:Publish', resource: `arn:aws:iot:${ctx.region}:${ctx.account}:topic/${decodeURIComponent(topic)}` }];
  const client = /^\/connections\/([^/]+)$/.exec(path)?.[1];
  if (method === 'DELETE' && client) {
    return [{ action: 'iot:DeleteConnection', resource: `arn:aws:iot:${ctx.region}:${ctx.account}:client/${decodeURIComponent(client)}` }];
  }
  return undefined;
};

/**
 * The accesses of an IoT control-plane request (REST JSON), for the operations the stack's custom
 * resource makes: `DescribeEndpoint` (`GET /endpoint`, no resource-level permission: `*`) and
 * `DescribeDomainConfiguration` (`GET /domainConfigurations/{name}`, on the domain configuration's ARN).
 */
export const iotAccesses = (ctx: ArnContext, method: string, url: string): Access[] | undefined => {
  const path = new URL(url, 'http://localhost').pathname;
  if (method === 'GET' && path === '/endpoint') return [{ action: 'iot:DescribeEndpoint', resource: '*' }];
  const domain = /^\/domainConfigurations\/([^/]+)$/.exec(path)?.[1];
  if (method === 'GET' && domain) {
    return [
      { action: 'iot:DescribeDomainConfiguration', resource: `arn:aws:iot:${ctx.region}:${ctx.account}:domainconfiguration/${decodeURIComponent(domain)}` },
    ];
  }
  return undefined;
};

/** An S3 object's ARN (S3's ARNs name no region or account), or its bucket's when `key` is undefined. */
export const s3Arn = (bucket: string, key?: string) => `arn:aws:s3:::${bucket}${key === undefined ? '' : `/${key}`}`;

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/**
 * The accesses of an S3 request (REST, path-style `/<bucket>/<key>`, as the SDK addresses an
 * endpoint that is an IP address), by the actions S3 authorizes each operation with: HeadObject
 * is s3:GetObject, the multipart upload's calls s3:PutObject, HeadBucket and ListObjects
 * s3:ListBucket, DeleteObjects s3:DeleteObject on each key of its body, CopyObject s3:PutObject on
 * the copy and s3:GetObject on its source. A CORS preflight (OPTIONS) asks for nothing: S3
 * answers it from the bucket's CORS rules, whoever asks.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html
 */
export const s3Accesses = (method: string, url: string, headers: IncomingMessage['headers'], body: string): Access[] | undefined => {
  const { pathname, searchParams } = new URL(url, 'http://localhost');
  const [, bucketSegment = '', ...keySegments] = pathname.split('/');
  const bucket = decodeURIComponent(bucketSegment);
  const key = decodeURIComponent(keySegments.join('/'));
  const on = (action: string, resource: string): Access => ({ action: `s3:${action}`, resource });
  if (method === 'OPTIONS') return [];
  if (!bucket) return method === 'GET' ? [on('ListAllMyBuckets', '*')] : undefined;
  if (!key) {
    if (method === 'GET' && searchParams.has('uploads')) return [on('ListBucketMultipartUploads', s3Arn(bucket))];
    if (method === 'GET' || method === 'HEAD') return [on('ListBucket', s3Arn(bucket))];
    if (method === 'PUT') return [on('CreateBucket', s3Arn(bucket))];
    if (method === 'DELETE') return [on('DeleteBucket', s3Arn(bucket))];
    if (method === 'POST' && searchParams.has('delete')) {
      return [...body.matchAll(/<Key>([\s\S]*?)<\/Key>/g)].map(([, k]) =>
        on(
          'DeleteObject',
          s3Arn(
            bucket,
            k.replace(/&(amp|lt|gt|quot|apos);/g, (_e, n: string) => XML_ENTITIES[n]),
          ),
        ),
      );
    }
    return undefined;
  }
  const object = s3Arn(bucket, key);
  switch (method) {
    case 'GET':
      return [on(searchParams.has('uploadId') ? 'ListMultipartUploadParts' : 'GetObject', object)];
    case 'HEAD':
      return [on('GetObject', object)];
    case 'PUT': {
      const source = headers['x-amz-copy-source'];
      if (typeof source !== 'string') return [on('PutObject', object)];
      const [sourceBucket, ...sourceKey] = decodeURIComponent(source.split('?')[0]).replace(/^\//, '').split('/');
      return [on('PutObject', object), on('GetObject', s3Arn(sourceBucket, sourceKey.join('/')))];
    }
    case 'POST':
      return searchParams.has('uploads') || searchParams.has('uploadId') ? [on('PutObject', object)] : undefined;
    case 'DELETE':
      return [on(searchParams.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject', object)];
    default:
      return undefined;
  }
};

/**
 * The accesses of an SES v2 request. SendEmail (`POST /v2/email/outbound-emails`) is
 * `ses:SendEmail` on the identity that covers its From address, taken as the address's domain (the
 * stack's default identity, `alarmSender`'s domain), with the condition key `ses:FromAddress`; no
 * other operation is read, so the proxy refuses it.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsesv2.html
 */
export const sesAccesses = (ctx: ArnContext, method: string, url: string, body: string): Access[] | undefined => {
  if (method !== 'POST' || url.split('?')[0] !== '/v2/email/outbound-emails') return undefined;
  const from = String((JSON.parse(body || '{}') as { FromEmailAddress?: unknown }).FromEmailAddress ?? '');
  const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
  const at = address.lastIndexOf('@');
  if (at < 1) return undefined;
  return [
    {
      action: 'ses:SendEmail',
      resource: `arn:aws:ses:${ctx.region}:${ctx.account}:identity/${address.slice(at + 1)}`,
      context: { 'ses:FromAddress': address },
    },
  ];
};
