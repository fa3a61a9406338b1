import { createHash } from 'node:crypto';
import type { Firmware, FirmwareUpload } from '../../../console/src/lib/api';
import { describeError, UploadError } from '../../../console/src/lib/errors';
import {
  describeUploadRefusal,
  formatBytes,
  putWithProgress,
  s3ErrorOf,
  sha256Hex,
  uploadFirmware,
  type UploadProgress,
  type UploadRequest,
  type UploadStep,
} from '../../../console/src/lib/firmware';

/** An XMLHttpRequest stand-in: records what the page sends, and answers as the test says. */
class FakeRequest implements UploadRequest {
  method = '';
  url = '';
  headers: Record<string, string> = {};
  body?: Blob;
  status = 0;
  responseText = '';
  private listeners: Record<string, Array<() => void>> = {};
  private progress: Array<(event: UploadProgress) => void> = [];
  readonly upload = { addEventListener: (_type: 'progress', listener: (event: UploadProgress) => void) => void this.progress.push(listener) };
  constructor(private readonly answer: (request: FakeRequest) => void) {}
  open(method: string, url: string) {
    this.method = method;
    this.url = url;
  }
  setRequestHeader(name: string, value: string) {
    this.headers[name] = value;
  }
  addEventListener(type: 'load' | 'error' | 'abort', listener: () => void) {
    (this.listeners[type] ??= []).push(listener);
  }
  send(body: Blob) {
    this.body = body;
    queueMicrotask(() => this.answer(this));
  }
  /** What the browser does as the bytes go, then with S3's answer. */
  sent(loaded: number, total: number) {
    for (const listener of this.progress) listener({ loaded, total, lengthComputable: true });
  }
  fire(type: 'load' | 'error' | 'abort', status = 0, responseText = '') {
    this.status = status;
    this.responseText = responseText;
    for (const listener of this.listeners[type] ?? []) listener();
  }
}

