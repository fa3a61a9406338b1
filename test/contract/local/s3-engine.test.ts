/**
 * The local S3 (fauxqs behind local/s3-engine.ts) against the real S3 clients: `@aws-sdk/client-s3`,
 * `@aws-sdk/s3-request-presigner` and `@aws-sdk/lib-storage`, and plain HTTP as a device or curl
 * sends it. Every refusal is checked for S3's documented status and error code.
 */
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
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { HttpRequest } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '../../../local/s3-auth';
import { startLocalS3, type LocalS3 } from '../../../local/s3-engine';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
const BUCKET = 'contract-firmware';
const CONSOLE = 'http://127.0.0.1:3000';

let fauxqs: FauxqsServer;
let s3: LocalS3;
let client: S3Client;

const clientOf = (endpoint: string, credentials = CREDENTIALS) => new S3Client({ endpoint, region: REGION, credentials });
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64');

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  s3 = await startLocalS3({ engine: fauxqs.address, credentials: { local: 'local' } });
  await s3.createBucket(BUCKET, [
    {
      allowedOrigins: [CONSOLE],
      allowedMethods: ['PUT'],
      allowedHeaders: ['content-type', 'x-amz-checksum-sha256'],
      exposedHeaders: ['ETag'],
      maxAgeSeconds: 3600,
    },
  ]);
  client = clientOf(s3.endpoint);
});
afterAll(async () => {
  client?.destroy();
  await s3?.stop();
  await fauxqs?.stop();
});

