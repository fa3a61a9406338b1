import { HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import type { IncomingHttpHeaders } from 'node:http';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signature Version 4 as S3 checks it, for the local S3 (local/s3-engine.ts): a request signed in
 * its Authorization header or presigned in its query string is signed again with the same inputs
 * by the SDK's own signer (@smithy/signature-v4), and the two signatures are compared. The errors
 * are S3's (status, code and message as S3 answers them).
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
 */

/** A request S3 refuses: its status, S3's error code and message, and the extra elements S3 adds to the XML. */
export class S3Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'S3Refusal';
  }
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

/** node:crypto's SHA-256 and HMAC-SHA-256 behind the hash interface the SDK's signer takes. */
export class Sha256 {
  private hash;

  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }

  private fresh() {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(this.secret));
  }

  update(data: Uint8Array) {
    this.hash.update(data);
  }

  async digest() {
    return new Uint8Array(this.hash.digest());
  }

  reset() {
    this.hash = this.fresh();
  }
}

const bytesOf = (data: SourceData): Buffer =>
  typeof data === 'string'
    ? Buffer.from(data, 'utf8')
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/** A request as it arrived: the path exactly as on the request line, the query string, the headers. */
export interface SignedRequest {
  method: string;
  /** The path, still percent-encoded as the client sent it (S3 signs it so, not encoded again). */
  rawPath: string;
  /** The query string without its `?`. */
  rawQuery: string;
  headers: IncomingHttpHeaders;
}

/** Who signed a request, and what it says of its payload. */
export interface Verified {
  accessKeyId: string;
  presigned: boolean;
  /**
   * The payload hash the request was signed with (`x-amz-content-sha256`): a hex SHA-256 the body
   * must match, `UNSIGNED-PAYLOAD`, or a `STREAMING-…` marker of an aws-chunked body.
   */
  payloadHash: string;
}

// S3 takes a request within 15 minutes of its time (header signatures) and a presigned URL for at most a week.
const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_EXPIRES_SECONDS = 7 * 24 * 3600;
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const ALGORITHM = 'AWS4-HMAC-SHA256';

/** `20261126T053507Z` as a Date; undefined when it is not one. */
const parseAmzDate = (value: string | undefined) => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  if (!m) return undefined;
  const date = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
  return Number.isNaN(date.getTime()) ? undefined : date;
};

/**
 * The query string's parameters, decoded as SigV4 reads them: `+` is a plus sign, not a space
 * (URLSearchParams would turn it into one), and a name given twice keeps every value.
 */
export const queryParameters = (rawQuery: string): Record<string, string | string[]> => {
  const query: Record<string, string | string[]> = Object.create(null);
  for (const pair of rawQuery.split('&')) {
    if (!pair) continue;
    const at = pair.indexOf('=');
    const [name, value] = (at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)]).map((part) => decodeURIComponent(part));
    const known = query[name];
    query[name] = known === undefined ? value : [known, value].flat();
  }
  return query;
};

const single = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

const headerValue = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
};

/** The signed headers of a request, as the signer must see them: lower-case names, the values as received. */
const signedHeadersOf = (headers: IncomingHttpHeaders, names: string[]) => {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = headerValue(headers, name);
    // A header that was signed but is no longer sent cannot sign the same: S3 then refuses the signature.
    if (value !== undefined) picked[name] = value;
  }
  return picked;
};

const sameSignature = (expected: string, given: string) => expected.length === given.length && timingSafeEqual(Buffer.from(expected), Buffer.from(given));

const signatureMismatch = () =>
  new S3Refusal(
    403,
    'SignatureDoesNotMatch',
    'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
  );

