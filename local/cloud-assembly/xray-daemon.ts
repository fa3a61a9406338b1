import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';

/** What the stand-in for a function's X-Ray daemon received: the names of the (sub)segments its SDK sent. */
export interface ReceivedTrace {
  /** Segment documents received (the SDK sends each subsegment of an invocation in its own datagram). */
  segments: number;
  /** The names they carried, each once: `## index.handler`, `DynamoDB`, a webhook's host… */
  names: string[];
}

/**
 * A stand-in for the X-Ray daemon that Lambda runs beside a function with active tracing: a UDP
 * listener on 127.0.0.1 that reads what the function's X-Ray SDK sends (a header line, then a
 * segment document, per datagram; https://docs.aws.amazon.com/xray/latest/devguide/xray-api-sendingdata.html)
 * and keeps what came, so that the runtime can report that the function traced its work. Nothing
 * is forwarded anywhere.
 */
export const startXrayDaemon = async (): Promise<{ address: string; received: () => ReceivedTrace; stop: () => Promise<void> }> => {
  const socket: Socket = createSocket('udp4');
  let segments = 0;
  const names = new Set<string>();
  socket.on('message', (datagram) => {
    const [, document] = datagram.toString('utf8').split('\n', 2);
    try {
      const segment = JSON.parse(document ?? '') as { name?: string; subsegments?: Array<{ name?: string }> };
      segments += 1;
      for (const name of [segment.name, ...(segment.subsegments ?? []).map((s) => s.name)]) if (name) names.add(name);
    } catch {
      // Not a segment document: ignored, as the daemon drops it.
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    received: () => ({ segments, names: [...names].sort() }),
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
};

/**
 * A trace header as Lambda gives each invocation of a traced function (`_X_AMZN_TRACE_ID`): a new
 * root (version 1, the time in seconds in hex, 96 random bits), the Lambda segment as parent, sampled.
 */
export const newTraceHeader = (now = Date.now()) =>
  `Root=1-${Math.floor(now / 1000).toString(16)}-${randomBytes(12).toString('hex')};Parent=${randomBytes(8).toString('hex')};Sampled=1`;
