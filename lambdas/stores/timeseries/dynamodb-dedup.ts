/**
 * What makes two points of the `dynamodb` backend the same point, and which of them wins: on
 * write (a batch's winners, the identities this store already wrote) and on read (one point per
 * identity, whatever order the query reads in).
 */
import { compareTime, isCloudStamp, type Time } from '../../shared/timestamps';

/**
 * One point as the store holds it, whichever item it came in. Its arrival (`inMs`, `sequence`,
 * `tail`) orders the arrivals of one dedup key; `tail` is the payload's digest for a device's own
 * time and the point's origin for a cloud stamp.
 */
export interface StoredPoint extends Time {
  device_id: string;
  tag: string;
  fleet_id: string;
  inMs: number;
  sequence: number;
  tail: string;
  payload: unknown;
  /** timestamp_in of a point stored unversioned, before packs (its `inMs` ranks it first instead). */
  arrived?: string;
}

/** Dedup keys a store remembers as stored, with their best arrival: ~200 bytes each, so ~20 MB at most. */
export const KNOWN_KEYS_MAX = 100_000;

/** Query order: time, then device, then tag, then arrival (earliest first). */
export const compare = (a: StoredPoint, b: StoredPoint): number =>
  compareTime(a, b) ||
  (a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : 0) ||
  (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0) ||
  compareArrival(a, b);

const compareArrival = (a: StoredPoint, b: StoredPoint): number =>
  a.inMs - b.inMs || a.sequence - b.sequence || (a.tail < b.tail ? -1 : a.tail > b.tail ? 1 : 0);

/**
 * What makes a point the same point as another. A device's own time: the same device, tag and
 * `timestamp_device` is a replay, and the earliest arrival wins. A cloud stamp: the same origin
 * (request and place in it, or MQTT message) in the same millisecond is the same point stored
 * again, maybe under another stamp by a retry; the smallest stamp wins. Two points of different
 * origins are two points, even under the same stamp.
 */
const identityOf = (p: StoredPoint) => (isCloudStamp(p) ? `c\n${p.device_id}\n${p.tag}\n${p.ms}\n${p.tail}` : `d\n${p.ms}\n${p.device_id}\n${p.tag}`);

/** Whether `a` wins over `b`, of the same identity. */
const wins = (a: StoredPoint, b: StoredPoint) => (isCloudStamp(a) ? compareTime(a, b) || compareArrival(a, b) : compareArrival(a, b)) < 0;

/**
 * Identities known to be stored by this store, each with its winning arrival, the oldest forgotten
 * first. Points are never changed or deleted, so a point whose identity is known with a winner
 * at least as good is a duplicate, known without a request: a batch retried on the same container
 * writes nothing, and a device's re-sent points are dropped here.
 */
export class KnownPoints {
  private readonly best = new Map<string, StoredPoint>();

  constructor(private readonly max: number) {}

  supersedes(identity: string, point: StoredPoint) {
    const known = this.best.get(identity);
    return known !== undefined && !wins(point, known);
  }

  add(identity: string, point: StoredPoint) {
    if (this.supersedes(identity, point)) return;
    this.best.delete(identity);
    this.best.set(identity, point);
    if (this.best.size > this.max) this.best.delete(this.best.keys().next().value as string);
  }
}

/**
 * The winning row of each identity a write brings (per workspace), less those this store already
 * wrote with a winner at least as good.
 */
export const winnersOf = <R extends StoredPoint & { workspace_id: string }>(rows: R[], known: KnownPoints): Map<string, R> => {
  const winners = new Map<string, R>();
  for (const row of rows) {
    const identity = `${row.workspace_id}\n${identityOf(row)}`;
    const held = winners.get(identity);
    if (!held || wins(row, held)) winners.set(identity, row);
  }
  for (const [identity, row] of winners) if (known.supersedes(identity, row)) winners.delete(identity);
  return winners;
};

/**
 * One point per identity (`identityOf`), the winner (`wins`), whatever order the query reads in.
 * Ascending, the winner comes first: a device time's arrivals are adjacent (the order ends with
 * the arrival), and a cloud-stamped point's copies all lie in its millisecond, earliest stamp first.
 * Descending, each millisecond is taken whole and decided the same way, so both orders return
 * the same points.
 */
export async function* distinctPoints(runs: AsyncIterable<StoredPoint[]>, order: 'asc' | 'desc'): AsyncGenerator<StoredPoint[]> {
  let ms = NaN;
  let last: StoredPoint | undefined;
  const origins = new Set<string>();
  /** Whether a point, met in ascending order, is its identity's winner. */
  const first = (p: StoredPoint) => {
    if (p.ms !== ms) {
      ms = p.ms;
      origins.clear();
      last = undefined;
    }
    if (isCloudStamp(p)) {
      const identity = identityOf(p);
      if (origins.has(identity)) return false;
      origins.add(identity);
      return true;
    }
    const again = last !== undefined && last.us === p.us && last.device_id === p.device_id && last.tag === p.tag;
    last = p;
    return !again;
  };
  if (order === 'asc') {
    for await (const run of runs) yield run.filter(first);
    return;
  }
  // Descending: a millisecond's points are decided once all of them are in (it may span runs).
  let group: StoredPoint[] = [];
  const decide = () => group.reverse().filter(first).reverse();
  for await (const run of runs) {
    const out: StoredPoint[] = [];
    for (const point of run) {
      if (group.length && point.ms !== group[0].ms) {
        out.push(...decide());
        group = [];
      }
      group.push(point);
    }
    if (out.length) yield out;
  }
  if (group.length) yield decide();
}
