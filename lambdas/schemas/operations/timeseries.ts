import { CreateExportBodySchema, ExportListResponseSchema, ExportPathSchema, ExportResponseSchema } from '../export';
import { PageQuerySchema } from '../list';
import type { Operations } from '../operation';
import { AggregateQuerySchema, AggregateResponseSchema, TimeseriesQuerySchema, TimeseriesResponseSchema } from '../timeseries';
import { WorkspacePathSchema } from '../workspace';

/** The `timeseries` handler's operations (the storage query, its aggregation and exports). */
export const TIMESERIES_OPERATIONS = {
  queryTimeseries: { path: WorkspacePathSchema, query: TimeseriesQuerySchema, response: TimeseriesResponseSchema },
  aggregateTimeseries: { path: WorkspacePathSchema, query: AggregateQuerySchema, response: AggregateResponseSchema },
  createExport: { path: WorkspacePathSchema, body: CreateExportBodySchema, response: ExportResponseSchema, status: 202 },
  listExports: { path: WorkspacePathSchema, query: PageQuerySchema, response: ExportListResponseSchema },
  getExport: { path: ExportPathSchema, response: ExportResponseSchema },
} satisfies Operations;
