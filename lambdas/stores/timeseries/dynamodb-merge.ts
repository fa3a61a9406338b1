/**
 * The ordering half of a read: the points of one partition put in query order with a buffer of one
 * pack span, and the partitions merged into one stream.
 */
import { compareTime, microsBetween } from '../../shared/timestamps';
import { compare, type StoredPoint } from './dynamodb-dedup';
import { type Filters, type Item, pointsOf, type Range } from './dynamodb-partition';
import { keyTimeOf, PACK_SPAN_MICROS } from './keys';

/** A binary heap: `before(a, b)` when a comes out first. */
class Heap<T> {
  private readonly items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size() {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T) {
    const items = this.items;
    items.push(item);
    for (let i = items.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.before(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length && last !== undefined) {
      items[0] = last;
      this.siftDown();
    }
    return top;
  }

  /** Puts the top back in its place after its key changed. */
  siftDown() {
    const items = this.items;
    for (let i = 0; ; ) {
      const left = 2 * i + 1;
      const right = left + 1;
      let best = i;
      if (left < items.length && this.before(items[left], items[best])) best = left;
      if (right < items.length && this.before(items[right], items[best])) best = right;
      if (best === i) break;
      [items[i], items[best]] = [items[best], items[i]];
      i = best;
    }
  }
}

/** An item's selected points, in query order, and the next one to give out. */
interface Run {
  points: StoredPoint[];
  index: number;
}

/**
 * The points of one partition in query order. An item's sort key is at or before each of its
 * points, and its points lie within PACK_SPAN_MICROS of it: reading ascending, a point is certain
 * once an item with a later sort key has been read; descending, once an item has been read whose
 * key time is more than the span before it. A pack's points are in key order already, so the
 * items read but not given out wait as runs, merged by their next point: about one span of points,
 * in the few packs that overlap it.
 */
export async function* partitionPoints(pages: AsyncGenerator<Item[]>, order: 'asc' | 'desc', range: Range, filters: Filters): AsyncGenerator<StoredPoint[]> {
  const asc = order === 'asc';
  const runs = new Heap<Run>((a, b) => {
    const c = compare(a.points[a.index], b.points[b.index]);
    return asc ? c < 0 : c > 0;
  });
  const giveOut = (ready: StoredPoint[], certain: (p: StoredPoint) => boolean) => {
    for (let run = runs.peek(); run && certain(run.points[run.index]); run = runs.peek()) {
      ready.push(run.points[run.index++]);
      if (run.index === run.points.length) runs.pop();
      else runs.siftDown();
    }
  };
  try {
    for await (const items of pages) {
      const ready: StoredPoint[] = [];
      for (const item of items) {
        const at = keyTimeOf(item.sk)!;
        // Ascending: every later item's points are at or after `at`. Descending: before at + span.
        giveOut(ready, asc ? (p) => compareTime(p, at) < 0 : (p) => microsBetween(at, p) >= PACK_SPAN_MICROS);
        const points = pointsOf(item, range, filters);
        if (!asc) points.reverse();
        if (points.length) runs.push({ points, index: 0 });
      }
      if (ready.length) yield ready;
    }
    const rest: StoredPoint[] = [];
    giveOut(rest, () => true);
    if (rest.length) yield rest;
  } finally {
    await pages.return(undefined);
  }
}

interface Head {
  points: AsyncGenerator<StoredPoint[]>;
  page: StoredPoint[];
  index: number;
}

/** Moves a head to its next point, reading on when needed; false when its partition is done. */
const ready = async (head: Head): Promise<boolean> => {
  while (head.index >= head.page.length) {
    const next = await head.points.next();
    if (next.done) return false;
    head.page = next.value;
    head.index = 0;
  }
  return true;
};

/**
 * Merges partitions read in the same order into one stream in that order, given out in runs: as
 * many points as can be merged before a partition must be read on (an await per run, not per point).
 */
export async function* mergePartitions(sources: AsyncGenerator<StoredPoint[]>[], order: 'asc' | 'desc'): AsyncGenerator<StoredPoint[]> {
  const heads: Head[] = sources.map((points) => ({ points, page: [], index: 0 }));
  try {
    let live = (await Promise.all(heads.map(async (head) => ((await ready(head)) ? head : undefined)))).filter((h): h is Head => !!h);
    let run: StoredPoint[] = [];
    while (live.length) {
      let best = live[0];
      for (let i = 1; i < live.length; i++) {
        const c = compare(live[i].page[live[i].index], best.page[best.index]);
        if (order === 'asc' ? c < 0 : c > 0) best = live[i];
      }
      run.push(best.page[best.index++]);
      if (best.index >= best.page.length) {
        yield run;
        run = [];
        if (!(await ready(best))) live = live.filter((head) => head !== best);
      }
    }
  } finally {
    await Promise.all(heads.map((head) => head.points.return(undefined)));
  }
}
