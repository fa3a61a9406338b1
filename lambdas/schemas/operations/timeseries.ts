import type { Operations } from '../operation';
import { AggregateQuerySchema, AggregateResponseSchema, TimeseriesQuerySchema, TimeseriesResponseSchema } from '../timeseries';
import { WorkspacePathSchema } from '../workspace';

/** The `timeseries` handler's operations (the storage query and its aggregation). */
export const TIMESERIES_OPERATIONS = {
  queryTimeseries: { path: WorkspacePathSchema, query: TimeseriesQuerySchema, response: TimeseriesResponseSchema },
  aggregateTimeseries: { path: WorkspacePathSchema, query: AggregateQuerySchema, response: AggregateResponseSchema },
} satisfies Operations;