/** Sends a request as a device or curl does: the URL as given, these headers, this body (a Content-Length unless `chunked`). */
const send = (method: string, url: string, headers: Record<string, string> = {}, body?: Buffer, chunked = false) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const req = request(url, { method, headers: { ...headers, ...(body && !chunked ? { 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (chunked && body) req.write(body);
    req.end(chunked ? undefined : body);
  });

const codeOf = (xml: Buffer) => /<Code>([^<]+)<\/Code>/.exec(xml.toString('utf8'))?.[1];

/** A presigned PUT as the firmware registration makes it: the checksum header signed, not hoisted. */
const presignedPut = (key: string, body: Buffer, options: { expiresIn?: number; signingDate?: Date } = {}) =>
  getSignedUrl(client, new PutObjectCommand({ Bucket: BUCKET, Key: key, ChecksumSHA256: sha256(body) }), {
    expiresIn: options.expiresIn ?? 900,
    signingDate: options.signingDate,
    unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
  });

describe('the local S3: signatures', () => {
  it('serves the SDK’s signed requests: put, head, get', async () => {
    const body = randomBytes(1000);

    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'sdk/plain', Body: body }));
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sdk/plain' }));
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'sdk/plain' }));

    expect(head.ContentLength).toBe(1000);
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(body);
  });

  it('decodes and checks a streamed body (aws-chunked with a trailing CRC32), as the SDK sends one of unknown length', async () => {
    const body = randomBytes(200_000);

    await client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'sdk/streamed',
        Body: Readable.from([body.subarray(0, 70_000), body.subarray(70_000)]),
        ContentLength: body.length,
      }),
    );
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'sdk/streamed' }));

    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(body);
  });

  it('refuses a request signed with another secret (403 SignatureDoesNotMatch) or by an unknown key (403 InvalidAccessKeyId)', async () => {
    const wrongSecret = clientOf(s3.endpoint, { accessKeyId: 'local', secretAccessKey: 'not-local' });
    const unknownKey = clientOf(s3.endpoint, { accessKeyId: 'AKIAOTHER', secretAccessKey: 'local' });

    await expect(wrongSecret.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'sdk/refused', Body: 'x' }))).rejects.toMatchObject({
      name: 'SignatureDoesNotMatch',
      $metadata: { httpStatusCode: 403 },
    });
    await expect(unknownKey.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'sdk/plain' }))).rejects.toMatchObject({
      name: 'InvalidAccessKeyId',
      $metadata: { httpStatusCode: 403 },
    });
    await expect(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sdk/refused' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  });

  it('refuses an unsigned request: the buckets are private (403 AccessDenied)', async () => {
    const { status, body } = await send('GET', `${s3.endpoint}/${BUCKET}/sdk/plain`);

    expect([status, codeOf(body)]).toEqual([403, 'AccessDenied']);
  });

  it('refuses a body that is not the signed payload hash (400 XAmzContentSHA256Mismatch)', async () => {
    // Signed as the SDK signs a PutObject (the payload's SHA-256 in x-amz-content-sha256), then sent with other bytes.
    const url = new URL(`${s3.endpoint}/${BUCKET}/sdk/tampered`);
    const signer = new SignatureV4({ credentials: CREDENTIALS, region: REGION, service: 's3', sha256: Sha256, uriEscapePath: false });
    const signed = await signer.sign(
      new HttpRequest({
        method: 'PUT',
        protocol: 'http:',
        hostname: url.hostname,
        port: Number(url.port),
        path: url.pathname,
        headers: { host: url.host, 'x-amz-content-sha256': createHash('sha256').update('signed body').digest('hex') },
      }),
    );

    const put = await send('PUT', url.toString(), signed.headers, Buffer.from('other bytes'));

    expect([put.status, codeOf(put.body)]).toEqual([400, 'XAmzContentSHA256Mismatch']);
    await expect(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sdk/tampered' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  });
});

describe('the local S3: presigned PUTs signed with a SHA-256 checksum', () => {
  const image = randomBytes(64 * 1024);

  it('stores exactly the signed bytes, sent with the signed checksum header', async () => {
    const url = await presignedPut('fw/ok', image);

    const put = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image) }, image);

    expect(put.status).toBe(200);
    expect(put.headers['x-amz-checksum-sha256']).toBe(sha256(image));
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'fw/ok' }));
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(image);
  });

  it('refuses other bytes with the signed checksum (400 BadDigest) and stores nothing', async () => {
    const url = await presignedPut('fw/bad', image);
    const other = Buffer.from(image);
    other[100] ^= 0xff;

    const put = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image) }, other);

    expect([put.status, codeOf(put.body)]).toEqual([400, 'BadDigest']);
    await expect(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'fw/bad' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
  });

  it('refuses the other bytes’ own checksum, or no checksum header, in place of the signed one (403 SignatureDoesNotMatch)', async () => {
    const url = await presignedPut('fw/bad', image);
    const other = randomBytes(1000);

    const otherChecksum = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(other) }, other);
    const noChecksum = await send('PUT', url, {}, other);

    expect([otherChecksum.status, codeOf(otherChecksum.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    expect([noChecksum.status, codeOf(noChecksum.body)]).toEqual([403, 'SignatureDoesNotMatch']);
  });

  it('refuses a tampered signature or another key than the signed one (403 SignatureDoesNotMatch)', async () => {
    const url = new URL(await presignedPut('fw/ok', image));
    const signature = url.searchParams.get('X-Amz-Signature')!;
    const tampered = new URL(url);
    tampered.searchParams.set('X-Amz-Signature', `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`);
    const otherKey = new URL(url);
    otherKey.pathname = `/${BUCKET}/fw/elsewhere`;

    const results = await Promise.all([tampered, otherKey].map((u) => send('PUT', u.toString(), { 'x-amz-checksum-sha256': sha256(image) }, image)));

    expect(results.map((r) => [r.status, codeOf(r.body)])).toEqual([
      [403, 'SignatureDoesNotMatch'],
      [403, 'SignatureDoesNotMatch'],
    ]);
  });

  it('refuses a URL past its expiry (403 AccessDenied, "Request has expired")', async () => {
    const url = await presignedPut('fw/late', image, { expiresIn: 3600, signingDate: new Date(Date.now() - 3601_000) });

    const put = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image) }, image);

    expect([put.status, codeOf(put.body)]).toEqual([403, 'AccessDenied']);
    expect(put.body.toString()).toContain('<Message>Request has expired</Message>');
  });

  it('refuses an expiry over a week (400 AuthorizationQueryParametersError)', async () => {
    const url = new URL(await presignedPut('fw/ok', image));
    url.searchParams.set('X-Amz-Expires', String(7 * 24 * 3600 + 1));

    const put = await send('PUT', url.toString(), { 'x-amz-checksum-sha256': sha256(image) }, image);

    expect([put.status, codeOf(put.body)]).toEqual([400, 'AuthorizationQueryParametersError']);
  });

  it('refuses a body without a Content-Length (411 MissingContentLength)', async () => {
    const url = await presignedPut('fw/chunked', image);

    const put = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image) }, image, true);

    expect([put.status, codeOf(put.body)]).toEqual([411, 'MissingContentLength']);
  });

  it('answers the stored SHA-256 to HeadObject and GetObject in checksum mode only', async () => {
    const withMode = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'fw/ok', ChecksumMode: 'ENABLED' }));
    const without = await send('HEAD', await getSignedUrl(client, new HeadObjectCommand({ Bucket: BUCKET, Key: 'fw/ok' })));
    const plain = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'sdk/plain', ChecksumMode: 'ENABLED' }));

    expect(withMode.ChecksumSHA256).toBe(sha256(image));
    expect(withMode.ContentLength).toBe(image.length);
    expect(without.headers['x-amz-checksum-sha256']).toBeUndefined();
    expect(plain.ChecksumSHA256).toBeUndefined();
  });

  it('never answers the kept checksum as user metadata', async () => {
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'fw/ok' }));

    expect(head.Metadata).toEqual({});
  });

  it('serves a presigned GET (checksum in its answer), refuses it once expired, and refuses the object to no signature', async () => {
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: 'fw/ok' }), { expiresIn: 3600 });
    const expired = await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: 'fw/ok' }), {
      expiresIn: 60,
      signingDate: new Date(Date.now() - 61_000),
    });

    const got = await send('GET', url);
    const late = await send('GET', expired);
    const bare = await send('GET', url.split('?')[0]);

    expect(got.status).toBe(200);
    expect(got.body).toEqual(image);
    expect(got.headers['x-amz-checksum-sha256']).toBe(sha256(image));
    expect([late.status, codeOf(late.body)]).toEqual([403, 'AccessDenied']);
    expect([bare.status, codeOf(bare.body)]).toEqual([403, 'AccessDenied']);
  });

  it('mends an object of other bytes with a PUT of the right ones while the URL is valid', async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'fw/mend', Body: Buffer.from('wrong') }));
    const url = await presignedPut('fw/mend', image);

    await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image) }, image);
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'fw/mend', ChecksumMode: 'ENABLED' }));

    expect([head.ContentLength, head.ChecksumSHA256]).toEqual([image.length, sha256(image)]);
  });

  it('stores an image past the engine’s body limit (12 MiB) whole, with its checksum', async () => {
    const big = randomBytes(12 * 1024 * 1024);
    const url = await presignedPut('fw/big', big, { expiresIn: 3600 });

    const put = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(big) }, big);
    const got = await send('GET', await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: 'fw/big' })));

    expect(put.status).toBe(200);
    expect(got.body.equals(big)).toBe(true);
    expect(got.headers['x-amz-checksum-sha256']).toBe(sha256(big));
  });
});

