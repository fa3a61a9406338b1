import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { join } from 'node:path';
import type { BucketDefinition } from '../lambdas/buckets';
import { queryParameters, S3Refusal, verifySignature, type Verified } from './s3-auth';
import { checkPayload, decodeAwsChunked, type CheckedPayload } from './s3-payload';

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

/** A CORS rule of a bucket, as S3's CORSRule. */
export interface CorsRule {
  allowedOrigins: readonly string[];
  allowedMethods: readonly string[];
  allowedHeaders: readonly string[];
  exposedHeaders: readonly string[];
  maxAgeSeconds?: number;
}

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
// fauxqs takes bodies of up to 11 MiB: a larger object is handed to it as a multipart upload of
// parts this size (S3's parts are 5 MiB to 5 GiB, but for the last).
const ENGINE_PART_BYTES = 8 * 1024 * 1024;
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

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };
const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]);
const unescapeXml = (text: string) => text.replace(/&(amp|lt|gt|quot|apos);/g, (entity) => Object.entries(XML_ESCAPES).find(([, e]) => e === entity)![0]);

/** S3's error document. https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#RESTErrorResponses */
const errorXml = (refusal: S3Refusal, resource: string, requestId: string) =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<Error><Code>${refusal.code}</Code><Message>${escapeXml(refusal.message)}</Message>`,
    ...Object.entries(refusal.extra).map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`),
    `<Resource>${escapeXml(resource)}</Resource><RequestId>${requestId}</RequestId></Error>`,
  ].join('');

