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
  | 'download'
  /**
   * Write objects in one PutObject or by a multipart upload that later runs continue (ListParts)
   * or abort, and check what was written (HeadObject; ListBucket, so that a missing object is a 404).
   */
  | 'stream'
  /** Delete objects (a workspace's deletion: the objects its items name). */
  | 'delete';

/** A bucket of the stack. */
export interface BucketDefinition {
  /** Its name on `npm start` (the stack's bucket gets a generated one). */
  readonly name: string;
  /** The variable that tells a handler the bucket's name. */
  readonly env: string;
  /** The keys the handlers use start with this (`''`: the whole bucket); their grants name only those. */
  readonly keyPrefix: string;
  /** Days after which S3 aborts an upload left unfinished, and frees its parts. */
  readonly abortIncompleteUploadsAfterDays: number;
  /** Days after its creation when S3 deletes an object (a lifecycle expiration); absent: kept. */
  readonly expireObjectsAfterDays?: number;
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

export type BucketName = 'firmware' | 'exports';

/** Days an export's file can be downloaded once it is ready; then the export is gone (spec/operations.md §4). */
export const EXPORT_LIFETIME_DAYS = 7;

/** The longest an export may run: S3 aborts an upload unfinished this many days after it began. */
export const EXPORT_RUN_MAX_DAYS = 2;

export const BUCKETS: Readonly<Record<BucketName, BucketDefinition>> = {
  // Firmware images, one object per registered version (DESIGN §11): uploaded by presigned PUTs
  // that the firmwares handler signs, downloaded by presigned GETs that the publishers of `@fota`
  // sign when they deliver it; the FOTA scheduling checks that a version is stored.
  firmware: {
    name: 'fleetstream-firmware',
    env: 'FIRMWARE_BUCKET',
    keyPrefix: '',
    abortIncompleteUploadsAfterDays: 1,
    access: { firmwares: 'manage', workspaces: 'delete', fota: 'check', 'registry-stream': 'download', 'device-api': 'download', 'device-mqtt': 'download' },
    // The console uploads an image with the registration's URL and checksum header.
    consoleCors: {
      methods: ['PUT'],
      headers: ['content-type', 'x-amz-checksum-sha256'],
      exposedHeaders: ['ETag', 'x-amz-checksum-sha256'],
      maxAgeSeconds: 3600,
    },
  },
  // Data exports (spec/operations.md §4, DESIGN §12), one object per export under `exports/`:
  // written by the export Lambda in a multipart upload that its runs continue, downloaded through
  // presigned GETs that the storage API signs. S3 deletes each object the lifetime after it was
  // ready at the earliest (an object's age counts from its creation, at most the longest run before
  // it was ready), so a download URL never outlives its object.
  exports: {
    name: 'fleetstream-exports',
    env: 'EXPORTS_BUCKET',
    keyPrefix: 'exports/',
    abortIncompleteUploadsAfterDays: EXPORT_RUN_MAX_DAYS,
    expireObjectsAfterDays: EXPORT_LIFETIME_DAYS + EXPORT_RUN_MAX_DAYS,
    access: { export: 'stream', timeseries: 'download', workspaces: 'delete' },
  },
};
