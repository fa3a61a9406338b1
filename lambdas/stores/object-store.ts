import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_S3 (the local S3 on
// `npm start`). S3's own rule picks the addressing: virtual-hosted on AWS, path-style for an
// endpoint that is an IP address (http://127.0.0.1:<port>/<bucket>/<key>).
let client: S3Client | undefined;
const s3 = () => (client ??= new S3Client({}));

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
 * the caller may list the bucket; without s3:ListBucket, S3 answers a missing key 403).
 */
export const headObject = async (ref: ObjectRef): Promise<StoredObject | undefined> => {
  try {
    const head = await s3().send(new HeadObjectCommand({ Bucket: ref.bucket, Key: ref.key, ChecksumMode: 'ENABLED' }));
    return { size: head.ContentLength ?? 0, ...(head.ChecksumSHA256 ? { sha256: Buffer.from(head.ChecksumSHA256, 'base64').toString('hex') } : {}) };
  } catch (error) {
    if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
    throw error;
  }
};

/** Deletes an object; deleting one that is not there succeeds too (S3's DeleteObject is idempotent). */
export const deleteObject = async (ref: ObjectRef) => {
  await s3().send(new DeleteObjectCommand({ Bucket: ref.bucket, Key: ref.key }));
};