const readBody = (req: IncomingMessage, max: number) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.destroy();
        reject(new S3Refusal(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', { MaxSizeAllowed: String(max) }));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** `*` in an allowed origin or header matches any run of characters (S3 takes one per value). */
const matches = (pattern: string, value: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 'i').test(value);

/** The CORS rule of a bucket that admits an origin, a method and request headers: S3 takes the first that does. */
const corsRuleFor = (rules: readonly CorsRule[] | undefined, origin: string, method: string, headers: string[] = []) =>
  rules?.find(
    (rule) =>
      rule.allowedOrigins.some((o) => matches(o, origin)) &&
      rule.allowedMethods.includes(method) &&
      headers.every((h) => rule.allowedHeaders.some((a) => matches(a, h))),
  );

/** The CORS headers S3 adds to an answer for an origin a rule admits. https://docs.aws.amazon.com/AmazonS3/latest/userguide/cors.html */
const corsHeaders = (rule: CorsRule, origin: string): OutgoingHttpHeaders => ({
  'access-control-allow-origin': rule.allowedOrigins.includes('*') ? '*' : origin,
  'access-control-allow-methods': rule.allowedMethods.join(', '),
  ...(rule.exposedHeaders.length ? { 'access-control-expose-headers': rule.exposedHeaders.join(', ') } : {}),
  ...(rule.allowedOrigins.includes('*') ? {} : { 'access-control-allow-credentials': 'true' }),
  vary: 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method',
});

/** A bucket's CORS rules as the stack writes them (lambdas/buckets.ts), for the console at `origins`. */
export const consoleCorsRules = (definition: BucketDefinition, origins: readonly string[]): CorsRule[] =>
  definition.consoleCors
    ? [
        {
          allowedOrigins: origins,
          allowedMethods: definition.consoleCors.methods,
          allowedHeaders: definition.consoleCors.headers,
          exposedHeaders: definition.consoleCors.exposedHeaders,
          maxAgeSeconds: definition.consoleCors.maxAgeSeconds,
        },
      ]
    : [];

/** A part of a multipart upload, as ListParts answers it. */
interface UploadedPart {
  etag: string;
  size: number;
  lastModified: string;
}

/** A multipart upload in progress: its object, and its parts by number. */
interface OpenUpload {
  bucket: string;
  key: string;
  parts: Map<number, UploadedPart>;
}

// ListParts answers at most this many parts a page (S3's default and largest max-parts).
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListParts.html
const LIST_PARTS_MAX = 1000;

/** S3's ListPartsResult for one page of an upload's parts, after `marker`. */
const listPartsXml = (uploadId: string, upload: OpenUpload, marker: number, maxParts: number) => {
  const numbers = [...upload.parts.keys()].filter((n) => n > marker).sort((a, b) => a - b);
  const page = numbers.slice(0, maxParts);
  const truncated = numbers.length > page.length;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    `<Bucket>${escapeXml(upload.bucket)}</Bucket><Key>${escapeXml(upload.key)}</Key><UploadId>${escapeXml(uploadId)}</UploadId>`,
    `<PartNumberMarker>${marker}</PartNumberMarker>`,
    ...(page.length ? [`<NextPartNumberMarker>${page[page.length - 1]}</NextPartNumberMarker>`] : []),
    `<MaxParts>${maxParts}</MaxParts><IsTruncated>${truncated}</IsTruncated>`,
    ...page.map((n) => {
      const part = upload.parts.get(n)!;
      return `<Part><PartNumber>${n}</PartNumber><LastModified>${part.lastModified}</LastModified><ETag>${escapeXml(part.etag)}</ETag><Size>${part.size}</Size></Part>`;
    }),
    '<StorageClass>STANDARD</StorageClass></ListPartsResult>',
  ].join('');
};

/** An object as a data folder keeps it: its bytes beside `<hash>.json` (key, content type, metadata). */
interface KeptObject {
  key: string;
  contentType: string;
  metadata: Record<string, string>;
}

/**
 * Starts the local S3 front on `port` before fauxqs's S3 at `engine`. With `dataDir`, the buckets
 * and objects kept there are created again in fauxqs first.
 */
export const startLocalS3 = async (options: LocalS3Options): Promise<LocalS3> => {
  const now = options.now ?? (() => new Date());
  const engine = new URL(options.engine);
  const agent = new Agent({ keepAlive: true });
  const cors = new Map<string, readonly CorsRule[]>();
  const kept = options.dataDir && join(options.dataDir, 's3');
  // fauxqs has no ListParts: the front keeps what each upload in progress holds, as it passes.
  const uploads = new Map<string, OpenUpload>();
  let requests = 0;

  /** Sends a request to fauxqs; resolves with its answer, unread. */
  const toEngine = (method: string, path: string, headers: OutgoingHttpHeaders = {}, body?: Buffer) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(
        { host: engine.hostname, port: engine.port, method, path, agent, headers: { ...headers, 'content-length': String(body?.length ?? 0) } },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
  const readAnswer = async (answer: IncomingMessage) => ({ status: answer.statusCode ?? 502, headers: answer.headers, body: await readBody(answer, Infinity) });
  const engineCall = async (method: string, path: string, headers?: OutgoingHttpHeaders, body?: Buffer) => {
    const answer = await readAnswer(await toEngine(method, path, headers, body));
    if (answer.status >= 300) throw new Error(`local S3 engine: ${method} ${path} answered ${answer.status}: ${answer.body.toString('utf8').slice(0, 300)}`);
    return answer;
  };
  const objectPath = (bucket: string, key: string) => `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;

  /**
   * Stores an object in fauxqs: in one PUT, or, past its body limit, as a multipart upload of
   * ENGINE_PART_BYTES parts. Resolves with its ETag.
   */
  const putInEngine = async (bucket: string, key: string, body: Buffer, headers: OutgoingHttpHeaders) => {
    const path = objectPath(bucket, key);
    if (body.length <= ENGINE_PART_BYTES) return (await engineCall('PUT', path, headers, body)).headers.etag;
    const created = await engineCall('POST', `${path}?uploads`, headers);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body.toString('utf8'))![1];
    const parts: string[] = [];
    for (let at = 0, part = 1; at < body.length; at += ENGINE_PART_BYTES, part++) {
      const uploaded = await engineCall(
        'PUT',
        `${path}?partNumber=${part}&uploadId=${encodeURIComponent(uploadId)}`,
        {},
        body.subarray(at, at + ENGINE_PART_BYTES),
      );
      parts.push(`<Part><PartNumber>${part}</PartNumber><ETag>${escapeXml(String(uploaded.headers.etag))}</ETag></Part>`);
    }
    const done = await engineCall(
      'POST',
      `${path}?uploadId=${encodeURIComponent(uploadId)}`,
      { 'content-type': 'application/xml' },
      Buffer.from(`<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`),
    );
    return /<ETag>([^<]+)<\/ETag>/.exec(done.body.toString('utf8'))?.[1]?.replace(/&quot;/g, '"');
  };

  // The data folder: `<dataDir>/s3/<bucket>/<sha256 of key>` (bytes) and `.json` (what else S3 keeps of it).
  const keptPath = (bucket: string, key: string) => join(kept!, encodeURIComponent(bucket), createHash('sha256').update(key).digest('hex'));
  const keep = (bucket: string, key: string, body: Buffer, headers: IncomingHttpHeaders) => {
    if (!kept) return;
    const metadata = Object.fromEntries(
      Object.entries(headers)
        .filter(([name]) => name.startsWith('x-amz-meta-'))
        .map(([name, value]) => [name, String(value)]),
    );
    const object: KeptObject = { key, contentType: String(headers['content-type'] ?? 'application/octet-stream'), metadata };
    const path = keptPath(bucket, key);
    mkdirSync(join(kept, encodeURIComponent(bucket)), { recursive: true });
    writeFileSync(path, body);
    writeFileSync(`${path}.json`, JSON.stringify(object));
  };
  const forget = (bucket: string, key: string) => {
    if (!kept) return;
    const path = keptPath(bucket, key);
    rmSync(path, { force: true });
    rmSync(`${path}.json`, { force: true });
  };
  /** Keeps what fauxqs now holds at a key (after a copy or a completed multipart upload). */
  const keepFromEngine = async (bucket: string, key: string) => {
    if (!kept) return;
    const answer = await readAnswer(await toEngine('GET', objectPath(bucket, key)));
    if (answer.status === 200) keep(bucket, key, answer.body, answer.headers);
  };
  const restore = async () => {
    if (!kept || !existsSync(kept)) return;
    for (const dir of readdirSync(kept)) {
      const bucket = decodeURIComponent(dir);
      await engineCall('PUT', `/${encodeURIComponent(bucket)}`);
      for (const file of readdirSync(join(kept, dir)).filter((f) => f.endsWith('.json'))) {
        const object = JSON.parse(readFileSync(join(kept, dir, file), 'utf8')) as KeptObject;
        await putInEngine(bucket, object.key, readFileSync(join(kept, dir, file.slice(0, -'.json'.length))), {
          'content-type': object.contentType,
          ...object.metadata,
        });
      }
    }
  };

  const secretOf = (accessKeyId: string) => options.credentials[accessKeyId];

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const requestId = `LOCAL${(++requests).toString(16).toUpperCase().padStart(11, '0')}`;
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const at = url.indexOf('?');
    const rawPath = at < 0 ? url : url.slice(0, at);
    const rawQuery = at < 0 ? '' : url.slice(at + 1);
    const [, bucketSegment = '', ...keySegments] = rawPath.split('/');
    const bucket = decodeURIComponent(bucketSegment);
    const key = decodeURIComponent(keySegments.join('/'));
    const query = queryParameters(rawQuery);
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    const base: OutgoingHttpHeaders = { 'x-amz-request-id': requestId, 'x-amz-id-2': requestId };

    const refuse = (refusal: S3Refusal, extraHeaders: OutgoingHttpHeaders = {}) => {
      const xml = errorXml(refusal, rawPath, requestId);
      res.writeHead(refusal.status, {
        ...base,
        ...extraHeaders,
        'content-type': 'application/xml',
        'content-length': method === 'HEAD' ? '0' : String(Buffer.byteLength(xml)),
      });
      res.end(method === 'HEAD' ? undefined : xml);
    };

    // A preflight is never signed: S3 answers it from the bucket's CORS rules alone.
    if (method === 'OPTIONS') {
      const wanted = req.headers['access-control-request-method'];
      const requested = String(req.headers['access-control-request-headers'] ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean);
      const rule = origin && typeof wanted === 'string' ? corsRuleFor(cors.get(bucket), origin, wanted, requested) : undefined;
      req.resume();
      if (!rule) {
        return refuse(
          new S3Refusal(
            403,
            'AccessForbidden',
            "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
          ),
        );
      }
      res.writeHead(200, {
        ...base,
        ...corsHeaders(rule, origin!),
        ...(requested.length ? { 'access-control-allow-headers': requested.join(', ') } : {}),
        ...(rule.maxAgeSeconds !== undefined ? { 'access-control-max-age': String(rule.maxAgeSeconds) } : {}),
        'content-length': '0',
      });
      return res.end();
    }
    const rule = origin ? corsRuleFor(cors.get(bucket), origin, method) : undefined;
    const allowed = rule ? corsHeaders(rule, origin!) : {};

    let verified: Verified;
    let body: Buffer | undefined;
    let checked: CheckedPayload = {};
    try {
      verified = await verifySignature({ method, rawPath, rawQuery, headers: req.headers }, secretOf, now());
      if (method === 'PUT' || method === 'POST') {
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
        body = decoded.payload;
        if (method === 'PUT' && key) checked = checkPayload(body, req.headers, decoded.trailers, verified.payloadHash);
        if (awsChunked) req.headers['content-encoding'] = encodings.filter((e) => e !== 'aws-chunked').join(', ') || undefined;
      } else req.resume();
    } catch (error) {
      if (error instanceof S3Refusal) {
        req.resume();
        return refuse(error, allowed);
      }
      throw error;
    }

    const forwarded: OutgoingHttpHeaders = Object.fromEntries(
      Object.entries(req.headers).filter(([name, value]) => value !== undefined && !DROPPED_REQUEST_HEADERS.has(name)),
    );
    const isObjectPut =
      method === 'PUT' && key !== '' && query.partNumber === undefined && query.uploadId === undefined && req.headers['x-amz-copy-source'] === undefined;
    const stored = checked.checksumSha256 ? { 'x-amz-checksum-sha256': checked.checksumSha256, 'x-amz-checksum-type': 'FULL_OBJECT' } : {};

    if (isObjectPut) {
      if (checked.checksumSha256) forwarded[CHECKSUM_META] = checked.checksumSha256;
      const etag = await putInEngine(bucket, key, body!, forwarded);
      keep(bucket, key, body!, forwarded as IncomingHttpHeaders);
      res.writeHead(200, { ...base, ...allowed, ...(etag ? { etag } : {}), ...stored, 'content-length': '0' });
      return res.end();
    }

    const uploadId = typeof query.uploadId === 'string' ? query.uploadId : undefined;
    if (method === 'GET' && key && uploadId !== undefined) {
      // ListParts, which fauxqs lacks: from what the front saw of the upload.
      const upload = uploads.get(uploadId);
      if (!upload || upload.bucket !== bucket || upload.key !== key) {
        return refuse(
          new S3Refusal(
            404,
            'NoSuchUpload',
            'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
            { UploadId: uploadId },
          ),
          allowed,
        );
      }
      const maxParts = Math.min(LIST_PARTS_MAX, Number(query['max-parts'] ?? LIST_PARTS_MAX) || LIST_PARTS_MAX);
      const xml = listPartsXml(uploadId, upload, Number(query['part-number-marker'] ?? 0) || 0, maxParts);
      res.writeHead(200, { ...base, ...allowed, 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(xml)) });
      return res.end(xml);
    }

    const answer = await toEngine(method, url, forwarded, body);
    const status = answer.statusCode ?? 502;
    if (method === 'POST' && key && query.uploads !== undefined && status === 200) {
      // CreateMultipartUpload: the new upload's ID, for ListParts.
      const created = await readAnswer(answer);
      const id = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body.toString('utf8'))?.[1];
      if (id) uploads.set(unescapeXml(id), { bucket, key, parts: new Map() });
      const headers: OutgoingHttpHeaders = { ...created.headers, ...base, ...allowed, 'content-length': String(created.body.length) };
      delete headers.connection;
      delete headers['keep-alive'];
      delete headers['transfer-encoding'];
      res.writeHead(status, headers);
      return res.end(created.body);
    }
    const headers: OutgoingHttpHeaders = { ...answer.headers, ...base, ...allowed };
    delete headers.connection;
    delete headers['keep-alive'];
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

    if (status >= 300) return;
    if (method === 'PUT' && uploadId !== undefined && query.partNumber !== undefined) {
      uploads.get(uploadId)?.parts.set(Number(query.partNumber), { etag: String(answer.headers.etag), size: body!.length, lastModified: now().toISOString() });
    } else if (uploadId !== undefined && (method === 'DELETE' || method === 'POST')) uploads.delete(uploadId);
    if (method === 'DELETE' && key && query.uploadId === undefined) forget(bucket, key);
    else if (method === 'DELETE' && !key && kept) rmSync(join(kept, encodeURIComponent(bucket)), { recursive: true, force: true });
    else if (method === 'POST' && !key && query.delete !== undefined) {
      for (const [, deleted] of (body ?? Buffer.alloc(0)).toString('utf8').matchAll(/<Key>([\s\S]*?)<\/Key>/g)) forget(bucket, unescapeXml(deleted));
    } else if ((method === 'POST' && query.uploadId !== undefined) || (method === 'PUT' && req.headers['x-amz-copy-source'] !== undefined)) {
      await keepFromEngine(bucket, key);
    }
  };

  await restore();
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
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
      await engineCall('PUT', `/${encodeURIComponent(name)}`);
      if (rules) cors.set(name, rules);
      if (kept) mkdirSync(join(kept, encodeURIComponent(name)), { recursive: true });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
};
