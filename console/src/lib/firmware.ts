import type { ApiClient, Firmware, FirmwareUpload } from './api';
import { UploadError } from './errors';

/** Largest firmware image the API registers (2 GiB). */
export const FIRMWARE_SIZE_MAX = 2 * 1024 ** 3;

/** Bytes for people: "512 B", "60.0 KB", "1.5 MB", "2.00 GB". */
export const formatBytes = (bytes: number) => {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
};

/** The part of Web Crypto's SubtleCrypto a digest uses. */
export interface Digester {
  digest(algorithm: 'SHA-256', data: ArrayBuffer): Promise<ArrayBuffer>;
}

/**
 * The SHA-256 of some bytes as 64 lowercase hex digits, by Web Crypto (`crypto.subtle`), which a
 * browser offers only in a secure context (https, or http on localhost / 127.0.0.1): elsewhere it
 * says so.
 */
export const sha256Hex = async (bytes: ArrayBuffer, subtle: Digester | undefined): Promise<string> => {
  if (!subtle) {
    throw new UploadError('This browser offers no SHA-256 on this page.', [
      'Web Crypto works only on https (or http on localhost): open the console over https.',
    ]);
  }
  const digest = new Uint8Array(await subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
};

/** The `<Code>` and `<Message>` of an S3 error answer (XML), when it has them. */
export const s3ErrorOf = (xml: string) => ({
  code: /<Code>([^<]*)<\/Code>/.exec(xml)?.[1] ?? '',
  message: /<Message>([^<]*)<\/Message>/.exec(xml)?.[1] ?? '',
});

/** Why S3 refused an upload, in words a person can act on. */
export const describeUploadRefusal = (status: number, body: string): UploadError => {
  const { code, message } = s3ErrorOf(body);
  if (status === 0) {
    return new UploadError('The upload did not reach the storage.', [
      'The network failed, or the storage refused this page’s address (CORS). Check the connection and try again.',
      'If it keeps failing, the firmware bucket’s CORS must allow this console’s address to PUT with the x-amz-checksum-sha256 header (docs/fleet-operations.md: Firmware artifacts).',
    ]);
  }
  if (code === 'BadDigest' || code === 'XAmzContentSHA256Mismatch') {
    return new UploadError(
      'The storage refused the bytes: their SHA-256 is not the registered one.',
      ['The file changed after it was read: choose it again and upload. Nothing was stored.'],
      status,
      code,
    );
  }
  if (status === 403 && /expired/i.test(message)) {
    return new UploadError(
      'The upload address expired before the upload began.',
      ['Upload again: the version is registered again for a fresh address (valid an hour).'],
      status,
      code,
    );
  }
  if (code === 'SignatureDoesNotMatch') {
    return new UploadError(
      'The storage refused the upload’s signature.',
      ['The upload must carry exactly the headers the registration gave. Upload again; if it keeps failing, tell the operator.'],
      status,
      code,
    );
  }
  if (code === 'EntityTooLarge' || status === 413) {
    return new UploadError('The storage refused the file as too large.', [`A firmware image is at most ${formatBytes(FIRMWARE_SIZE_MAX)}.`], status, code);
  }
  return new UploadError(
    `The storage refused the upload (HTTP ${status}${code ? ` ${code}` : ''}).`,
    [message || 'Try again; if it keeps failing, tell the operator.'],
    status,
    code,
  );
};

/** A progress event of an upload, as XMLHttpRequest's. */
export interface UploadProgress {
  loaded: number;
  total: number;
  lengthComputable: boolean;
}

/** The part of XMLHttpRequest an upload uses (a test gives its own). */
export interface UploadRequest {
  open(method: string, url: string): void;
  setRequestHeader(name: string, value: string): void;
  send(body: Blob): void;
  addEventListener(type: 'load' | 'error' | 'abort', listener: () => void): void;
  readonly upload: { addEventListener(type: 'progress', listener: (event: UploadProgress) => void): void };
  readonly status: number;
  readonly responseText: string;
}

/**
 * Sends the bytes with a presigned request, straight to S3, telling `onProgress` the bytes sent so
 * far. XMLHttpRequest, because fetch reports no upload progress. Resolves once S3 stored them;
 * rejects with an {@link UploadError} in words.
 */
export const putWithProgress = (
  upload: FirmwareUpload,
  body: Blob,
  onProgress: (sent: number, total: number) => void,
  request: () => UploadRequest,
): Promise<void> =>
  new Promise((resolve, reject) => {
    const xhr = request();
    xhr.open(upload.method, upload.url);
    // exactly the headers the URL is signed with (the checksum): S3 checks the bytes against them
    for (const [name, value] of Object.entries(upload.headers)) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener('progress', (event) => onProgress(event.loaded, event.lengthComputable ? event.total : body.size));
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size, body.size);
        resolve();
      } else reject(describeUploadRefusal(xhr.status, xhr.responseText));
    });
    // no answer the page may read: the network, or a CORS refusal (the browser tells the page neither)
    xhr.addEventListener('error', () => reject(describeUploadRefusal(0, '')));
    xhr.addEventListener('abort', () => reject(new UploadError('The upload was stopped.', ['Nothing was stored: upload again.'])));
    xhr.send(body);
  });

