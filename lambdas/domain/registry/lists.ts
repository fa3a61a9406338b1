import * as z from 'zod';
import type { PageQuery } from '../../schemas/list';
import { ValidationError } from '../../shared/errors';
import type { StreamedList } from '../../shared/json-stream';
import type { Keyed } from '../../stores/items';

// What a cursor holds: the list it belongs to (`devices/wks-…`) and the sort key of the last item sent.
const CursorSchema = z.strictObject({ l: z.string(), k: z.string() });

const refused = (message: string, cause?: unknown) =>
  new ValidationError('Invalid query: query.cursor.', { details: [{ field: 'query.cursor', message }], cause });

/**
 * A cursor: where a page of one list ended. It is opaque to clients but not secret: it names the
 * list (its kind and owner: a workspace, a device or an account) and the sort key of the last item
 * sent, and the list reads only its own partition whatever a cursor says, so a cursor can never
 * reach another account's items; one of another list is refused rather than misread.
 */
export const makeCursor = (list: string, sk: string) => Buffer.from(JSON.stringify({ l: list, k: sk })).toString('base64url');

/**
 * The sort key a cursor resumes after.
 * @throws ValidationError naming `query.cursor` when it is not a cursor of this list, or its key is outside `prefix`.
 */
export const readCursor = (list: string, cursor: string, prefix: string): string => {
  let parsed: z.infer<typeof CursorSchema>;
  try {
    parsed = CursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch (error) {
    throw refused('Must be the `next` of a page of this list.', error);
  }
  if (parsed.l !== list) throw refused('This cursor belongs to another list: use the `next` of a page of this one.');
  // The bound workspace's place in the workspace list is the empty key (it comes first, whatever its ID).
  if (parsed.k !== '' && !parsed.k.startsWith(prefix)) throw refused('Must be the `next` of a page of this list.');
  return parsed.k;
};

/**
 * A list as a route sends it: every item of `source` (in its order), or, when the request asks for a
 * page, at most `limit` of them and the cursor of the next page. `next` is null only when no item
 * follows: the source is read one item past the page to know.
 */
export const paginate = <T>(list: string, source: AsyncIterable<Keyed<T>>, page: PageQuery): StreamedList<T> => {
  const paged = page.limit !== undefined || page.cursor !== undefined;
  const limit = page.limit ?? Infinity;
  let next: string | null = null;
  async function* items() {
    const iterator = source[Symbol.asyncIterator]();
    try {
      let sent = 0;
      let last = '';
      for (let item = await iterator.next(); !item.done; item = await iterator.next()) {
        if (sent === limit) {
          next = makeCursor(list, last);
          return;
        }
        sent++;
        last = item.value.sk;
        yield item.value.value;
      }
    } finally {
      // A page that ends early, or a client that hangs up, stops the reading.
      await iterator.return?.();
    }
  }
  return paged ? { items: items(), next: () => next } : { items: items() };
};

/** The first sort key a page starts after: the cursor's, or none (the list's start). */
export const startOf = (list: string, page: PageQuery, prefix: string) => (page.cursor === undefined ? undefined : readCursor(list, page.cursor, prefix));

/** Items a Query should evaluate for a page: one past `limit`, to know whether a next page exists. */
export const pageSizeOf = (page: PageQuery) => (page.limit === undefined ? undefined : page.limit + 1);

/** The values of keyed items, each read by `read`, with their keys. */
export async function* mapKeyed<T, U>(source: AsyncIterable<Keyed<T>>, read: (value: T) => U): AsyncGenerator<Keyed<U>> {
  for await (const { sk, value } of source) yield { sk, value: read(value) };
}

/**
 * Sorted sources merged into one, by sort key (each source in key order, as a Query reads it):
 * the shards of an index partition read as one list. Each source is read one item ahead, as the
 * merge needs it.
 */
export async function* mergeKeyed<T>(sources: Array<AsyncIterable<Keyed<T>>>): AsyncGenerator<Keyed<T>> {
  const iterators = sources.map((s) => s[Symbol.asyncIterator]());
  try {
    const heads = await Promise.all(iterators.map((it) => it.next()));
    for (;;) {
      let min = -1;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (!head.done && (min < 0 || head.value.sk < (heads[min].value as Keyed<T>).sk)) min = i;
      }
      if (min < 0) return;
      yield heads[min].value as Keyed<T>;
      heads[min] = await iterators[min].next();
    }
  } finally {
    await Promise.all(iterators.map((it) => it.return?.()));
  }
}
