import type { Db } from '../../shared/clients';
import type { Caller } from '../../shared/http';
import type { TimeseriesQueryParams, TimeseriesRecord } from '../../schemas/timeseries';
import type { DataPoint, TimeseriesStore } from '../../stores/timeseries';
import { requireFleets } from '../registry/fleets';
import { withinRetention } from './retention';
import { requireWorkspace } from '../tenancy/workspaces';

/**
 * The store's points as the interface's records, mapped as they are read. An iterator of its own
 * rather than an async generator: a storage query yields up to 175,000 points, and each async
 * generator in the chain costs every point a turn of the event loop's promise queue.
 */
const asRecords = (points: AsyncIterable<DataPoint>): AsyncIterable<TimeseriesRecord> => ({
  [Symbol.asyncIterator]: () => {
    const source = points[Symbol.asyncIterator]();
    return {
      next: async (): Promise<IteratorResult<TimeseriesRecord>> => {
        const next = await source.next();
        if (next.done) return { done: true, value: undefined };
        const p = next.value;
        return {
          done: false,
          value: {
            timestamp_device: p.timestamp_device,
            timestamp_in: p.timestamp_in,
            fleet_id: p.fleet_id,
            device_id: p.device_id,
            tag: p.tag,
            payload: p.payload,
          },
        };
      },
      return: async () => {
        await source.return?.();
        return { done: true, value: undefined };
      },
    };
  },
});

/**
 * The page of a workspace's data points that a storage query selects, read from the store as the
 * caller consumes it: records `from*size … from*size+size-1` of the points with
 * `start <= timestamp_device < end`, of the given devices, tags and fleets, sorted by
 * timestamp_device (ties by device, then tag). Points older than the workspace's data retention
 * are never answered, whether or not the store has removed them yet.
 * @throws NotFoundError when the workspace is not the caller's, or naming a fleet that is not in it.
 */
export const queryTimeseries = async (
  db: Db,
  store: TimeseriesStore,
  caller: Caller,
  workspaceId: string,
  params: TimeseriesQueryParams,
  now = Date.now(),
): Promise<AsyncIterable<TimeseriesRecord>> => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  if (params.fleet?.length) await requireFleets(db, workspaceId, params.fleet);
  const range = withinRetention(
    { workspaceId, start: params.start, end: params.end, devices: params.device, tags: params.tag, fleets: params.fleet },
    workspace.data_retention_days,
    now,
  );
  return asRecords(store.query({ ...range, from: params.from, size: params.size, order: params.sort === 'timestamp_device' ? 'asc' : 'desc' }));
};
