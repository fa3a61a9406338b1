/**
 * The S3 buckets, as data: the CDK stack builds each one with its lifecycle, CORS and grants, and
 * both local runtimes create it in the local S3 (local/s3-engine.ts). Pure data: no CDK import.
 */

/** What a handler may do with a bucket's objects. */
export type BucketAccess =
  /** Presign uploads, check what was stored (HeadObject), delete; list the bucket, so that a missing object is a 404 and not a 403. */
  | 'manage'
  /** Check what was stored (HeadObject); list the bucket, as above. */
  | 'check'
  /** Presign downloads: S3 authorizes a presigned GET as the function that signed it, when it is used. */
  | 'download';

/** A bucket of the stack. */
export interface BucketDefinition {
  /** Its name on `npm start` (the stack's bucket gets a generated one). */
  readonly name: string;
  /** The variable that tells a handler the bucket's name. */
  readonly env: string;
  /** Days after which S3 aborts an upload left unfinished, and frees its parts. */
  readonly abortIncompleteUploadsAfterDays: number;
  /** The handlers (folders under `lambdas/`) that use the bucket, and how. */
  readonly access: Readonly<Record<string, BucketAccess>>;
  /** What the console may do with the bucket from the browser (CORS for the console's origin only). */
  readonly consoleCors?: {
    readonly methods: ReadonlyArray<'GET' | 'PUT' | 'HEAD'>;
    readonly headers: readonly string[];
    readonly exposedHeaders: readonly string[];
    readonly maxAgeSeconds: number;
  };
}

export type BucketName = 'firmware';

export const BUCKETS: Readonly<Record<BucketName, BucketDefinition>> = {
  // Firmware images, one object per registered version (DESIGN §11): uploaded by presigned PUTs
  // that the firmwares handler signs, downloaded by presigned GETs that the publishers of `@fota`
  // sign when they deliver it; the FOTA scheduling checks that a version is stored.
  firmware: {
    name: 'fleetstream-firmware',
    env: 'FIRMWARE_BUCKET',
    abortIncompleteUploadsAfterDays: 1,
    access: { firmwares: 'manage', fota: 'check', 'registry-stream': 'download', 'device-api': 'download', 'device-mqtt': 'download' },
    // The console uploads an image with the registration's URL and checksum header.
    consoleCors: { methods: ['PUT'], headers: ['content-type', 'x-amz-checksum-sha256'], exposedHeaders: ['ETag', 'x-amz-checksum-sha256'], maxAgeSeconds: 3600 },
  },
};