describe('the local S3: headers a presigned URL was not signed with', () => {
  const image = randomBytes(4096);
  const headObjectOf = (key: string) => client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).catch((error) => error.$metadata?.httpStatusCode);
  const notSigned = (answer: { status: number; body: Buffer }) => {
    const xml = answer.body.toString('utf8');
    return [answer.status, codeOf(answer.body), /<Message>([^<]+)</.exec(xml)?.[1], /<HeadersNotSigned>([^<]+)</.exec(xml)?.[1]];
  };

  it('refuses an x-amz-copy-source added to a presigned PUT (403 AccessDenied, HeadersNotSigned), and copies nothing', async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'private/source', Body: Buffer.from('another object') }));
    const url = await presignedPut('fw/copy-target', image);

    // The signed bytes, so that every signed check passes: the added header would make it a CopyObject.
    const copy = await send('PUT', url, { 'x-amz-checksum-sha256': sha256(image), 'x-amz-copy-source': `/${BUCKET}/private/source` }, image);

    expect(notSigned(copy)).toEqual([403, 'AccessDenied', 'There were headers present in the request which were not signed', 'x-amz-copy-source']);
    expect(await headObjectOf('fw/copy-target')).toBe(404);
  });

  it('refuses other x-amz-* headers added to a presigned PUT of the right bytes (metadata, tagging, storage class), naming each, and stores nothing', async () => {
    const url = await presignedPut('fw/extra-headers', image);

    const put = await send(
      'PUT',
      url,
      { 'x-amz-checksum-sha256': sha256(image), 'x-amz-meta-owner': 'attacker', 'X-Amz-Tagging': 'a=b', 'x-amz-storage-class': 'GLACIER' },
      image,
    );

    expect(notSigned(put)).toEqual([
      403,
      'AccessDenied',
      'There were headers present in the request which were not signed',
      'x-amz-meta-owner, x-amz-tagging, x-amz-storage-class',
    ]);
    expect(await headObjectOf('fw/extra-headers')).toBe(404);
  });

  it('refuses an x-amz-* header added to a presigned GET, and still takes x-amz-content-sha256 unsigned, as S3 does', async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'fw/get-headers', Body: image }));
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: BUCKET, Key: 'fw/get-headers' }), { expiresIn: 600 });

    const extra = await send('GET', url, { 'x-amz-server-side-encryption-customer-algorithm': 'AES256' });
    const payloadHash = await send('GET', url, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' });
    const plain = await send('GET', url, { 'user-agent': 'curl/8', 'x-amzn-trace-id': 'Root=1-abc' });

    expect(notSigned(extra)).toEqual([
      403,
      'AccessDenied',
      'There were headers present in the request which were not signed',
      'x-amz-server-side-encryption-customer-algorithm',
    ]);
    expect([payloadHash.status, plain.status]).toEqual([200, 200]);
  });
});

