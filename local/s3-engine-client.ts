import { Agent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { S3Refusal } from './s3-auth';
import { escapeXml } from './s3-xml';

// fauxqs takes bodies of up to 11 MiB: a larger object is handed to it as a multipart upload of
// parts this size (S3's parts are 5 MiB to 5 GiB, but for the last).
const ENGINE_PART_BYTES = 8 * 1024 * 1024;

/** A body, read whole; over `max` bytes the request is destroyed and S3's EntityTooLarge refuses it. */
export const readBody = (req: IncomingMessage, max: number) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.destroy();
        reject(new S3Refusal(400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', { MaxSizeAllowed: String(max) }));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** The path-style path of an object, each segment of its key encoded. */
export const objectPath = (bucket: string, key: string) => `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;

/** An answer of the engine, read whole. */
export interface EngineAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** The client of fauxqs's S3 API (path-style at its root), over keep-alive connections. */
export type EngineClient = ReturnType<typeof engineClient>;

/** A client of fauxqs's S3 at `address`. */
export const engineClient = (address: string) => {
  const engine = new URL(address);
  const agent = new Agent({ keepAlive: true });

  /** Sends a request to fauxqs; resolves with its answer, unread. */
  const send = (method: string, path: string, headers: OutgoingHttpHeaders = {}, body?: Buffer) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(
        { host: engine.hostname, port: engine.port, method, path, agent, headers: { ...headers, 'content-length': String(body?.length ?? 0) } },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
  const read = async (answer: IncomingMessage): Promise<EngineAnswer> => ({
    status: answer.statusCode ?? 502,
    headers: answer.headers,
    body: await readBody(answer, Infinity),
  });
  /** Sends a request and reads its answer; an answer of 300 or more is an error. */
  const call = async (method: string, path: string, headers?: OutgoingHttpHeaders, body?: Buffer) => {
    const answer = await read(await send(method, path, headers, body));
    if (answer.status >= 300) throw new Error(`local S3 engine: ${method} ${path} answered ${answer.status}: ${answer.body.toString('utf8').slice(0, 300)}`);
    return answer;
  };

  /**
   * Stores an object in fauxqs: in one PUT, or, past its body limit, as a multipart upload of
   * ENGINE_PART_BYTES parts. Resolves with its ETag.
   */
  const put = async (bucket: string, key: string, body: Buffer, headers: OutgoingHttpHeaders) => {
    const path = objectPath(bucket, key);
    if (body.length <= ENGINE_PART_BYTES) return (await call('PUT', path, headers, body)).headers.etag;
    const created = await call('POST', `${path}?uploads`, headers);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.body.toString('utf8'))![1];
    const parts: string[] = [];
    for (let at = 0, part = 1; at < body.length; at += ENGINE_PART_BYTES, part++) {
      const uploaded = await call('PUT', `${path}?partNumber=${part}&uploadId=${encodeURIComponent(uploadId)}`, {}, body.subarray(at, at + ENGINE_PART_BYTES));
      parts.push(`<Part><PartNumber>${part}</PartNumber><ETag>${escapeXml(String(uploaded.headers.etag))}</ETag></Part>`);
    }
    const done = await call(
      'POST',
      `${path}?uploadId=${encodeURIComponent(uploadId)}`,
      { 'content-type': 'application/xml' },
      Buffer.from(`<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`),
    );
    return /<ETag>([^<]+)<\/ETag>/.exec(done.body.toString('utf8'))?.[1]?.replace(/&quot;/g, '"');
  };

  return { send, read, call, put, destroy: () => agent.destroy() };
};
