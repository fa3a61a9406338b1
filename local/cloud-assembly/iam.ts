import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * IAM, checked by use: a small evaluator of identity-based policies and a recording proxy that
 * stands between one function and the local engines. Every AWS call the function makes goes
 * through its proxy (its AWS_ENDPOINT_URL_* variables point there); the proxy reads the action and
 * the resources from the request, evaluates the function's role policies, answers AccessDenied
 * in the service's own error format when they refuse, as AWS does, and otherwise forwards the
 * request unchanged to the engine.
 */

/** A statement of an identity-based policy, its values resolved. */
export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: unknown;
}

/** What IAM decides for one action on one resource. */
export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny';

const list = (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat());

/** IAM's wildcard match: `*` any run of characters, `?` one; actions ignore case, resources do not. */
export const wildcardMatch = (pattern: string, value: string, ignoreCase = false) => {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'is' : 's').test(value);
};

const appliesTo = (statement: PolicyStatement, action: string, resource: string) => {
  const actionMatches = statement.NotAction
    ? !list(statement.NotAction).some((p) => wildcardMatch(p, action, true))
    : list(statement.Action).some((p) => wildcardMatch(p, action, true));
  const resourceMatches = statement.NotResource
    ? !list(statement.NotResource).some((p) => wildcardMatch(p, resource))
    : list(statement.Resource).some((p) => wildcardMatch(p, resource));
  return actionMatches && resourceMatches;
};

/** The one condition the local check reads: `ForAllValues:StringLike` on `dynamodb:LeadingKeys`, alone. */
const leadingKeyPatterns = (condition: unknown): string[] | undefined => {
  const operators = condition as Record<string, Record<string, string | string[]>>;
  const keys = operators['ForAllValues:StringLike'];
  if (Object.keys(operators).length !== 1 || !keys || Object.keys(keys).length !== 1 || !keys['dynamodb:LeadingKeys']) return undefined;
  return list(keys['dynamodb:LeadingKeys']);
};

/**
 * Whether a statement applies to a request, as far as its condition goes. The condition the stack's
 * role policies use is read: `ForAllValues:StringLike` on `dynamodb:LeadingKeys`, the partition
 * keys a batch write names (`leadingKeys`), each matching one of the patterns. A condition the
 * local check cannot decide (another key or operator, or a request whose keys it did not read) is
 * taken the strict way: an Allow as not applying, a Deny as applying, so that the local check
 * never allows what AWS might refuse.
 */
const conditionHolds = (statement: PolicyStatement, leadingKeys: readonly string[] | undefined) => {
  if (statement.Condition === undefined) return true;
  const patterns = leadingKeyPatterns(statement.Condition);
  if (patterns === undefined || leadingKeys === undefined) return statement.Effect === 'Deny';
  return leadingKeys.every((key) => patterns.some((pattern) => wildcardMatch(pattern, key)));
};

/**
 * Evaluates identity-based policy statements as IAM does for one principal: an explicit Deny wins,
 * then any Allow, else the implicit deny; a statement applies when its condition holds
 * (`conditionHolds`).
 */
export const evaluate = (statements: readonly PolicyStatement[], action: string, resource: string, leadingKeys?: readonly string[]): Decision => {
  const matching = statements.filter((s) => appliesTo(s, action, resource) && conditionHolds(s, leadingKeys));
  if (matching.some((s) => s.Effect === 'Deny')) return 'explicit-deny';
  return matching.some((s) => s.Effect === 'Allow') ? 'allow' : 'implicit-deny';
};

/** One action on one resource, as a request asks for it. */
export interface Access {
  action: string;
  resource: string;
  /** For DynamoDB: the table, and the index when one is queried. */
  table?: string;
  index?: string;
  /** For DynamoDB's batch writes: the partition keys (`pk`, the stack's tables' key) of the items written. */
  leadingKeys?: string[];
}