describe('the local S3: other checks and uses', () => {
  it('refuses a wrong Content-MD5 (400 BadDigest) and one that is no MD5 (400 InvalidDigest)', async () => {
    const body = Buffer.from('checked');
    const md5 = (b: Buffer) => createHash('md5').update(b).digest('base64');

    await expect(client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'md5', Body: body, ContentMD5: md5(Buffer.from('other')) }))).rejects.toMatchObject({
      name: 'BadDigest',
      $metadata: { httpStatusCode: 400 },
    });
    await expect(client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'md5', Body: body, ContentMD5: 'bm90IG1kNQ==' }))).rejects.toMatchObject({
      name: 'InvalidDigest',
      $metadata: { httpStatusCode: 400 },
    });
  });

  it('checks each part of a multipart upload, and assembles lib-storage’s parts (as an export streams its result)', async () => {
    const body = randomBytes(11 * 1024 * 1024);
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'parts/refused' }));

    await expect(
      client.send(
        new UploadPartCommand({
          Bucket: BUCKET,
          Key: 'parts/refused',
          UploadId,
          PartNumber: 1,
          Body: body.subarray(0, 100),
          ChecksumSHA256: sha256(body.subarray(0, 99)),
        }),
      ),
    ).rejects.toMatchObject({ name: 'BadDigest' });
    await new Upload({ client, params: { Bucket: BUCKET, Key: 'parts/whole', Body: Readable.from([body]) }, partSize: 5 * 1024 * 1024 }).done();
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'parts/whole' }));

    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
  });

  it('lists an upload’s parts (ListParts, paged), so that another process can complete it; a completed or aborted upload is NoSuchUpload', async () => {
    const [first, last] = [randomBytes(5 * 1024 * 1024), Buffer.from('the end')];
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'parts/listed' }));
    const sent = [
      await client.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'parts/listed', UploadId, PartNumber: 1, Body: first })),
      await client.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'parts/listed', UploadId, PartNumber: 2, Body: last })),
    ];
    const aborted = (await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'parts/aborted' }))).UploadId;
    await client.send(new UploadPartCommand({ Bucket: BUCKET, Key: 'parts/aborted', UploadId: aborted, PartNumber: 1, Body: last }));

    const page1 = await client.send(new ListPartsCommand({ Bucket: BUCKET, Key: 'parts/listed', UploadId, MaxParts: 1 }));
    const page2 = await client.send(new ListPartsCommand({ Bucket: BUCKET, Key: 'parts/listed', UploadId, PartNumberMarker: page1.NextPartNumberMarker }));
    const parts = [...page1.Parts!, ...page2.Parts!];
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key: 'parts/listed',
        UploadId,
        MultipartUpload: { Parts: parts.map(({ PartNumber, ETag }) => ({ PartNumber, ETag })) },
      }),
    );
    await client.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'parts/aborted', UploadId: aborted }));
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'parts/listed' }));

    expect([page1.IsTruncated, page2.IsTruncated]).toEqual([true, false]);
    expect(parts.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual([
      [1, sent[0].ETag, first.length],
      [2, sent[1].ETag, last.length],
    ]);
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(Buffer.concat([first, last]))).toBe(true);
    for (const [Key, id] of [
      ['parts/listed', UploadId],
      ['parts/aborted', aborted],
      ['parts/listed', 'no-such-upload'],
    ]) {
      await expect(client.send(new ListPartsCommand({ Bucket: BUCKET, Key, UploadId: id }))).rejects.toMatchObject({
        name: 'NoSuchUpload',
        $metadata: { httpStatusCode: 404 },
      });
    }
  });

  it('answers a CORS preflight from the bucket’s rules: the console’s PUT with the checksum header, and nothing else', async () => {
    const preflight = (origin: string, method: string, headers: string) =>
      send('OPTIONS', `${s3.endpoint}/${BUCKET}/fw/ok`, { origin, 'access-control-request-method': method, 'access-control-request-headers': headers });

    const allowed = await preflight(CONSOLE, 'PUT', 'content-type,x-amz-checksum-sha256');
    const otherOrigin = await preflight('http://evil.example', 'PUT', 'content-type');
    const otherMethod = await preflight(CONSOLE, 'DELETE', '');

    expect(allowed.status).toBe(200);
    expect(allowed.headers).toMatchObject({ 'access-control-allow-origin': CONSOLE, 'access-control-allow-methods': 'PUT', 'access-control-max-age': '3600' });
    expect([otherOrigin.status, otherMethod.status]).toEqual([403, 403]);
  });

  it('adds the CORS headers to the console’s PUT itself', async () => {
    const body = Buffer.from('from the browser');
    const url = await presignedPut('cors/put', body);

    const put = await send('PUT', url, { origin: CONSOLE, 'x-amz-checksum-sha256': sha256(body) }, body);

    expect(put.status).toBe(200);
    expect(put.headers['access-control-allow-origin']).toBe(CONSOLE);
    expect(put.headers['access-control-expose-headers']).toBe('ETag');
  });

  it('keeps objects in its data folder: a restart on it serves them again, checksums included', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fleetstream-s3-'));
    const body = randomBytes(9 * 1024 * 1024);
    const first = { engine: await startFauxqs({ port: 0, logger: false }) };
    const before = await startLocalS3({ engine: first.engine.address, credentials: { local: 'local' }, dataDir });
    await before.createBucket('kept');
    const beforeClient = clientOf(before.endpoint);
    await beforeClient.send(
      new PutObjectCommand({ Bucket: 'kept', Key: 'a/b', Body: body, ChecksumSHA256: sha256(body), ContentType: 'application/octet-stream' }),
    );
    await beforeClient.send(new PutObjectCommand({ Bucket: 'kept', Key: 'gone', Body: 'x' }));
    await beforeClient.send(new DeleteObjectCommand({ Bucket: 'kept', Key: 'gone' }));
    beforeClient.destroy();
    await before.stop();
    await first.engine.stop();

    const engine = await startFauxqs({ port: 0, logger: false });
    const after = await startLocalS3({ engine: engine.address, credentials: { local: 'local' }, dataDir });
    const afterClient = clientOf(after.endpoint);
    try {
      const head = await afterClient.send(new HeadObjectCommand({ Bucket: 'kept', Key: 'a/b', ChecksumMode: 'ENABLED' }));
      const got = await afterClient.send(new GetObjectCommand({ Bucket: 'kept', Key: 'a/b' }));

      expect(head.ChecksumSHA256).toBe(sha256(body));
      expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
      await expect(afterClient.send(new HeadObjectCommand({ Bucket: 'kept', Key: 'gone' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    } finally {
      afterClient.destroy();
      await after.stop();
      await engine.stop();
    }
  });
});
