import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { createHash } from 'node:crypto';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_S3 (the local S3 on
// `npm start`). S3's own rule picks the addressing: virtual-hosted on AWS, path-style for an
// endpoint that is an IP address (http://127.0.0.1:<port>/<bucket>/<key>). Checksums only where
// a request asks for one (a firmware upload's SHA-256): the SDK's default would give every
// UploadPart a CRC32, which binds the whole multipart upload to that algorithm; uploads here carry
// Content-MD5 instead, which S3 checks too.
let client: S3Client | undefined;
const s3 = () => (client ??= new S3Client({ requestChecksumCalculation: 'WHEN_REQUIRED' }));

/** An object of a bucket. */
export interface ObjectRef {
  bucket: string;
  key: string;
}

/** A request a client sends straight to S3: a presigned URL, the headers it must carry, and when it stops working. */
export interface PresignedRequest<M extends string = string> {
  method: M;
  url: string;
  headers: Record<string, string>;
  expires_at: string;
}

const CHECKSUM_HEADER = 'x-amz-checksum-sha256';

/** A hex SHA-256 as S3's checksum headers carry it: base64 of the 32 bytes. */
export const base64Sha256 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

/**
 * A presigned PUT of exactly the bytes whose SHA-256 is `sha256` (hex): the URL is signed with the
 * `x-amz-checksum-sha256` header, which the client must send as given (it is a signed header, not
 * a query parameter), and S3 refuses a body of another checksum (400 BadDigest).
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
 */
export const presignUpload = async (ref: ObjectRef, sha256: string, ttlSeconds: number, now = new Date()): Promise<PresignedRequest<'PUT'>> => {
  const checksum = base64Sha256(sha256);
  const url = await getSignedUrl(s3(), new PutObjectCommand({ Bucket: ref.bucket, Key: ref.key, ChecksumSHA256: checksum }), {
    expiresIn: ttlSeconds,
    signingDate: now,
    unhoistableHeaders: new Set([CHECKSUM_HEADER]),
  });
  return { method: 'PUT', url, headers: { [CHECKSUM_HEADER]: checksum }, expires_at: new Date(now.getTime() + ttlSeconds * 1000).toISOString() };
};

/**
 * A presigned GET of an object. S3 authorizes it as the signer when it is used: the signer needs
 * s3:GetObject then. One signed with temporary credentials (a Lambda's role) stops working when
 * those expire, if that comes first.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/using-presigned-url.html
 */
export const presignDownload = async (ref: ObjectRef, ttlSeconds: number, now = new Date()): Promise<PresignedRequest<'GET'>> => {
  const url = await getSignedUrl(s3(), new GetObjectCommand({ Bucket: ref.bucket, Key: ref.key }), { expiresIn: ttlSeconds, signingDate: now });
  return { method: 'GET', url, headers: {}, expires_at: new Date(now.getTime() + ttlSeconds * 1000).toISOString() };
};

/** What S3 holds at a key: its size and the SHA-256 it was stored with (hex), when it was stored with one. */
export interface StoredObject {
  size: number;
  sha256?: string;
}

/**
 * The object at a key, read with HeadObject in checksum mode; undefined when there is none (404:
 * the caller may list the bucket). Without s3:ListBucket, S3 answers a missing key 403: a caller
 * that has only s3:GetObject on the objects passes `forbiddenIsMissing`, and a 403 is then taken
 * for no object too (it can mean nothing else for it, or a policy that lets it read nothing).
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html
 */
export const headObject = async (ref: ObjectRef, { forbiddenIsMissing = false } = {}): Promise<StoredObject | undefined> => {
  try {
    const head = await s3().send(new HeadObjectCommand({ Bucket: ref.bucket, Key: ref.key, ChecksumMode: 'ENABLED' }));
    return { size: head.ContentLength ?? 0, ...(head.ChecksumSHA256 ? { sha256: Buffer.from(head.ChecksumSHA256, 'base64').toString('hex') } : {}) };
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404 || (status === 403 && forbiddenIsMissing)) return undefined;
    throw error;
  }
};

