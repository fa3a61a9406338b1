import { createServer, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { queryParameters, S3Refusal, verifySignature } from './s3-auth';
import { CORS_REFUSAL_MESSAGE, corsHeaders, corsRuleFor, preflightHeaders, type CorsRule } from './s3-cors';
import { s3DataFolder, type S3DataFolder } from './s3-data-folder';
import { engineClient, readBody, type EngineClient } from './s3-engine-client';
import { multipartUploads, type MultipartUploads } from './s3-multipart';
import { checkPayload, decodeAwsChunked, type CheckedPayload } from './s3-payload';
import { errorXml, unescapeXml } from './s3-xml';

export { consoleCorsRules, type CorsRule } from './s3-cors';

/**
 * The local S3: fauxqs, the SQS emulator the local runtime already runs, also serves S3's REST
 * API (path-style), but it checks no signature, no expiry and no checksum, and keeps no checksum.
 * This front stands before it and does what S3 does there, so that presigned URLs behave as on
 * AWS: every request's SigV4 signature (header or presigned URL) is checked with the SDK's own
 * signer (local/s3-auth.ts) and a presigned URL's expiry; an upload's bytes are checked against
 * its signed payload hash, Content-MD5 and `x-amz-checksum-*` (local/s3-payload.ts); the SHA-256
 * it was stored with is kept with the object (as metadata S3's clients never see) and answered in
 * checksum mode; the buckets answer CORS as their configuration says. What passes goes to fauxqs.
 * With a data folder, objects are also written there and put back at the next start (fauxqs keeps
 * them in memory only). Where this does less than S3, docs/local-runtime.md ("The local S3") says so.
 */

export interface LocalS3Options {
  /** fauxqs's address (its S3 API is path-style at its root). */
  engine: string;
  /** Port of the front; a free one when 0 or absent. */
  port?: number;
  /** The access keys the front accepts, with their secrets. */
  credentials: Readonly<Record<string, string>>;
  /** Where objects are kept between runs; in memory only when absent. */
  dataDir?: string;
  /** The clock presigned URLs expire by. */
  now?: () => Date;
}

export interface LocalS3 {
  /** The value of AWS_ENDPOINT_URL_S3 for clients of the local S3. */
  endpoint: string;
  /** Creates a bucket (once) with its CORS rules, and puts back the objects a data folder kept of it. */
  createBucket: (name: string, cors?: readonly CorsRule[]) => Promise<void>;
  stop: () => Promise<void>;
}

// Kept with each object in fauxqs: the SHA-256 the upload was checked against. Never answered as
// metadata; answered as x-amz-checksum-sha256 in checksum mode, as S3 does.
const CHECKSUM_META = 'x-amz-meta-fleetstream-local-checksum-sha256';
// S3's largest single PUT. https://docs.aws.amazon.com/AmazonS3/latest/userguide/upload-objects.html
const MAX_PUT_BYTES = 5 * 1024 ** 3;

// Headers of the client's request that the engine must not see: the signing, the transfer, and aws-chunked's own.
const DROPPED_REQUEST_HEADERS = new Set([
  'host',
  'authorization',
  'connection',
  'content-length',
  'transfer-encoding',
  'expect',
  'keep-alive',
  'x-amz-content-sha256',
  'x-amz-decoded-content-length',
  'x-amz-trailer',
  CHECKSUM_META,
]);

/** What the front holds while it runs: its engine, its data folder, the buckets' CORS rules and the uploads in progress. */
interface S3Front {
  options: LocalS3Options;
  now: () => Date;
  engine: EngineClient;
  folder: S3DataFolder;
  cors: Map<string, readonly CorsRule[]>;
  uploads: MultipartUploads;
  nextRequestId: () => string;
}

/** A request as the front reads it: its path-style bucket and key, its query, and the headers of every answer. */
interface S3Request {
  method: string;
  url: string;
  rawPath: string;
  rawQuery: string;
  bucket: string;
  key: string;
  query: Record<string, string | string[]>;
  origin: string | undefined;
  requestId: string;
  /** The request ID headers every answer carries. */
  base: OutgoingHttpHeaders;
}

const parseRequest = (req: IncomingMessage, requestId: string): S3Request => {
  const method = req.method ?? 'GET';
  const url = req.url ?? '/';
  const at = url.indexOf('?');
  const rawPath = at < 0 ? url : url.slice(0, at);
  const rawQuery = at < 0 ? '' : url.slice(at + 1);
  const [, bucketSegment = '', ...keySegments] = rawPath.split('/');
  return {
    method,
    url,
    rawPath,
    rawQuery,
    bucket: decodeURIComponent(bucketSegment),
    key: decodeURIComponent(keySegments.join('/')),
    query: queryParameters(rawQuery),
    origin: typeof req.headers.origin === 'string' ? req.headers.origin : undefined,
    requestId,
    base: { 'x-amz-request-id': requestId, 'x-amz-id-2': requestId },
  };
};

/** Answers S3's error document for a refusal (its length only, for HEAD). */
const refuse = (res: ServerResponse, request: S3Request, refusal: S3Refusal, extraHeaders: OutgoingHttpHeaders = {}) => {
  const xml = errorXml(refusal, request.rawPath, request.requestId);
  const head = request.method === 'HEAD';
  res.writeHead(refusal.status, {
    ...request.base,
    ...extraHeaders,
    'content-type': 'application/xml',
    'content-length': head ? '0' : String(Buffer.byteLength(xml)),
  });
  res.end(head ? undefined : xml);
};

/** A preflight is never signed: S3 answers it from the bucket's CORS rules alone. */
const answerPreflight = (front: S3Front, req: IncomingMessage, res: ServerResponse, request: S3Request) => {
  const headers = preflightHeaders(front.cors.get(request.bucket), req.headers);
  req.resume();
  if (!headers) return refuse(res, request, new S3Refusal(403, 'AccessForbidden', CORS_REFUSAL_MESSAGE));
  res.writeHead(200, { ...request.base, ...headers, 'content-length': '0' });
  res.end();
};

/**
 * Checks the request's signature and reads the body of a PUT or POST, checked against its signed
 * payload hash and checksums (an object's upload). @throws S3Refusal for what S3 would refuse
 */
const readSignedBody = async (front: S3Front, req: IncomingMessage, request: S3Request): Promise<{ body?: Buffer; checked: CheckedPayload }> => {
  const { method, rawPath, rawQuery, key } = request;
  const verified = await verifySignature(
    { method, rawPath, rawQuery, headers: req.headers },
    (accessKeyId) => front.options.credentials[accessKeyId],
    front.now(),
  );
  if (method !== 'PUT' && method !== 'POST') {
    req.resume();
    return { checked: {} };
  }
  const encodings = String(req.headers['content-encoding'] ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const awsChunked = encodings.includes('aws-chunked');
  // S3 takes no plain chunked transfer: the length is part of what it checks.
  if (req.headers['content-length'] === undefined && !awsChunked)
    throw new S3Refusal(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
  const raw = await readBody(req, MAX_PUT_BYTES + 64 * 1024);
  const decoded = awsChunked ? decodeAwsChunked(raw) : { payload: raw, trailers: {} };
  if (decoded.payload.length > MAX_PUT_BYTES)
    throw new S3Refusal(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', { MaxSizeAllowed: String(MAX_PUT_BYTES) });
  const body = decoded.payload;
  const checked = method === 'PUT' && key ? checkPayload(body, req.headers, decoded.trailers, verified.payloadHash) : {};
  if (awsChunked) req.headers['content-encoding'] = encodings.filter((e) => e !== 'aws-chunked').join(', ') || undefined;
  return { body, checked };
};

/** PutObject: stored in fauxqs (and the data folder) with the SHA-256 it was checked against. */
const putObject = async (
  front: S3Front,
  res: ServerResponse,
  request: S3Request,
  body: Buffer,
  checked: CheckedPayload,
  forwarded: OutgoingHttpHeaders,
  allowed: OutgoingHttpHeaders,
) => {
  const { bucket, key } = request;
  const stored = checked.checksumSha256 ? { 'x-amz-checksum-sha256': checked.checksumSha256, 'x-amz-checksum-type': 'FULL_OBJECT' } : {};
  if (checked.checksumSha256) forwarded[CHECKSUM_META] = checked.checksumSha256;
  const etag = await front.engine.put(bucket, key, body, forwarded);
  front.folder.keep(bucket, key, body, forwarded as IncomingHttpHeaders);
  res.writeHead(200, { ...request.base, ...allowed, ...(etag ? { etag } : {}), ...stored, 'content-length': '0' });
  res.end();
};

/** Headers of a proxied answer that are the connection's, not the answer's. */
const withoutHopHeaders = (headers: OutgoingHttpHeaders) => {
  delete headers.connection;
  delete headers['keep-alive'];
  return headers;
};

/** Relays fauxqs's answer, with the stored SHA-256 in checksum mode; resolves when it has been sent. */
const relayAnswer = async (req: IncomingMessage, res: ServerResponse, request: S3Request, answer: IncomingMessage, allowed: OutgoingHttpHeaders) => {
  const { method, key, query } = request;
  const status = answer.statusCode ?? 502;
  const headers = withoutHopHeaders({ ...answer.headers, ...request.base, ...allowed });
  const keptChecksum = answer.headers[CHECKSUM_META];
  delete headers[CHECKSUM_META];
  // Checksum mode (a header, or a presigned GET's query parameter): the stored SHA-256, for the whole object only.
  const checksumMode = req.headers['x-amz-checksum-mode'] === 'ENABLED' || query['x-amz-checksum-mode'] === 'ENABLED';
  if ((method === 'GET' || method === 'HEAD') && key && checksumMode && keptChecksum && !req.headers.range && status === 200) {
    Object.assign(headers, { 'x-amz-checksum-sha256': keptChecksum, 'x-amz-checksum-type': 'FULL_OBJECT' });
  }
  res.writeHead(status, headers);
  answer.pipe(res);
  await new Promise<void>((resolve) => res.once('close', () => resolve()));
};

/** What a request fauxqs carried out changes in the uploads in progress and the data folder. */
const recordOutcome = async (front: S3Front, req: IncomingMessage, request: S3Request, answer: IncomingMessage, body: Buffer | undefined) => {
  const { method, bucket, key, query } = request;
  const uploadId = typeof query.uploadId === 'string' ? query.uploadId : undefined;
  if (method === 'PUT' && uploadId !== undefined && query.partNumber !== undefined) {
    front.uploads.partUploaded(uploadId, Number(query.partNumber), {
      etag: String(answer.headers.etag),
      size: body!.length,
      lastModified: front.now().toISOString(),
    });
  } else if (uploadId !== undefined && (method === 'DELETE' || method === 'POST')) front.uploads.ended(uploadId);
  if (method === 'DELETE' && key && query.uploadId === undefined) front.folder.forget(bucket, key);
  else if (method === 'DELETE' && !key) front.folder.forgetBucket(bucket);
  else if (method === 'POST' && !key && query.delete !== undefined) {
    for (const [, deleted] of (body ?? Buffer.alloc(0)).toString('utf8').matchAll(/<Key>([\s\S]*?)<\/Key>/g)) front.folder.forget(bucket, unescapeXml(deleted));
  } else if ((method === 'POST' && query.uploadId !== undefined) || (method === 'PUT' && req.headers['x-amz-copy-source'] !== undefined)) {
    await front.folder.keepFromEngine(bucket, key);
  }
};

/** One request to the front: preflight, signature and payload checks, then fauxqs, and what it changed. */
const handle = async (front: S3Front, req: IncomingMessage, res: ServerResponse) => {
  const request = parseRequest(req, front.nextRequestId());
  const { method, url, bucket, key, query, origin } = request;
  if (method === 'OPTIONS') return answerPreflight(front, req, res, request);
  const rule = origin ? corsRuleFor(front.cors.get(bucket), origin, method) : undefined;
  const allowed = rule ? corsHeaders(rule, origin!) : {};

  let payload: { body?: Buffer; checked: CheckedPayload };
  try {
    payload = await readSignedBody(front, req, request);
  } catch (error) {
    if (error instanceof S3Refusal) {
      req.resume();
      return refuse(res, request, error, allowed);
    }
    throw error;
  }
  const { body, checked } = payload;

  const forwarded: OutgoingHttpHeaders = Object.fromEntries(
    Object.entries(req.headers).filter(([name, value]) => value !== undefined && !DROPPED_REQUEST_HEADERS.has(name)),
  );
  const isObjectPut =
    method === 'PUT' && key !== '' && query.partNumber === undefined && query.uploadId === undefined && req.headers['x-amz-copy-source'] === undefined;
  if (isObjectPut) return putObject(front, res, request, body!, checked, forwarded, allowed);

  const uploadId = typeof query.uploadId === 'string' ? query.uploadId : undefined;
  if (method === 'GET' && key && uploadId !== undefined) {
    // ListParts, which fauxqs lacks: from what the front saw of the upload.
    let xml: string;
    try {
      xml = front.uploads.listParts(uploadId, bucket, key, query);
    } catch (error) {
      if (!(error instanceof S3Refusal)) throw error;
      return refuse(res, request, error, allowed);
    }
    res.writeHead(200, { ...request.base, ...allowed, 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(xml)) });
    return res.end(xml);
  }

  const answer = await front.engine.send(method, url, forwarded, body);
  const status = answer.statusCode ?? 502;
  if (method === 'POST' && key && query.uploads !== undefined && status === 200) {
    // CreateMultipartUpload: the new upload's ID, for ListParts.
    const created = await front.engine.read(answer);
    const id = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body.toString('utf8'))?.[1];
    if (id) front.uploads.opened(unescapeXml(id), bucket, key);
    const headers = withoutHopHeaders({ ...created.headers, ...request.base, ...allowed, 'content-length': String(created.body.length) });
    delete headers['transfer-encoding'];
    res.writeHead(status, headers);
    return res.end(created.body);
  }
  await relayAnswer(req, res, request, answer, allowed);
  if (status < 300) await recordOutcome(front, req, request, answer, body);
};

/**
 * Starts the local S3 front on `port` before fauxqs's S3 at `engine`. With `dataDir`, the buckets
 * and objects kept there are created again in fauxqs first.
 */
export const startLocalS3 = async (options: LocalS3Options): Promise<LocalS3> => {
  const engine = engineClient(options.engine);
  let requests = 0;
  const front: S3Front = {
    options,
    now: options.now ?? (() => new Date()),
    engine,
    folder: s3DataFolder(options.dataDir, engine),
    cors: new Map(),
    uploads: multipartUploads(),
    nextRequestId: () => `LOCAL${(++requests).toString(16).toUpperCase().padStart(11, '0')}`,
  };

  await front.folder.restore();
  const server: Server = createServer((req, res) => {
    handle(front, req, res).catch((error: Error) => {
      if (res.headersSent) return res.destroy(error);
      const xml = errorXml(new S3Refusal(500, 'InternalError', `We encountered an internal error: ${error.message}`), req.url ?? '/', 'LOCAL');
      res.writeHead(500, { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(xml)) });
      res.end(xml);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    createBucket: async (name, rules) => {
      await engine.call('PUT', `/${encodeURIComponent(name)}`);
      if (rules) front.cors.set(name, rules);
      front.folder.addBucket(name);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        engine.destroy();
      }),
  };
};
