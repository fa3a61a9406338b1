import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorEnvelope, gatewayError } from './api-gateway-responses';

// API Gateway REST limits: https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html
// (payload 10 MB; URL of a regional API 10,240 characters; request line and headers 10,240 bytes).
const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
const MAX_URL_CHARS = 10_240;
const MAX_HEAD_BYTES = 10_240;
/**
 * Node parses at most this much head before giving up (its own default); what lies between
 * MAX_HEAD_BYTES and this is refused by the request handler with the same answers.
 */
export const PARSER_HEAD_BYTES = 16 * 1024;
// An oversized body is read and thrown away up to this many bytes after the 413 is sent, so a
// client that is still sending (fetch, which reads no answer before its upload is done) sees the
// 413 rather than a reset; a client sending even more is cut off.
const MAX_DISCARDED_BYTES = 64 * 1024 * 1024;

const PAYLOAD_TOO_LARGE = `The request is larger than ${MAX_PAYLOAD_BYTES / 1024 / 1024} MB.`;

/** The request line of what the parser refused (all of it when no line end was received). */
const requestLineOf = (raw: Buffer | undefined) => {
  const text = raw?.toString('latin1') ?? '';
  const end = text.indexOf('\r\n');
  return end === -1 ? text : text.slice(0, end);
};

/**
 * Answers a request that Node's HTTP parser refused before any handler ran (a head over its
 * limit, a malformed request), on the raw socket, in the same envelope; Node's own answer is a
 * bare status line.
 */
export const answerClientError = (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = randomUUID();
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? // The parser stopped before the end of the request line: the URL is what is too long.
        requestLineOf(error.rawPacket).length > MAX_URL_CHARS
        ? [414, `The URL is longer than ${MAX_URL_CHARS} characters.`]
        : [431, `The request line and headers are larger than ${MAX_HEAD_BYTES} bytes.`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'HPE_HEADERS_TIMEOUT'
        ? [408, 'The request was not received in time.']
        : [400, 'The request is not valid HTTP/1.1.'];
  const body = errorEnvelope(status === 408 ? 'request_timeout' : 'bad_request', message, requestId);
  // Whatever the client still sends is read and dropped, so that closing does not reset the
  // connection before the client has read the answer.
  socket.on('data', () => undefined);
  (socket as Socket).setTimeout(5_000, () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-amzn-requestid: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
};

/** Size of the request line and headers as received (API Gateway's 10,240-byte quota counts both). */
const headBytes = (req: IncomingMessage) =>
  Buffer.byteLength(`${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`) +
  // each header is `name: value\r\n`: two bytes after the name, two after the value
  req.rawHeaders.reduce((sum, part) => sum + Buffer.byteLength(part) + 2, 0);

/**
 * Answers 413 for a body over the payload limit while the client may still be sending it. The whole
 * answer is written at once (with its length, so the client has it all), but the response is ended
 * only when the client has finished sending: ending it earlier would let Node close a
 * `Connection: close` socket under a client still writing (fetch reads no answer before its upload
 * is done), which it would see as a reset. What it sends meanwhile is thrown away, up to
 * MAX_DISCARDED_BYTES; a client sending even more is cut off.
 */
export const refuseOversizeBody = (req: IncomingMessage, res: ServerResponse, requestId: string) => {
  const body = errorEnvelope('payload_too_large', PAYLOAD_TOO_LARGE, requestId);
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'x-amzn-requestid': requestId });
  res.write(body);
  if (req.readableEnded) return void res.end();
  let discarded = 0;
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DISCARDED_BYTES) req.socket.destroy();
  });
  req.once('end', () => res.end());
  req.resume();
};

/** The body, or undefined once it grows over the payload limit (the caller answers 413). */
export const readBody = (req: IncomingMessage) =>
  new Promise<Buffer | undefined>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_PAYLOAD_BYTES) {
        req.off('data', onData);
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** The declared body size is over the payload limit (a chunked body is measured as it is read). */
const declaresOversizeBody = (req: IncomingMessage) => Number(req.headers['content-length'] ?? 0) > MAX_PAYLOAD_BYTES;

/**
 * Refuses a request whose URL, request line and headers, or declared body are over API Gateway's
 * limits, before anything else reads it; true when it did.
 */
export const refuseOverLimits = (req: IncomingMessage, res: ServerResponse, requestId: string): boolean => {
  if ((req.url ?? '/').length > MAX_URL_CHARS) {
    gatewayError(res, 414, 'bad_request', `The URL is longer than ${MAX_URL_CHARS} characters.`, requestId);
    return true;
  }
  if (headBytes(req) > MAX_HEAD_BYTES) {
    gatewayError(res, 431, 'bad_request', `The request line and headers are larger than ${MAX_HEAD_BYTES} bytes.`, requestId);
    return true;
  }
  if (declaresOversizeBody(req)) {
    refuseOversizeBody(req, res, requestId);
    return true;
  }
  return false;
};

/**
 * The server's `checkContinue` listener: `curl` and others ask before sending a large body, which
 * is refused before it is sent; any other request goes on to the server's request handler.
 */
export const continueUnlessOversize = (server: Server) => (req: IncomingMessage, res: ServerResponse) => {
  if (declaresOversizeBody(req)) {
    gatewayError(res, 413, 'payload_too_large', PAYLOAD_TOO_LARGE, randomUUID(), { headers: { connection: 'close' } });
    return;
  }
  res.writeContinue();
  server.emit('request', req, res);
};
