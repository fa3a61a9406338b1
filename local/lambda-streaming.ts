import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import type { ServerResponse } from 'node:http';
import { PassThrough, type Writable } from 'node:stream';

/**
 * Lambda response streaming on this machine: the `awslambda` global that the Node.js runtime
 * provides (`streamifyResponse`, `HttpResponseStream.from`), and the gateway side that turns a
 * streamed invocation into an HTTP response, as API Gateway does with ResponseTransferMode.STREAM.
 * The wire format is the runtime's: an HTTP integration response is a JSON prelude
 * ({statusCode, headers, cookies}), eight zero bytes, then the body.
 * https://docs.aws.amazon.com/lambda/latest/dg/config-rs-write-functions.html
 */

// The marker and content type the Node.js runtime uses.
const HANDLER_STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const STREAM_RESPONSE = 'response';
const HTTP_INTEGRATION_RESPONSE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER = Buffer.alloc(8);

/** The stream a streaming handler writes its response to. */
export class ResponseStream extends PassThrough {
  contentType = 'application/octet-stream';

  setContentType(contentType: string) {
    this.contentType = contentType;
  }
}

interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

/** `awslambda.HttpResponseStream`: `from` marks a stream as an HTTP response and writes its prelude. */
// biome-ignore lint/complexity/noStaticOnlyClass: it stands for the runtime's global class, whose `from` callers invoke as a static
class HttpResponseStream {
  static from(stream: Writable & { setContentType: (type: string) => void }, prelude: Prelude) {
    stream.setContentType(HTTP_INTEGRATION_RESPONSE);
    stream.write(JSON.stringify(prelude));
    stream.write(DELIMITER);
    return stream;
  }
}

type StreamingHandler = (event: APIGatewayProxyEvent, stream: ResponseStream, context: Context) => Promise<unknown>;

/** The `awslambda` global of the Lambda Node.js runtime, as much of it as handlers use. */
export const localAwsLambda = {
  streamifyResponse: <H extends StreamingHandler>(handler: H): H => Object.assign(handler, { [HANDLER_STREAMING]: STREAM_RESPONSE }),
  HttpResponseStream,
};

/**
 * Provides the `awslambda` global before streaming handlers load (they call it at import). Other
 * libraries may have made the object already (the SDK's invoke store keeps itself there), so
 * the members are added to it.
 */
export const installAwsLambdaGlobal = () => {
  const global = globalThis as { awslambda?: Record<string, unknown> };
  global.awslambda ??= {};
  global.awslambda.streamifyResponse ??= localAwsLambda.streamifyResponse;
  global.awslambda.HttpResponseStream ??= localAwsLambda.HttpResponseStream;
};

/** Whether a handler was wrapped by `awslambda.streamifyResponse`. */
export const isStreamingHandler = (handler: unknown): handler is StreamingHandler =>
  typeof handler === 'function' && (handler as unknown as Record<symbol, unknown>)[HANDLER_STREAMING] === STREAM_RESPONSE;

/** Splits the prelude off the first bytes of an HTTP integration response, once the delimiter has arrived. */
const splitPrelude = (bytes: Buffer): { prelude: Prelude; rest: Buffer } | undefined => {
  const at = bytes.indexOf(DELIMITER);
  if (at < 0) return undefined;
  return { prelude: JSON.parse(bytes.subarray(0, at).toString('utf8')) as Prelude, rest: bytes.subarray(at + DELIMITER.length) };
};

/**
 * Invokes a streaming handler and relays what it writes to `res` as it comes: status and headers
 * from its prelude, then the body. A handler that fails before the first byte is answered with
 * `onEarlyFailure`; one that fails later has its connection cut, as API Gateway does.
 */
export const relayStreamingInvocation = async (
  handler: StreamingHandler,
  event: APIGatewayProxyEvent,
  context: Context,
  res: ServerResponse,
  extraHeaders: Record<string, string>,
  onEarlyFailure: (error: unknown) => void,
) => {
  const stream = new ResponseStream();
  let head = Buffer.alloc(0);
  let started = false;
  const start = (statusCode: number, headers: Record<string, string | string[]>, body: Buffer) => {
    started = true;
    res.writeHead(statusCode, { ...headers, ...extraHeaders });
    if (body.length) res.write(body);
    stream.pipe(res);
  };
  const onData = (chunk: Buffer) => {
    if (stream.contentType !== HTTP_INTEGRATION_RESPONSE) {
      stream.off('data', onData);
      stream.pause();
      return start(200, { 'content-type': stream.contentType }, chunk);
    }
    head = Buffer.concat([head, chunk]);
    const split = splitPrelude(head);
    if (!split) return;
    stream.off('data', onData);
    stream.pause();
    const { statusCode = 200, headers = {}, cookies = [] } = split.prelude;
    start(statusCode, cookies.length ? { ...headers, 'set-cookie': cookies } : headers, split.rest);
  };
  stream.on('data', onData);
  // The handler's promise reports a failed stream; the stream's own error event needs a listener.
  stream.on('error', () => undefined);
  // A client that hangs up ends the invocation's stream, which stops the handler's reading.
  res.once('close', () => {
    if (!res.writableFinished) stream.destroy();
  });

  try {
    await handler(event, stream, context);
    if (!stream.writableEnded) stream.end();
    if (!started) {
      await new Promise<void>((resolve) => stream.once('end', resolve).once('close', resolve));
      if (!started) start(200, { 'content-type': stream.contentType }, head);
      res.end();
    }
  } catch (error) {
    if (!started) return onEarlyFailure(error);
    res.destroy(error as Error);
  }
};
