import type { Operations } from '../operation';
import { TimeseriesQuerySchema, TimeseriesResponseSchema } from '../timeseries';
import { WorkspacePathSchema } from '../workspace';

/** The `timeseries` handler's operation (the storage query). */
export const TIMESERIES_OPERATIONS = {
  queryTimeseries: { path: WorkspacePathSchema, query: TimeseriesQuerySchema, response: TimeseriesResponseSchema },
} satisfies Operations;
