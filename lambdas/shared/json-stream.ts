import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { ApiEvent } from './http';
import type { StreamedResult } from './middleware';

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

/** Fields written after the records, once they are all read (a paged list's `next`). */
export type Trailer = () => Record<string, unknown>;

async function* jsonChunks(open: string, first: IteratorResult<unknown>, records: AsyncIterator<unknown>, close: () => string): AsyncGenerator<string> {
  try {
    let chunk = open;
    let separator = '';
    for (let next = first; !next.done; next = await records.next()) {
      chunk += separator + JSON.stringify(next.value);
      separator = ',';
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
    }
    yield `${chunk}${close()}`;
  } finally {
    // A client that hangs up stops the reading too.
    await records.return?.();
  }
}

/**
 * A 200 answer `{"<key>":[…records]}` sent as the records are read, gzipped when the client
 * accepts it; memory holds one chunk, whatever the number of records. The `trailer`'s fields, if
 * any, follow the array (`{"devices":[…],"next":"…"}`). The first record is read
 * before answering, so that an error until then (a missing table, throttling) still gets its
 * status and the error envelope; an error after the first byte cuts the answer short, which a
 * client sees as a broken response rather than a short valid one.
 */
export const streamJson = (event: ApiEvent, key: string, records: AsyncIterable<unknown>, trailer?: Trailer): Promise<StreamedResult> =>
  streamJsonArrayIn(event, `{${JSON.stringify(key)}:[`, records, () => {
    const more = trailer ? JSON.stringify(trailer()).slice(1, -1) : '';
    return `]${more ? `,${more}` : ''}}`;
  });

/**
 * As `streamJson`, with the array inside a document of its own: `open` is the JSON text before the
 * array's first element (ending in `[`), `close` what follows its last (`]}}`), or a function that
 * writes it once every record is read.
 */
export const streamJsonArrayIn = async (
  event: ApiEvent,
  open: string,
  records: AsyncIterable<unknown>,
  close: string | (() => string),
): Promise<StreamedResult> => {
  const iterator = records[Symbol.asyncIterator]();
  const first = await iterator.next();
  const json = Readable.from(jsonChunks(open, first, iterator, typeof close === 'string' ? () => close : close), { objectMode: false });
  const gzip = acceptsGzip(event);
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json', vary: 'Accept-Encoding', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
    // pipeline passes an error of the records on to the gzip stream, which the runtime is reading.
    body: gzip ? pipeline(json, createGzip(), () => undefined) : json,
  };
};

/**
 * A list read as it is sent: its items in the list's order, and, when the client asked for a page
 * (`limit` or `cursor`), the cursor of the next page, known once the items are read (`null`: none).
 */
export interface StreamedList<T> {
  items: AsyncIterable<T>;
  /** Undefined when the list is not paged: the answer is then exactly the interface's. */
  next?: () => string | null;
}

/**
 * The 200 answer of a list route, streamed: `{"<key>":[…]}` as the interface defines it, with
 * `"next"` after the array when the client asked for a page.
 */
export const streamList = <T>(event: ApiEvent, key: string, list: StreamedList<T>): Promise<StreamedResult> => {
  const { next } = list;
  return streamJson(event, key, list.items, next && (() => ({ next: next() })));
};

/**
 * `{"<key>":{…fields,"<listKey>":[…records]}}` streamed as `streamJson` streams (the fleet-wide
 * job and FOTA answers, whose `devices` come as their items are written).
 */
export const streamJsonWithList = (event: ApiEvent, key: string, fields: object, listKey: string, records: AsyncIterable<unknown>) =>
  streamJsonArrayIn(event, `{${JSON.stringify(key)}:${JSON.stringify(fields).slice(0, -1)},${JSON.stringify(listKey)}:[`, records, ']}}');
