import { CreateExportBodySchema, ExportListResponseSchema, ExportPathSchema, ExportResponseSchema } from '../export';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { AggregateQuerySchema, AggregateResponseSchema, TimeseriesQuerySchema, TimeseriesResponseSchema } from '../timeseries';
import { WorkspacePathSchema } from '../workspace';

/** The `timeseries` handler's operations (the storage query, its aggregation and exports). */
export const TIMESERIES_OPERATIONS = {
  queryTimeseries: { path: WorkspacePathSchema, query: TimeseriesQuerySchema, response: TimeseriesResponseSchema },
  aggregateTimeseries: { path: WorkspacePathSchema, query: AggregateQuerySchema, response: AggregateResponseSchema },
  createExport: {
    path: WorkspacePathSchema,
    body: CreateExportBodySchema,
    response: ExportResponseSchema,
    status: 202,
    quota: 'The workspace has started its limit of exports this UTC day (limits.exports_per_day; Retry-After: the seconds to midnight UTC)',
  },
  listExports: { path: WorkspacePathSchema, query: PageQuerySchema, response: ExportListResponseSchema },
  getExport: { path: ExportPathSchema, response: ExportResponseSchema },
} satisfies Operations;