/** Deletes an object; deleting one that is not there succeeds too (S3's DeleteObject is idempotent). */
export const deleteObject = async (ref: ObjectRef) => {
  await s3().send(new DeleteObjectCommand({ Bucket: ref.bucket, Key: ref.key }));
};

/** How an object is served: its type, and the file name a browser saves it as. */
export interface ObjectHeaders {
  contentType: string;
  fileName: string;
}

const headersOf = ({ contentType, fileName }: ObjectHeaders) => ({ ContentType: contentType, ContentDisposition: `attachment; filename="${fileName}"` });

/** Base64 MD5 of the bytes sent: S3 refuses a body of other bytes (400 BadDigest). */
const md5Of = (body: Uint8Array) => createHash('md5').update(body).digest('base64');

/** The upload S3 no longer has: completed, aborted (by its lifecycle rule, after days), or never made. */
export class NoSuchUploadError extends Error {
  constructor(cause: unknown) {
    super('S3 has no such multipart upload: it was completed or aborted.', { cause });
    this.name = 'NoSuchUploadError';
  }
}

const uploadGone = (error: unknown) => ((error as Error).name === 'NoSuchUpload' ? new NoSuchUploadError(error) : error);

/** Writes a whole object in one PutObject (up to 5 GiB: S3's largest single upload). */
export const putObject = async (ref: ObjectRef, body: Uint8Array, headers: ObjectHeaders) => {
  await s3().send(new PutObjectCommand({ Bucket: ref.bucket, Key: ref.key, Body: body, ContentMD5: md5Of(body), ...headersOf(headers) }));
};

/**
 * Starts a multipart upload of an object, whose parts any process may then upload with its ID.
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html
 */
export const startUpload = async (ref: ObjectRef, headers: ObjectHeaders): Promise<string> => {
  const { UploadId } = await s3().send(new CreateMultipartUploadCommand({ Bucket: ref.bucket, Key: ref.key, ...headersOf(headers) }));
  return UploadId!;
};

/**
 * Uploads part `partNumber` (1–10,000) of an upload; the same number again replaces it. Every part
 * but the last must be at least 5 MiB, which S3 checks when the upload is completed.
 * @throws NoSuchUploadError when the upload was completed or aborted.
 */
export const uploadPart = async (ref: ObjectRef, uploadId: string, partNumber: number, body: Uint8Array) => {
  try {
    await s3().send(
      new UploadPartCommand({ Bucket: ref.bucket, Key: ref.key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentMD5: md5Of(body) }),
    );
  } catch (error) {
    throw uploadGone(error);
  }
};

/**
 * Completes an upload from the parts S3 lists for it (ListParts, a page of 1,000 at a time), which
 * must be exactly parts 1 to `parts`: the processes that uploaded them need not have kept their
 * ETags.
 * @throws NoSuchUploadError when the upload was completed or aborted; Error when S3 lists other parts.
 */
export const completeUpload = async (ref: ObjectRef, uploadId: string, parts: number) => {
  try {
    const listed: CompletedPart[] = [];
    let marker: string | undefined;
    do {
      const page = await s3().send(new ListPartsCommand({ Bucket: ref.bucket, Key: ref.key, UploadId: uploadId, PartNumberMarker: marker }));
      listed.push(...(page.Parts ?? []).map(({ PartNumber, ETag }) => ({ PartNumber, ETag })));
      marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
    } while (marker);
    if (listed.length !== parts || listed.some((part, i) => part.PartNumber !== i + 1)) {
      throw new Error(`Upload ${uploadId} holds parts ${listed.map((p) => p.PartNumber).join(',')}, not 1 to ${parts}.`);
    }
    await s3().send(new CompleteMultipartUploadCommand({ Bucket: ref.bucket, Key: ref.key, UploadId: uploadId, MultipartUpload: { Parts: listed } }));
  } catch (error) {
    throw uploadGone(error);
  }
};

/** Aborts an upload and frees its parts; one already completed or aborted is left as it is. */
export const abortUpload = async (ref: ObjectRef, uploadId: string) => {
  try {
    await s3().send(new AbortMultipartUploadCommand({ Bucket: ref.bucket, Key: ref.key, UploadId: uploadId }));
  } catch (error) {
    if (!(uploadGone(error) instanceof NoSuchUploadError)) throw error;
  }
};
