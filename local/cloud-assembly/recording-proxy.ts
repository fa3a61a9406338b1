import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dynamoAccesses, iotAccesses, iotDataAccesses, s3Accesses, s3Arn, sesAccesses, sqsAccesses, streamsAccesses, type ArnContext } from './iam-accesses';
import { evaluate, type Access, type CallRecord, type PolicyStatement } from './iam-policy';
import { isItemWrite, tableWritten } from '../dynamodb-writes';

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
  // SES v2 (REST JSON) answers a refused call with AccessDeniedException (403).
  sesv2: { prefix: 'ses', accesses: (ctx, { method, url }, body) => sesAccesses(ctx, method, url, body), denied: restAccessDenied('AccessDeniedException') },
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
  sesv2: 'AWS_ENDPOINT_URL_SESV2',
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

/** Whose calls a proxy checks: the function, its role and statements, and where each call is recorded. */
export interface RecordingProxyOptions {
  functionName: string;
  roleName: string;
  statements: () => readonly PolicyStatement[];
  upstreams: Upstreams;
  arnContext: ArnContext;
  record: (call: CallRecord) => void;
}

/** IAM's AccessDenied message for an access the function's statements refuse. */
const notAuthorized = (options: RecordingProxyOptions, access: Access) => {
  const why =
    evaluate(options.statements(), access.action, access.resource, access.leadingKeys, access.context) === 'explicit-deny'
      ? 'with an explicit deny in an identity-based policy'
      : `because no identity-based policy allows the ${access.action} action`;
  return `User: arn:aws:sts::${options.arnContext.account}:assumed-role/${options.roleName}/${options.functionName} is not authorized to perform: ${access.action} on resource: ${access.resource} ${why}`;
};

/** Records each access with IAM's decision; returns the first refused, if any. */
const checkAccesses = (options: RecordingProxyOptions, accesses: readonly Access[]): Access | undefined => {
  const refused: Access[] = [];
  for (const access of accesses) {
    const decision = evaluate(options.statements(), access.action, access.resource, access.leadingKeys, access.context);
    const { leadingKeys: _keys, context: _context, ...asked } = access;
    options.record({ function: options.functionName, ...asked, decision });
    if (decision !== 'allow') refused.push(access);
  }
  return refused[0];
};

/**
 * S3 answers a missing key 404 only to who may list the bucket, 403 to anyone else. The 403 is
 * recorded as no refusal: a device that downloads a deleted image with a URL a publisher of @fota
 * signed gets it, as on AWS, and no grant is missing for that.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 */
const missingKeyRefusal = (options: RecordingProxyOptions) => (path: string) => {
  const bucket = decodeURIComponent(path.split('/')[1] ?? '');
  const list: Access = { action: 's3:ListBucket', resource: s3Arn(bucket) };
  if (evaluate(options.statements(), list.action, list.resource) !== 'allow') return notAuthorized(options, list);
  options.record({ function: options.functionName, ...list, decision: 'allow' });
  return undefined;
};

/** Passes a request read whole on to its engine and answers with the engine's answer, hop-by-hop headers left out. */
const forwardBuffered = async (req: IncomingMessage, res: ServerResponse, upstream: string, body: Buffer) => {
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => !HOP_HEADERS.has(k) && v !== undefined)) as Record<string, string>;
  const answer = await fetch(`${upstream}${req.url ?? '/'}`, { method: req.method, headers, body: body.length ? body : undefined });
  const out = Buffer.from(await answer.arrayBuffer());
  const outHeaders: Record<string, string> = {};
  answer.headers.forEach((value, key) => {
    if (!HOP_HEADERS.has(key) && key !== 'content-encoding') outHeaders[key] = value;
  });
  res.writeHead(answer.status, { ...outHeaders, 'content-length': String(out.length) });
  res.end(out);
};

/** One service's proxy: reads what a request asks for, records and checks it, and refuses or forwards it. */
const proxyHandler =
  (options: RecordingProxyOptions, service: keyof typeof SERVICES, upstream: string) => async (req: IncomingMessage, res: ServerResponse) => {
    const codec = SERVICES[service];
    // S3 objects pass through as streams (an upload may be gigabytes); only S3's POSTs (a
    // DeleteObjects list, a multipart completion) are read, for what they name.
    const streamed = service === 's3' && req.method !== 'POST';
    const body = streamed ? Buffer.alloc(0) : await readAll(req);
    let accesses: Access[] | undefined;
    try {
      accesses = codec.accesses(options.arnContext, { headers: req.headers, method: req.method ?? 'GET', url: req.url ?? '/' }, body.toString('utf8'));
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
    // Only an S3 CORS preflight asks for nothing.
    if (!accesses || (!accesses.length && service !== 's3')) return refuse(`The local IAM check could not read the action of this ${service} request.`);
    const refused = checkAccesses(options, accesses);
    if (refused) return refuse(notAuthorized(options, refused));
    if (service === 's3') return forwardS3(req, res, upstream, streamed ? undefined : body, missingKeyRefusal(options), refuse);
    await forwardBuffered(req, res, upstream, body);
    // The host's stream pollers read at once what the function wrote (local/dynamodb-writes.ts).
    if (service === 'dynamodb' && isItemWrite(targetOf(req.headers).split('.')[1] ?? '')) tableWritten();
  };

/**
 * Starts one proxy per service for a function: each request is recorded, checked against the
 * function's statements and refused (AccessDenied, in the service's format) or forwarded to the
 * engine. A request whose action it cannot read is refused too: a call nobody can check is not let
 * through.
 */
export const startRecordingProxy = async (options: RecordingProxyOptions): Promise<RecordingProxy> => {
  const servers: Server[] = [];
  const endpoints: Record<string, string> = {};
  for (const [service, upstream] of Object.entries(options.upstreams) as Array<[keyof typeof SERVICES, string]>) {
    const handle = proxyHandler(options, service, upstream);
    const server = createServer((req, res) => {
      handle(req, res).catch((error: Error) => {
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