/** Where an upload is: each step, with the bytes sent while uploading. */
export type UploadStep =
  | { step: 'reading'; size: number }
  | { step: 'registering' }
  | { step: 'uploading'; sent: number; total: number }
  | { step: 'checking' }
  | { step: 'ready'; firmware: Firmware };

/** What {@link uploadFirmware} needs around it; tests give fakes. */
export interface UploadDeps {
  api: Pick<ApiClient, 'registerFirmware' | 'getFirmware'>;
  /** A new XMLHttpRequest (in the page: `() => new XMLHttpRequest()`). */
  request: () => UploadRequest;
  /** Web Crypto's digest (`crypto.subtle`, undefined outside a secure context). */
  subtle: Digester | undefined;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** How long S3 may take to show the stored image as the version's (the API checks it on read). */
  readyWithinMs?: number;
}

/**
 * Uploads a firmware image as the API asks: its SHA-256 computed here, the version registered
 * with its size and SHA-256, the bytes PUT to the presigned URL with the headers given, then the
 * version read until it is `ready`. A version awaiting its upload is registered again the same way
 * (a fresh URL: how an expired one is mended).
 */
export const uploadFirmware = async (
  target: { workspaceId: string; firmwareId: string; version: string; description: string; file: Blob },
  onStep: (step: UploadStep) => void,
  { api, subtle, request, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), now = Date.now, readyWithinMs = 30_000 }: UploadDeps,
): Promise<Firmware> => {
  const { workspaceId, firmwareId, version, description, file } = target;
  if (file.size === 0) throw new UploadError('The file is empty.', ['Choose the firmware image.']);
  if (file.size > FIRMWARE_SIZE_MAX)
    throw new UploadError(`The file is ${formatBytes(file.size)}: a firmware image is at most ${formatBytes(FIRMWARE_SIZE_MAX)}.`, []);
  onStep({ step: 'reading', size: file.size });
  let bytes: ArrayBuffer;
  try {
    bytes = await file.arrayBuffer();
  } catch (error) {
    throw new UploadError('The browser could not read the file.', [
      `${(error as Error).message} Choose it again; a file this large may not fit in the browser’s memory.`,
    ]);
  }
  const sha256 = await sha256Hex(bytes, subtle);
  onStep({ step: 'registering' });
  const registered = await api.registerFirmware(workspaceId, firmwareId, version, { size: file.size, sha256, description });
  if (!registered.upload) throw new UploadError('The registration answered no upload address.', ['Tell the operator: the API should always answer one.']);
  onStep({ step: 'uploading', sent: 0, total: file.size });
  await putWithProgress(registered.upload, file, (sent, total) => onStep({ step: 'uploading', sent, total }), request);
  onStep({ step: 'checking' });
  const deadline = now() + readyWithinMs;
  for (;;) {
    const firmware = await api.getFirmware(workspaceId, firmwareId, version);
    if (firmware.status === 'ready') {
      onStep({ step: 'ready', firmware });
      return firmware;
    }
    if (now() >= deadline) {
      throw new UploadError(`The image was uploaded, but ${firmwareId} ${version} is not ready yet.`, [
        'Reload the list in a moment; if it stays awaiting upload, upload it again.',
      ]);
    }
    await sleep(1_000);
  }
};