/** The credential scope `<key>/<yyyymmdd>/<region>/<service>/aws4_request`, or undefined when malformed. */
const scopeOf = (credential: string) => {
  const m = /^([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request$/.exec(credential);
  return m ? { accessKeyId: m[1], day: m[2], region: m[3], service: m[4] } : undefined;
};

const signerFor = (accessKeyId: string, secretAccessKey: string, region: string) =>
  new SignatureV4({ credentials: { accessKeyId, secretAccessKey }, region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });

const requestOf = (request: SignedRequest, query: Record<string, string | string[]>, headers: Record<string, string>) =>
  new HttpRequest({ method: request.method, protocol: 'http:', hostname: headers.host ?? '', path: request.rawPath, query, headers });

/**
 * Checks a request's SigV4 signature, in its Authorization header or its query string (a
 * presigned URL), against the secret of its access key, at `now`.
 * @throws S3Refusal as S3 refuses: 403 AccessDenied for an anonymous request (the buckets are
 * private), an expired URL, or a presigned URL sent with an `x-amz-*` header it was not signed with, InvalidAccessKeyId, SignatureDoesNotMatch, RequestTimeTooSkewed; 400
 * AuthorizationHeaderMalformed, AuthorizationQueryParametersError, InvalidRequest.
 */
export const verifySignature = async (request: SignedRequest, secretOf: (accessKeyId: string) => string | undefined, now = new Date()): Promise<Verified> => {
  const query = queryParameters(request.rawQuery);
  const authorization = headerValue(request.headers, 'authorization');
  if (authorization !== undefined) return verifyHeaderSignature(request, query, authorization, secretOf, now);
  if (query['X-Amz-Algorithm'] !== undefined || query['X-Amz-Signature'] !== undefined) return verifyPresigned(request, query, secretOf, now);
  throw new S3Refusal(403, 'AccessDenied', 'Access Denied');
};

const verifyHeaderSignature = async (
  request: SignedRequest,
  query: Record<string, string | string[]>,
  authorization: string,
  secretOf: (accessKeyId: string) => string | undefined,
  now: Date,
): Promise<Verified> => {
  if (!authorization.startsWith(`${ALGORITHM} `)) {
    throw new S3Refusal(400, 'InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
  }
  const fields = Object.fromEntries(
    authorization
      .slice(ALGORITHM.length + 1)
      .split(',')
      .map((part) => part.trim().split('=') as [string, string]),
  );
  const scope = scopeOf(fields.Credential ?? '');
  if (!scope || !fields.SignedHeaders || !/^[0-9a-f]{64}$/.test(fields.Signature ?? '')) {
    throw new S3Refusal(
      400,
      'AuthorizationHeaderMalformed',
      'The authorization header is malformed; the authorization header requires three components: Credential, SignedHeaders, and Signature.',
    );
  }
  const secret = secretOf(scope.accessKeyId);
  if (secret === undefined)
    throw new S3Refusal(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', { AWSAccessKeyId: scope.accessKeyId });
  const signingDate = parseAmzDate(headerValue(request.headers, 'x-amz-date'));
  if (!signingDate) throw new S3Refusal(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  if (Math.abs(now.getTime() - signingDate.getTime()) > MAX_SKEW_MS) {
    throw new S3Refusal(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.', {
      RequestTime: signingDate.toISOString(),
      ServerTime: now.toISOString(),
      MaxAllowedSkewMilliseconds: String(MAX_SKEW_MS),
    });
  }
  const payloadHash = headerValue(request.headers, 'x-amz-content-sha256');
  if (payloadHash === undefined) throw new S3Refusal(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  const names = fields.SignedHeaders.split(';');
  const signed = await signerFor(scope.accessKeyId, secret, scope.region).sign(requestOf(request, query, signedHeadersOf(request.headers, names)), {
    signingDate,
    signingRegion: scope.region,
    signingService: scope.service,
    signableHeaders: new Set(names),
  });
  const expected = /Signature=([0-9a-f]{64})$/.exec(String(signed.headers.authorization))?.[1] ?? '';
  if (!sameSignature(expected, fields.Signature)) throw signatureMismatch();
  return { accessKeyId: scope.accessKeyId, presigned: false, payloadHash };
};

/**
 * The `x-amz-*` headers of a presigned request that its URL was not signed with, in the order
 * sent. S3 refuses a presigned request that carries any (403 AccessDenied, naming them in
 * `HeadersNotSigned`): such a header would otherwise change what the URL was signed for (an
 * `x-amz-copy-source` turns a PUT into a CopyObject of another key; `x-amz-meta-*`, tagging, ACLs or
 * a storage class change what is stored). `x-amz-content-sha256` is the one S3 takes unsigned: it
 * says how the payload is signed, and a URL's payload is UNSIGNED-PAYLOAD whatever it says.
 */
const unsignedAmzHeaders = (headers: IncomingHttpHeaders, signed: readonly string[]) =>
  Object.keys(headers).filter((name) => name.startsWith('x-amz-') && name !== 'x-amz-content-sha256' && !signed.includes(name));

const verifyPresigned = async (
  request: SignedRequest,
  query: Record<string, string | string[]>,
  secretOf: (accessKeyId: string) => string | undefined,
  now: Date,
): Promise<Verified> => {
  const param = (name: string) => single(query[name]);
  const required = ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Signature', 'X-Amz-Date', 'X-Amz-SignedHeaders', 'X-Amz-Expires'];
  if (required.some((name) => param(name) === undefined)) {
    throw new S3Refusal(
      400,
      'AuthorizationQueryParametersError',
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
    );
  }
  if (param('X-Amz-Algorithm') !== ALGORITHM) throw new S3Refusal(400, 'AuthorizationQueryParametersError', 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  const scope = scopeOf(param('X-Amz-Credential')!);
  if (!scope)
    throw new S3Refusal(
      400,
      'AuthorizationQueryParametersError',
      'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
    );
  const expires = Number(param('X-Amz-Expires'));
  if (!/^\d+$/.test(param('X-Amz-Expires')!) || expires > MAX_EXPIRES_SECONDS) {
    throw new S3Refusal(400, 'AuthorizationQueryParametersError', `X-Amz-Expires must be less than a week (in seconds) that is; ${MAX_EXPIRES_SECONDS}`);
  }
  const signingDate = parseAmzDate(param('X-Amz-Date'));
  if (!signingDate) throw new S3Refusal(400, 'AuthorizationQueryParametersError', "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  const secret = secretOf(scope.accessKeyId);
  if (secret === undefined)
    throw new S3Refusal(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', { AWSAccessKeyId: scope.accessKeyId });
  const expiresAt = new Date(signingDate.getTime() + expires * 1000);
  if (now.getTime() > expiresAt.getTime()) {
    throw new S3Refusal(403, 'AccessDenied', 'Request has expired', {
      'X-Amz-Expires': String(expires),
      Expires: expiresAt.toISOString(),
      ServerTime: now.toISOString(),
    });
  }
  if (signingDate.getTime() - now.getTime() > MAX_SKEW_MS) throw new S3Refusal(403, 'AccessDenied', 'Request is not valid yet');
  const names = param('X-Amz-SignedHeaders')!.split(';');
  const { 'X-Amz-Signature': given, ...unsigned } = query;
  // A presigned URL's payload is UNSIGNED-PAYLOAD: given to the signer as the header it reads the
  // hash from, kept out of the signed and hoisted headers (SDKs also name it in the query, where
  // it stays as sent).
  const headers = {
    ...signedHeadersOf(request.headers, names),
    ...(names.includes('x-amz-content-sha256') ? {} : { 'x-amz-content-sha256': UNSIGNED_PAYLOAD }),
  };
  const presigned = await signerFor(scope.accessKeyId, secret, scope.region).presign(requestOf(request, unsigned, headers), {
    signingDate,
    expiresIn: expires,
    signingRegion: scope.region,
    signingService: scope.service,
    signableHeaders: new Set(names),
    unsignableHeaders: new Set(names.includes('x-amz-content-sha256') ? [] : ['x-amz-content-sha256']),
    unhoistableHeaders: new Set(Object.keys(headers)),
  });
  if (!sameSignature(String(presigned.query?.['X-Amz-Signature']), String(single(given)))) throw signatureMismatch();
  const unsignedHeaders = unsignedAmzHeaders(
    request.headers,
    names.map((name) => name.toLowerCase()),
  );
  if (unsignedHeaders.length) {
    throw new S3Refusal(403, 'AccessDenied', 'There were headers present in the request which were not signed', {
      HeadersNotSigned: unsignedHeaders.join(', '),
    });
  }
  return { accessKeyId: scope.accessKeyId, presigned: true, payloadHash: headerValue(request.headers, 'x-amz-content-sha256') ?? UNSIGNED_PAYLOAD };
};
