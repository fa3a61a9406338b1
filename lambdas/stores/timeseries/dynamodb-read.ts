/**
 * The merged read of a workspace: its partitions read in parallel, merged, one point per identity,
 * given out as the storage query's page or as the runs of a range.
 */
import type { Db } from '../../shared/clients';
import { compareTime, parseTime } from '../../shared/timestamps';
import { distinctPoints, type StoredPoint } from './dynamodb-dedup';
import { mergePartitions, partitionPoints } from './dynamodb-merge';
import { filtersOf, partitionPages, partitionQuery, type Range } from './dynamodb-partition';
import { queryPartitions, SHARDS } from './keys';
import type { DataPoint, RangePoint, TimeseriesQuery, TimeseriesRange } from './types';

/** Items of a partition's first page: small, so that a large answer starts quickly (a pack holds tens of points). */
const FIRST_PAGE_MAX = 10;
/** Points a pack holds, for sizing a first page: a pack of small points holds 30 to 40. */
const POINTS_PER_PACK = 20;

/** RFC 3339 of a millisecond, the last one remembered: points come a millisecond at a time. */
const isoOf = (() => {
  let ms = NaN;
  let iso = '';
  return (at: number) => {
    if (at !== ms) {
      ms = at;
      iso = new Date(at).toISOString();
    }
    return iso;
  };
})();

const toDataPoint = (workspaceId: string, p: StoredPoint): DataPoint => {
  const second = isoOf(p.ms);
  return {
    workspace_id: workspaceId,
    fleet_id: p.fleet_id,
    device_id: p.device_id,
    tag: p.tag,
    timestamp_device: p.us === 0 ? second : `${second.slice(0, -1)}${String(p.us).padStart(3, '0')}Z`,
    timestamp_in: p.arrived ?? new Date(p.inMs).toISOString(),
    payload: p.payload,
  };
};

/** The bounds of a selection, or undefined when it can hold no point (start at or after end). */
const rangeOf = (selection: TimeseriesRange): Range | undefined => {
  const range: Range = {
    start: selection.start === undefined ? undefined : parseTime(selection.start, true),
    end: selection.end === undefined ? undefined : parseTime(selection.end, true),
  };
  return range.start && range.end && compareTime(range.start, range.end) >= 0 ? undefined : range;
};

/**
 * The selected points of a workspace, one per identity, in `order`, in runs: its partitions read in
 * parallel (`firstLimit` items on each first page), each put in order, then merged.
 */
const readPoints = (db: Db, selection: TimeseriesRange, range: Range, order: 'asc' | 'desc', firstLimit: number) => {
  const filters = filtersOf(selection);
  const sources = queryPartitions(selection.workspaceId).map((pk) =>
    partitionPoints(partitionPages(db, partitionQuery(db, pk, range, selection, order), firstLimit), order, range, filters),
  );
  return distinctPoints(mergePartitions(sources, order), order);
};

/** The page of points a storage query selects, skipping `from*size` of them, read as far as the page needs. */
export async function* queryPoints(db: Db, query: TimeseriesQuery): AsyncGenerator<DataPoint> {
  const skip = query.from * query.size;
  const need = skip + query.size;
  const range = rangeOf(query);
  if (query.size <= 0 || !range) return;
  // A fair share of `need` per partition first, with slack for uneven shards; more pages follow on demand.
  const firstLimit = Math.min(FIRST_PAGE_MAX, Math.max(2, Math.ceil((need * 1.25) / SHARDS / POINTS_PER_PACK)));
  let position = 0;
  for await (const run of readPoints(db, query, range, query.order, firstLimit)) {
    for (const point of run) {
      if (position++ < skip) continue;
      yield toDataPoint(query.workspaceId, point);
      if (position >= need) return;
    }
  }
}

/** Every point of a range, one per identity, oldest first, in runs. */
export async function* readRangePoints(db: Db, selection: TimeseriesRange): AsyncGenerator<RangePoint[]> {
  const range = rangeOf(selection);
  if (!range) return;
  for await (const run of readPoints(db, selection, range, 'asc', FIRST_PAGE_MAX)) {
    // A point of the layout before packs has its arrival as text; a pack's points are given out as read.
    yield run.some((p) => p.arrived !== undefined) ? run.map((p) => (p.arrived === undefined ? p : { ...p, inMs: Date.parse(p.arrived) })) : run;
  }
}