const s3Error = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>LOCAL1</RequestId></Error>`;
const UPLOAD: FirmwareUpload = {
  method: 'PUT',
  url: 'http://127.0.0.1:4566/fleetstream-firmware/wks-1/app/1.2.0?X-Amz-Signature=abc',
  headers: { 'x-amz-checksum-sha256': 'q83vEjRWeJA=' },
  expires_at: '2026-11-26T10:00:00.000Z',
};

describe('the firmware upload’s pieces', () => {
  it('computes the SHA-256 as 64 lowercase hex digits, as sha256sum does', async () => {
    const bytes = new TextEncoder().encode('firmware image '.repeat(1000));
    expect(await sha256Hex(bytes.buffer as ArrayBuffer, crypto.subtle)).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('says where Web Crypto is missing (a page over plain http on another host)', async () => {
    const error = await sha256Hex(new ArrayBuffer(1), undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadError);
    expect(describeError(error).lines[0]).toMatch(/https/);
  });

  it('formats sizes for people', () => {
    expect([formatBytes(512), formatBytes(61_440), formatBytes(1.5 * 1024 ** 2), formatBytes(2 * 1024 ** 3)]).toEqual([
      '512 B',
      '60.0 KB',
      '1.5 MB',
      '2.00 GB',
    ]);
  });

  it('reads S3’s error code and message from its XML', () => {
    expect(s3ErrorOf(s3Error('BadDigest', 'The sha256 you specified did not match the calculated checksum.'))).toEqual({
      code: 'BadDigest',
      message: 'The sha256 you specified did not match the calculated checksum.',
    });
    expect(s3ErrorOf('')).toEqual({ code: '', message: '' });
  });

  it.each([
    [400, s3Error('BadDigest', 'The sha256 you specified did not match.'), /not the registered one/, /changed after it was read/],
    [403, s3Error('AccessDenied', 'Request has expired'), /address expired/, /registered again for a fresh address/],
    [403, s3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match'), /signature/, /exactly the headers/],
    [0, '', /did not reach the storage/, /CORS/],
    [400, s3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size'), /too large/, /2\.00 GB/],
    [503, s3Error('SlowDown', 'Please reduce your request rate.'), /HTTP 503 SlowDown/, /reduce your request rate/],
  ])('describes an S3 answer %i in words with what to do', (status, body, title, line) => {
    const { title: said, lines } = describeError(describeUploadRefusal(status, body));
    expect(said).toMatch(title);
    expect(lines.join(' ')).toMatch(line);
  });
});

describe('putWithProgress', () => {
  it('PUTs the file to the presigned URL with exactly the headers given, reporting the bytes sent', async () => {
    const file = new Blob([new Uint8Array(1000)]);
    const progress: Array<[number, number]> = [];
    let request: FakeRequest | undefined;
    const done = putWithProgress(
      UPLOAD,
      file,
      (sent, total) => progress.push([sent, total]),
      () =>
        (request = new FakeRequest((r) => {
          r.sent(400, 1000);
          r.sent(1000, 1000);
          r.fire('load', 200);
        })),
    );

    await expect(done).resolves.toBeUndefined();
    expect(request).toMatchObject({ method: 'PUT', url: UPLOAD.url, headers: UPLOAD.headers, body: file });
    expect(progress).toEqual([
      [400, 1000],
      [1000, 1000],
      [1000, 1000],
    ]);
  });

  it('rejects with S3’s refusal in words, and with a network failure or CORS refusal', async () => {
    const file = new Blob([new Uint8Array(10)]);
    const refused = await putWithProgress(
      UPLOAD,
      file,
      () => {},
      () => new FakeRequest((r) => r.fire('load', 400, s3Error('BadDigest', 'x'))),
    ).catch((e: unknown) => e);
    const unreachable = await putWithProgress(
      UPLOAD,
      file,
      () => {},
      () => new FakeRequest((r) => r.fire('error')),
    ).catch((e: unknown) => e);
    const stopped = await putWithProgress(
      UPLOAD,
      file,
      () => {},
      () => new FakeRequest((r) => r.fire('abort')),
    ).catch((e: unknown) => e);

    expect(refused).toMatchObject({ name: 'UploadError', status: 400, code: 'BadDigest' });
    expect(unreachable).toMatchObject({ name: 'UploadError', status: 0, message: 'The upload did not reach the storage.' });
    expect(stopped).toMatchObject({ name: 'UploadError', message: 'The upload was stopped.' });
  });
});

describe('uploadFirmware', () => {
  const firmware = (status: Firmware['status'], extra: Partial<Firmware> = {}): Firmware => ({
    workspace_id: 'wks-1',
    firmware_id: 'app',
    version: '1.2.0',
    size: 3,
    sha256: createHash('sha256').update('abc').digest('hex'),
    description: 'first',
    status,
    created_at: '2026-11-26T09:00:00.000Z',
    updated_at: '2026-11-26T09:00:00.000Z',
    ...extra,
  });

  it('hashes the file, registers it by size and SHA-256, uploads it, then reads the version until it is ready', async () => {
    const registered: unknown[] = [];
    const reads: string[] = [];
    const answers = [firmware('awaiting_upload'), firmware('awaiting_upload'), firmware('ready')];
    const api = {
      registerFirmware: async (...args: unknown[]) => (registered.push(args), firmware('awaiting_upload', { upload: UPLOAD })),
      getFirmware: async (ws: string, id: string, version: string) => (reads.push(`${ws}/${id}/${version}`), answers.shift()!),
    };
    const steps: UploadStep[] = [];
    const slept: number[] = [];

    const ready = await uploadFirmware(
      { workspaceId: 'wks-1', firmwareId: 'app', version: '1.2.0', description: 'first', file: new Blob(['abc']) },
      (s) => steps.push(s),
      {
        api,
        subtle: crypto.subtle,
        request: () =>
          new FakeRequest((r) => {
            r.sent(3, 3);
            r.fire('load', 200);
          }),
        sleep: async (ms) => void slept.push(ms),
      },
    );

    expect(ready.status).toBe('ready');
    expect(registered).toEqual([['wks-1', 'app', '1.2.0', { size: 3, sha256: createHash('sha256').update('abc').digest('hex'), description: 'first' }]]);
    expect(reads).toEqual(['wks-1/app/1.2.0', 'wks-1/app/1.2.0', 'wks-1/app/1.2.0']);
    expect(slept).toEqual([1000, 1000]);
    expect(steps.map((s) => s.step)).toEqual(['reading', 'registering', 'uploading', 'uploading', 'uploading', 'checking', 'ready']);
    expect(steps[3]).toEqual({ step: 'uploading', sent: 3, total: 3 });
  });

  it('refuses an empty file and one over 2 GiB before registering anything', async () => {
    const calls: unknown[] = [];
    const api = { registerFirmware: async (...args: unknown[]) => (calls.push(args), firmware('awaiting_upload')), getFirmware: async () => firmware('ready') };
    const deps = { api, request: () => new FakeRequest(() => {}), subtle: crypto.subtle };
    const target = { workspaceId: 'wks-1', firmwareId: 'app', version: '1', description: '' };

    await expect(uploadFirmware({ ...target, file: new Blob([]) }, () => {}, deps)).rejects.toThrow('The file is empty.');
    await expect(uploadFirmware({ ...target, file: { size: 3 * 1024 ** 3 } as Blob }, () => {}, deps)).rejects.toThrow(/at most 2\.00 GB/);
    expect(calls).toEqual([]);
  });

  it('says so when the version is still not ready at the deadline', async () => {
    let now = 0;
    let reads = 0;
    const api = {
      registerFirmware: async () => firmware('awaiting_upload', { upload: UPLOAD }),
      getFirmware: async () => (reads++, firmware('awaiting_upload')),
    };
    const error = await uploadFirmware({ workspaceId: 'wks-1', firmwareId: 'app', version: '1.2.0', description: '', file: new Blob(['abc']) }, () => {}, {
      api,
      request: () => new FakeRequest((r) => r.fire('load', 200)),
      subtle: crypto.subtle,
      sleep: async (ms) => void (now += ms),
      now: () => now,
      readyWithinMs: 3_000,
    }).catch((e: unknown) => e);

    expect(describeError(error)).toEqual({
      title: 'The image was uploaded, but app 1.2.0 is not ready yet.',
      lines: [expect.stringMatching(/upload it again/)],
    });
    expect(reads).toBe(4);
  });
});
