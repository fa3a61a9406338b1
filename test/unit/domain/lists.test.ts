import { makeCursor, pageSizeOf, paginate, readCursor } from '../../../lambdas/domain/registry/lists';
import { ValidationError } from '../../../lambdas/shared/errors';
import { newId } from '../../../lambdas/shared/ids';
import { pageOf } from '../../helpers/lists';

const LIST = 'fleets/wks-a';

/** A source of `n` keyed items that records how many were read and whether it was closed. */
const source = (n: number) => {
  const seen = { read: 0, closed: false };
  async function* items() {
    try {
      for (let i = 0; i < n; i++) {
        seen.read++;
        yield { sk: `FLT#${i}`, value: i };
      }
    } finally {
      seen.closed = true;
    }
  }
  return { items: items(), seen };
};

describe('paginate', () => {
  it('passes every item and no next when no page is asked for', async () => {
    const { items, seen } = source(5);

    const list = await pageOf(paginate(LIST, items, {}));

    expect(list).toEqual({ items: [0, 1, 2, 3, 4], next: undefined });
    expect(seen.closed).toBe(true);
  });

  it('stops at the limit with the cursor of the last item sent, reading one item past it and closing the source', async () => {
    const { items, seen } = source(5);

    const page = await pageOf(paginate(LIST, items, { limit: 2 }));

    expect(page.items).toEqual([0, 1]);
    expect(readCursor(LIST, page.next!, 'FLT#')).toBe('FLT#1');
    expect(seen).toEqual({ read: 3, closed: true });
  });

  it.each([
    [5, 5],
    [10, 5],
    [3, 0],
  ])('answers next null when a page of %i holds all %i items left', async (limit, n) => {
    const page = await pageOf(paginate(LIST, source(n).items, { limit }));

    expect(page).toEqual({ items: [...Array(n).keys()], next: null });
  });
});

describe('cursors', () => {
  it('round-trips the sort key of its own list, and the empty key (the bound workspace)', () => {
    expect(readCursor(LIST, makeCursor(LIST, 'FLT#flt-x'), 'FLT#')).toBe('FLT#flt-x');
    expect(readCursor('workspaces/acc-a', makeCursor('workspaces/acc-a', ''), 'WKS#')).toBe('');
  });

  it.each([
    ['another list', makeCursor('fleets/wks-b', 'FLT#flt-x')],
    ['another kind of list', makeCursor('api-keys/wks-a', 'APIKEY#key-x')],
    ['a key outside the collection', makeCursor(LIST, 'DEV#dev-x')],
    ['not base64 JSON', 'bm90IGpzb24'],
    ['JSON of another shape', Buffer.from(JSON.stringify({ l: LIST })).toString('base64url')],
    ['JSON with more fields', Buffer.from(JSON.stringify({ l: LIST, k: 'FLT#a', x: 1 })).toString('base64url')],
  ])('refuses %s with a 400 naming query.cursor', (_what, cursor) => {
    expect(() => readCursor(LIST, cursor, 'FLT#')).toThrow(ValidationError);
    try {
      readCursor(LIST, cursor, 'FLT#');
    } catch (error) {
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(['query.cursor']);
    }
  });

  it('asks DynamoDB for one item past the limit, and for its own page size when unpaged', () => {
    expect(pageSizeOf({ limit: 100 })).toBe(101);
    expect(pageSizeOf({})).toBeUndefined();
  });
});

describe('IDs', () => {
  it('sort as their creation times, then randomly within a millisecond, and keep the 20-character form', () => {
    const times = ['1970-01-01T00:00:00.001Z', '2021-07-08T14:21:15.915Z', '2021-07-08T14:21:15.916Z', '2026-11-22T23:00:00.000Z', '5000-12-31T23:59:59.999Z'];

    const ids = times.map((t) => newId('dev', t));

    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^dev-[0-9a-z]{20}$/);
    expect(newId('dev', times[1])).not.toBe(newId('dev', times[1]));
    expect(newId('dev', times[1]).slice(0, 13)).toBe(ids[1].slice(0, 13));
  });
});