/** A recorded call: which function, what it asked for, and what the policy said. */
export interface CallRecord extends Access {
  function: string;
  decision: Decision;
}

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
 * `iot:Publish` on the topic's ARN. Other operations (shadows, retained messages) are not read, so
 * the proxy refuses them.
 */
export const iotDataAccesses = (ctx: ArnContext, method: string, url: string): Access[] | undefined => {
  const path = new URL(url, 'http://localhost').pathname;
  const topic = /^\/topics\/(.+)$/.exec(path)?.[1];
  if (method !== 'POST' || !topic) return undefined;
  return [{ action: 'iot:Publish', resource: `arn:aws:iot:${ctx.region}:${ctx.account}:topic/${decodeURIComponent(topic)}` }];
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

/** S3's AccessDenied: its XML error document (none for HEAD, whose answers have no body). */
const s3AccessDenied = (message: string) => ({
  status: 403,
  headers: { 'content-type': 'application/xml' },
  body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>${message.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!)}</Message></Error>`,
});

/** What the proxy reads of a request besides its body. */
interface RequestLine {
  headers: IncomingMessage['headers'];
  method: string;
  url: string;
}

/** A REST JSON service's AccessDenied (the SDK reads the type from `x-amzn-errortype`). */
const restAccessDenied = (type: string) => (message: string) => ({
  status: 403,
  headers: { 'content-type': 'application/json', 'x-amzn-errortype': type },
  body: JSON.stringify({ message }),
});

/** A service the proxy understands: how it finds the accesses of a request, and how it refuses. */
interface ServiceCodec {
  prefix: string;
  accesses: (ctx: ArnContext, request: RequestLine, body: string) => Access[] | undefined;
  denied: (message: string) => { status: number; headers: Record<string, string>; body: string };
}

const targetOf = (headers: IncomingMessage['headers']) => String(headers['x-amz-target'] ?? '');

/** AccessDenied in the JSON 1.0 error shape that DynamoDB and DynamoDB Streams answer with. */
const jsonAccessDenied = (message: string) => ({
  status: 400,
  headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'AccessDeniedException' },
  body: JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', Message: message }),
});

const SERVICES: Record<string, ServiceCodec> = {
  dynamodb: {
    prefix: 'dynamodb',
    accesses: (ctx, { headers }, body) => {
      const target = targetOf(headers);
      if (!target.startsWith('DynamoDB_')) return undefined;
      return dynamoAccesses(ctx, target.split('.')[1], JSON.parse(body || '{}'));
    },
    denied: jsonAccessDenied,
  },
  dynamodbstreams: {
    prefix: 'dynamodb',
    accesses: (ctx, { headers }, body) => {
      const target = targetOf(headers);
      if (!target.startsWith('DynamoDBStreams_')) return undefined;
      return streamsAccesses(ctx, target.split('.')[1], JSON.parse(body || '{}'));
    },
    denied: jsonAccessDenied,
  },
  sqs: {
    prefix: 'sqs',
    accesses: (ctx, { headers }, body) => {
      const target = targetOf(headers);
      if (target.startsWith('AmazonSQS.')) return sqsAccesses(ctx, target.split('.')[1], JSON.parse(body || '{}'));
      const form = new URLSearchParams(body);
      const action = form.get('Action');
      return action ? sqsAccesses(ctx, action, Object.fromEntries(form)) : undefined;
    },
    // SQS's JSON protocol error, with the query-compatible code the SDK maps to AccessDenied.
    denied: (message) => ({
      status: 400,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'AccessDenied;Sender' },
      body: JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message }),
    }),
  },
  // The IoT data plane answers a refused Publish with ForbiddenException (403).
  iotdata: { prefix: 'iot', accesses: (ctx, { method, url }) => iotDataAccesses(ctx, method, url), denied: restAccessDenied('ForbiddenException') },
  iot: { prefix: 'iot', accesses: (ctx, { method, url }) => iotAccesses(ctx, method, url), denied: restAccessDenied('AccessDeniedException') },
  s3: { prefix: 's3', accesses: (_ctx, { method, url, headers }, body) => s3Accesses(method, url, headers, body), denied: s3AccessDenied },
};

/** The services a function's proxy stands in front of: the SDK variable and the engine's address. */
export type Upstreams = Partial<Record<keyof typeof SERVICES, string>>;

/** The endpoint variables of each service, as the SDK reads them. */
export const ENDPOINT_VARIABLES: Record<keyof typeof SERVICES, string> = {
  dynamodb: 'AWS_ENDPOINT_URL_DYNAMODB',
  dynamodbstreams: 'AWS_ENDPOINT_URL_DYNAMODB_STREAMS',
  sqs: 'AWS_ENDPOINT_URL_SQS',
  iotdata: 'AWS_ENDPOINT_URL_IOT_DATA_PLANE',
  iot: 'AWS_ENDPOINT_URL_IOT',
  s3: 'AWS_ENDPOINT_URL_S3',
};

const readAll = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

// Headers a proxy must not pass on: node's fetch sets its own.
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'expect']);

/**
 * Passes an S3 request on to the local S3 as it came, its Host header included: a presigned URL
 * is signed for the host it names (this proxy's), and the local S3 checks that signature. A GET or
 * HEAD of a missing key becomes `missing`'s refusal when it gives one.
 */
const forwardS3 = (
  req: IncomingMessage,
  res: ServerResponse,
  upstream: string,
  body: Buffer | undefined,
  missing: (path: string) => string | undefined,
  refuse: (message: string) => void,
) =>
  new Promise<void>((resolve, reject) => {
    const target = new URL(upstream);
    const path = req.url ?? '/';
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'connection' && k !== 'keep-alive'));
    const out = httpRequest({ host: target.hostname, port: target.port, method: req.method, path, headers }, (answer) => {
      const key = path.split('?')[0].split('/').slice(2).join('/');
      const refusal = answer.statusCode === 404 && key && (req.method === 'GET' || req.method === 'HEAD') ? missing(path) : undefined;
      if (refusal) {
        answer.resume();
        refuse(refusal);
        return resolve();
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on('end', () => resolve());
    });
    out.on('error', reject);
    if (body) out.end(body);
    else req.pipe(out);
  });

export interface RecordingProxy {
  /** Base URL of each service's proxy, for the function's AWS_ENDPOINT_URL_* variables. */
  endpoints: Record<string, string>;
  stop: () => Promise<void>;
}

/**
 * Starts one proxy per service for a function: each request is recorded, checked against the
 * function's statements and refused (AccessDenied, in the service's format) or forwarded to the
 * engine. A request whose action it cannot read is refused too: a call nobody can check is not let
 * through.
 */
export const startRecordingProxy = async (options: {
  functionName: string;
  roleName: string;
  statements: () => readonly PolicyStatement[];
  upstreams: Upstreams;
  arnContext: ArnContext;
  record: (call: CallRecord) => void;
}): Promise<RecordingProxy> => {
  const servers: Server[] = [];
  const endpoints: Record<string, string> = {};
  for (const [service, upstream] of Object.entries(options.upstreams) as Array<[keyof typeof SERVICES, string]>) {
    const codec = SERVICES[service];
    const server = createServer((req, res) => {
      void (async () => {
        // S3 objects pass through as streams (an upload may be gigabytes); only S3's POSTs (a
        // DeleteObjects list, a multipart completion) are read, for what they name.
        const streamed = service === 's3' && req.method !== 'POST';
        const body = streamed ? Buffer.alloc(0) : await readAll(req);
        const text = body.toString('utf8');
        let accesses: Access[] | undefined;
        try {
          accesses = codec.accesses(options.arnContext, { headers: req.headers, method: req.method ?? 'GET', url: req.url ?? '/' }, text);
        } catch {
          accesses = undefined;
        }
        const refuse = (message: string) => {
          const denied = codec.denied(message);
          if (streamed) req.resume();
          const head = req.method === 'HEAD';
          res.writeHead(denied.status, { ...denied.headers, 'content-length': head ? '0' : String(Buffer.byteLength(denied.body)) });
          res.end(head ? undefined : denied.body);
        };
        const notAuthorized = (access: Access) => {
          const why =
            evaluate(options.statements(), access.action, access.resource, access.leadingKeys) === 'explicit-deny'
              ? 'with an explicit deny in an identity-based policy'
              : `because no identity-based policy allows the ${access.action} action`;
          return `User: arn:aws:sts::${options.arnContext.account}:assumed-role/${options.roleName}/${options.functionName} is not authorized to perform: ${access.action} on resource: ${access.resource} ${why}`;
        };
        // Only an S3 CORS preflight asks for nothing.
        if (!accesses || (!accesses.length && service !== 's3')) return refuse(`The local IAM check could not read the action of this ${service} request.`);
        const refused: Access[] = [];
        for (const access of accesses) {
          const decision = evaluate(options.statements(), access.action, access.resource, access.leadingKeys);
          const { leadingKeys: _keys, ...asked } = access;
          options.record({ function: options.functionName, ...asked, decision });
          if (decision !== 'allow') refused.push(access);
        }
        if (refused.length) return refuse(notAuthorized(refused[0]));
        if (service === 's3') {
          // S3 answers a missing key 404 only to who may list the bucket, 403 to anyone else. The
          // 403 is recorded as no refusal: a device that downloads a deleted image with a URL a
          // publisher of @fota signed gets it, as on AWS, and no grant is missing for that.
          // https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
          const missing = (path: string) => {
            const bucket = decodeURIComponent(path.split('/')[1] ?? '');
            const list: Access = { action: 's3:ListBucket', resource: s3Arn(bucket) };
            if (evaluate(options.statements(), list.action, list.resource) !== 'allow') return notAuthorized(list);
            options.record({ function: options.functionName, ...list, decision: 'allow' });
            return undefined;
          };
          return forwardS3(req, res, upstream, streamed ? undefined : body, missing, refuse);
        }
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => !HOP_HEADERS.has(k) && v !== undefined)) as Record<string, string>;
        const answer = await fetch(`${upstream}${req.url ?? '/'}`, { method: req.method, headers, body: body.length ? body : undefined });
        const out = Buffer.from(await answer.arrayBuffer());
        const outHeaders: Record<string, string> = {};
        answer.headers.forEach((value, key) => {
          if (!HOP_HEADERS.has(key) && key !== 'content-encoding') outHeaders[key] = value;
        });
        res.writeHead(answer.status, { ...outHeaders, 'content-length': String(out.length) });
        res.end(out);
      })().catch((error: Error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`recording proxy: ${error.message}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    servers.push(server);
    endpoints[service] = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }
  return {
    endpoints,
    stop: async () => {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
};

/** A permission a role grants: one action pattern on one resource pattern. */
export interface Grant {
  function: string;
  action: string;
  resource: string;
}

/**
 * The Allow grants of each function that no recorded call used. Actions the function's code
 * never issues itself (CloudWatch Logs, which the Lambda service writes for it) are left out.
 */
export const unusedGrants = (roles: Record<string, readonly PolicyStatement[]>, calls: readonly CallRecord[], ignore: RegExp = /^logs:/): Grant[] => {
  const unused: Grant[] = [];
  for (const [fn, statements] of Object.entries(roles)) {
    const used = calls.filter((c) => c.function === fn && c.decision === 'allow');
    for (const statement of statements) {
      if (statement.Effect !== 'Allow') continue;
      for (const action of list(statement.Action)) {
        if (ignore.test(action)) continue;
        for (const resource of list(statement.Resource)) {
          if (!used.some((c) => wildcardMatch(action, c.action, true) && wildcardMatch(resource, c.resource))) unused.push({ function: fn, action, resource });
        }
      }
    }
  }
  return unused;
};
