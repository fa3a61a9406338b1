import type { Db } from '../../shared/clients';
import { ValidationError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { BucketClock, constantOffsetMinutes, parseEvery, type Every } from '../../shared/time-buckets';
import { parseTime } from '../../shared/timestamps';
import type { AggregateBucket, AggregateFunction, AggregateQueryParams } from '../../schemas/timeseries';
import type { BucketTotals, TimeseriesRange, TimeseriesStore } from '../../stores/timeseries';
import { bucketTotals, compareTotals, type Aggregation } from './bucket-totals';
import { requireFleets } from '../registry/fleets';
import { makeCursor, readCursor } from '../registry/lists';
import { withinRetention } from './retention';
import { rollupEntries } from './rollups';
import { requireWorkspace } from '../tenancy/workspaces';

/** A bucket as the answer gives it: its start, its device, and the functions asked for. */
export const toBucket = (totals: BucketTotals, functions: readonly AggregateFunction[]): AggregateBucket => {
  const bucket: AggregateBucket = { start: new Date(totals.start).toISOString() };
  if (totals.device_id !== undefined) bucket.device_id = totals.device_id;
  // A sum past a double's range is Infinity, which JSON cannot say: null.
  const finite = (n: number) => (Number.isFinite(n) ? n : null);
  for (const fn of functions) {
    if (fn === 'avg') bucket.avg = finite(totals.sum / totals.count);
    else if (fn === 'min') bucket.min = totals.min;
    else if (fn === 'max') bucket.max = totals.max;
    else if (fn === 'sum') bucket.sum = finite(totals.sum);
    else bucket.count = totals.count;
  }
  return bucket;
};

/** Where a page of buckets resumes: after this bucket (and device). */
interface Resume {
  start: number;
  device_id?: string;
}

const CURSOR_KEY = /^B(-?\d{1,16})(?:#([A-Za-z0-9_-]{1,64}))?$/;

const cursorKeyOf = ({ start, device_id }: Resume) => `B${start}${device_id === undefined ? '' : `#${device_id}`}`;

const resumeOf = (list: string, cursor: string): Resume => {
  const match = CURSOR_KEY.exec(readCursor(list, cursor, 'B'));
  if (!match)
    throw new ValidationError('Invalid query: query.cursor.', { details: [{ field: 'query.cursor', message: 'Must be the `next` of a page of this list.' }] });
  return { start: Number(match[1]), ...(match[2] === undefined ? {} : { device_id: match[2] }) };
};

/** An aggregation's answer as it is sent: its buckets, then what they skipped and where the next page starts. */
export interface AggregatePage {
  buckets: AsyncIterable<AggregateBucket>;
  /** Known once every bucket is read. */
  skipped: () => number;
  next: () => string | null;
}

/**
 * At most `limit` buckets that hold a number, after `resume`, from totals in answer order. The
 * points a page skipped are those of its buckets' keys: up to its last bucket when another
 * follows (the rest are the next page's), or to the end.
 */
const pageOf = (
  totals: AsyncIterable<BucketTotals[]>,
  list: string,
  functions: readonly AggregateFunction[],
  limit: number,
  resume?: Resume,
): AggregatePage => {
  let skipped = 0;
  let next: string | null = null;
  async function* buckets(): AsyncGenerator<AggregateBucket> {
    let sent = 0;
    let last: BucketTotals | undefined;
    // What the points after a full page's last bucket skipped: this page's only if none follows.
    let after = 0;
    const iterator = totals[Symbol.asyncIterator]();
    try {
      for (let run = await iterator.next(); !run.done; run = await iterator.next()) {
        for (const t of run.value) {
          if (resume && compareTotals(t, resume) <= 0) continue;
          if (sent === limit) {
            if (!t.count) {
              after += t.skipped;
              continue;
            }
            next = makeCursor(list, cursorKeyOf(last!));
            return;
          }
          skipped += t.skipped;
          if (!t.count) continue;
          sent++;
          last = t;
          yield toBucket(t, functions);
        }
      }
      skipped += after;
    } finally {
      // A page that ends early, or a client that hangs up, stops the reading.
      await iterator.return?.();
    }
  }
  return { buckets: buckets(), skipped: () => skipped, next: () => next };
};

/**
 * A workspace's data points aggregated into buckets (spec/operations.md §4): of the points the
 * storage query would answer for the same filters (deduplicated, within the workspace's data
 * retention), the avg, min, max, sum and count of `field` per bucket of `every` in `tz`, per
 * device with `group_by=device`; a point whose field is missing or not a number is counted in
 * `skipped`. A page holds at most `limit` buckets (those with a number); `next` resumes after it,
 * reading from its last bucket's start.
 *
 * Computed in the store where it can: Timestream's SQL, with `bin()`, when the payload itself is
 * the value and the zone's offset does not change within the range (a fixed grid of UTC);
 * otherwise here, over the store's streamed range, with memory that does not grow with it.
 * @throws NotFoundError when the workspace is not the caller's, or naming a fleet that is not in
 * it; ValidationError naming a cursor that is not one of this list's.
 */
export const aggregateTimeseries = async (
  db: Db,
  store: TimeseriesStore,
  caller: Caller,
  workspaceId: string,
  params: AggregateQueryParams,
  now = Date.now(),
): Promise<AggregatePage> => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  if (params.fleet?.length) await requireFleets(db, workspaceId, params.fleet);
  const list = `aggregate/${workspaceId}`;
  const resume = params.cursor === undefined ? undefined : resumeOf(list, params.cursor);
  let range: TimeseriesRange = withinRetention(
    { workspaceId, start: params.start, end: params.end, devices: params.device, tags: params.tag, fleets: params.fleet },
    workspace.data_retention_days,
    now,
  );
  if (resume) {
    // Read from the start of the bucket the last page ended in: its later devices come next.
    const start = range.start === undefined ? undefined : parseTime(range.start);
    if (!start || start.ms < resume.start) range = { ...range, start: new Date(resume.start).toISOString() };
  }
  const every: Every = parseEvery(params.every)!;
  const groupByDevice = params.group_by === 'device';
  const field = params.field === undefined ? [] : params.field.split('.');
  const inStore = () => {
    if (field.length || !store.aggregate) return undefined;
    const startMs = range.start === undefined ? 0 : parseTime(range.start)!.ms;
    const offsetMinutes = constantOffsetMinutes(params.tz, every, startMs, range.end === undefined ? undefined : parseTime(range.end)!.ms);
    return offsetMinutes === undefined ? undefined : store.aggregate({ range, every, offsetMinutes, groupByDevice });
  };
  const aggregation: Aggregation = { field, clock: new BucketClock(every, params.tz), groupByDevice };
  const withRollups = async () => (store.rollups ? rollupEntries({ store, rollups: store.rollups, workspace, now }, range, aggregation) : undefined);
  const totals = inStore() ?? bucketTotals((await withRollups()) ?? store.readRange(range), aggregation);
  return pageOf(totals, list, params.fn, params.limit, resume);
};
