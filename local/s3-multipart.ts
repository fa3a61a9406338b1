import { S3Refusal } from './s3-auth';
import { escapeXml } from './s3-xml';

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

/**
 * The multipart uploads in progress. fauxqs has no ListParts: the front keeps what each upload in
 * progress holds, as it passes, and answers ListParts from that.
 */
export const multipartUploads = () => {
  const uploads = new Map<string, OpenUpload>();
  return {
    /** CreateMultipartUpload succeeded. */
    opened: (uploadId: string, bucket: string, key: string) => {
      uploads.set(uploadId, { bucket, key, parts: new Map() });
    },
    /** UploadPart succeeded. */
    partUploaded: (uploadId: string, partNumber: number, part: UploadedPart) => {
      uploads.get(uploadId)?.parts.set(partNumber, part);
    },
    /** The upload was completed or aborted. */
    ended: (uploadId: string) => {
      uploads.delete(uploadId);
    },
    /**
     * ListParts of an upload of `bucket`/`key`: S3's ListPartsResult for the page the query asks
     * for (`part-number-marker`, `max-parts`). @throws S3Refusal NoSuchUpload for an upload it does not hold
     */
    listParts: (uploadId: string, bucket: string, key: string, query: Record<string, string | string[]>) => {
      const upload = uploads.get(uploadId);
      if (!upload || upload.bucket !== bucket || upload.key !== key) {
        throw new S3Refusal(
          404,
          'NoSuchUpload',
          'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
          { UploadId: uploadId },
        );
      }
      const maxParts = Math.min(LIST_PARTS_MAX, Number(query['max-parts'] ?? LIST_PARTS_MAX) || LIST_PARTS_MAX);
      return listPartsXml(uploadId, upload, Number(query['part-number-marker'] ?? 0) || 0, maxParts);
    },
  };
};

/** The multipart uploads in progress; see `multipartUploads`. */
export type MultipartUploads = ReturnType<typeof multipartUploads>;
