import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { ApiEvent } from '../shared/http';
import type { StreamedResult } from '../shared/middleware';

// Records are joined into chunks of about this many characters: fewer, larger writes.
const CHUNK_CHARS = 64 * 1024;

/** Whether the request's Accept-Encoding takes gzip (listed, and not with q=0). */
export const acceptsGzip = (event: ApiEvent): boolean => {
  const headers = [
    ...Object.entries(event.multiValueHeaders ?? {}).flatMap(([name, values]) => (values ?? []).map((value) => [name, value])),
    ...Object.entries(event.headers ?? {}),
  ];
  const codings = headers
    .filter(([name]) => name.toLowerCase() === 'accept-encoding')
    .flatMap(([, value]) => String(value).split(','))
    .map((part) => part.split(';').map((s) => s.trim().toLowerCase()));
  return codings.some(([coding, ...params]) => {
    const q = params.find((p) => p.startsWith('q='));
    return (coding === 'gzip' || coding === 'x-gzip') && (q === undefined || Number(q.slice(2)) > 0);
  });
};

async function* jsonChunks(key: string, first: IteratorResult<unknown>, records: AsyncIterator<unknown>): AsyncGenerator<string> {
  try {
    let chunk = `{${JSON.stringify(key)}:[`;
    let separator = '';
    for (let next = first; !next.done; next = await records.next()) {
      chunk += separator + JSON.stringify(next.value);
      separator = ',';
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    yield `${chunk}]}`;
  } finally {
    // A client that hangs up stops the reading too.
    await records.return?.();
  }
}

/**
 * A 200 answer `{"<key>":[…records]}` sent as the records are read, gzipped when the client
 * accepts it; memory holds one chunk, whatever the number of records. The first record is read
 * before answering, so that an error until then (a missing table, throttling) still gets its
 * status and the error envelope; an error after the first byte cuts the answer short, which a
 * client sees as a broken response rather than a short valid one.
 */
export const streamJson = async (event: ApiEvent, key: string, records: AsyncIterable<unknown>): Promise<StreamedResult> => {
  const iterator = records[Symbol.asyncIterator]();
  const first = await iterator.next();
  const json = Readable.from(jsonChunks(key, first, iterator), { objectMode: false });
  const gzip = acceptsGzip(event);
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json', vary: 'Accept-Encoding', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
    // pipeline passes an error of the records on to the gzip stream, which the runtime is reading.
    body: gzip ? pipeline(json, createGzip(), () => undefined) : json,
  };
};
