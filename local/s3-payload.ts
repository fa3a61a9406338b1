import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { crc32 } from 'node:zlib';
import { S3Refusal } from './s3-auth';

/**
 * What S3 checks of an upload's bytes, for the local S3 (local/s3-engine.ts): the aws-chunked
 * encoding SDKs stream with, the signed payload hash (`x-amz-content-sha256`), Content-MD5, and the
 * flexible checksums (`x-amz-checksum-<algorithm>`, as a header or a trailer), with S3's errors.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
 */

/** A body in aws-chunked encoding, decoded: the payload, and the trailing headers (lower-case names). */
export interface DecodedBody {
  payload: Buffer;
  trailers: Record<string, string>;
}

/**
 * Decodes aws-chunked (`<hex size>[;chunk-signature=…]\r\n<bytes>\r\n` … `0\r\n` then trailers).
 * Chunk signatures (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) are not checked: the payload hash of each
 * chunk is not recomputed here (docs/local-runtime.md, "The local S3").
 * @throws S3Refusal 400 IncompleteBody when the encoding is cut short.
 */
export const decodeAwsChunked = (body: Buffer): DecodedBody => {
  const chunks: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const end = body.indexOf('\r\n', offset);
    if (end < 0) throw new S3Refusal(400, 'IncompleteBody', 'The request body terminated unexpectedly');
    const size = parseInt(body.subarray(offset, end).toString('ascii').split(';')[0], 16);
    if (Number.isNaN(size)) throw new S3Refusal(400, 'InvalidRequest', 'Invalid chunk size in the aws-chunked body.');
    offset = end + 2;
    if (size === 0) break;
    if (offset + size > body.length) throw new S3Refusal(400, 'IncompleteBody', 'The request body terminated unexpectedly');
    chunks.push(body.subarray(offset, offset + size));
    offset += size + 2;
  }
  const trailers: Record<string, string> = {};
  for (const line of body.subarray(offset).toString('utf8').split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) trailers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return { payload: Buffer.concat(chunks), trailers };
};

/** The flexible checksums, by the suffix of their header, with their size and (when Node computes it) their function. */
const CHECKSUMS: Record<string, { bytes: number; of?: (data: Buffer) => Buffer }> = {
  sha256: { bytes: 32, of: (data) => createHash('sha256').update(data).digest() },
  sha1: { bytes: 20, of: (data) => createHash('sha1').update(data).digest() },
  crc32: {
    bytes: 4,
    of: (data) => {
      const out = Buffer.alloc(4);
      out.writeUInt32BE(crc32(data));
      return out;
    },
  },
  // CRC32C and CRC64NVME have no implementation in Node: their values are checked for form only.
  crc32c: { bytes: 4 },
  crc64nvme: { bytes: 8 },
};

const decodedBase64 = (value: string) => (/^[A-Za-z0-9+/]*={0,2}$/.test(value) ? Buffer.from(value, 'base64') : undefined);

/** What the checks found out about a payload: the SHA-256 it was sent with, which the object keeps. */
export interface CheckedPayload {
  /** Base64 SHA-256, when the request gave one (header or trailer) and the payload matched it. */
  checksumSha256?: string;
}

/**
 * Checks a payload as S3 checks an upload (PutObject, UploadPart): its SHA-256 against a hex
 * `x-amz-content-sha256` (400 XAmzContentSHA256Mismatch), Content-MD5 (400 InvalidDigest,
 * BadDigest), and each `x-amz-checksum-<algorithm>` header or trailer (400 InvalidRequest when it
 * is not a base64 value of the algorithm's size, 400 BadDigest when the payload is other bytes).
 * @throws S3Refusal with S3's status, code and message.
 */
export const checkPayload = (payload: Buffer, headers: IncomingHttpHeaders, trailers: Record<string, string>, payloadHash: string): CheckedPayload => {
  if (/^[0-9a-f]{64}$/.test(payloadHash)) {
    const computed = createHash('sha256').update(payload).digest('hex');
    if (computed !== payloadHash) {
      throw new S3Refusal(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.", {
        ClientComputedContentSHA256: payloadHash,
        S3ComputedContentSHA256: computed,
      });
    }
  }
  const md5 = headers['content-md5'];
  if (typeof md5 === 'string') {
    const given = decodedBase64(md5);
    if (given?.length !== 16) throw new S3Refusal(400, 'InvalidDigest', 'The Content-MD5 you specified was invalid.');
    if (!createHash('md5').update(payload).digest().equals(given))
      throw new S3Refusal(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');
  }
  const checked: CheckedPayload = {};
  for (const [algorithm, { bytes, of }] of Object.entries(CHECKSUMS)) {
    const name = `x-amz-checksum-${algorithm}`;
    const value = (headers[name] as string | undefined) ?? trailers[name];
    if (value === undefined) continue;
    const given = decodedBase64(value);
    if (given?.length !== bytes) throw new S3Refusal(400, 'InvalidRequest', `Value for ${name} header is invalid.`);
    if (of && !of(payload).equals(given))
      throw new S3Refusal(400, 'BadDigest', `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`);
    if (algorithm === 'sha256') checked.checksumSha256 = value;
  }
  return checked;
};
