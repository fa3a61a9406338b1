import { aggregateTimeseries } from '../../domain/data/aggregation';
import { apiRequestHooks } from '../../domain/limits/api-requests';
import { createExport, getExport, listExports } from '../../domain/exports/export-requests';
import { queryTimeseries } from '../../domain/data/timeseries';
import { TIMESERIES_OPERATIONS } from '../../schemas/operations/timeseries';
import { registryDb } from '../../shared/clients';
import { callerOf, ok } from '../../shared/http';
import { httpHandler } from '../../shared/middleware';
import { timeseriesStore } from '../../stores/timeseries';
import { streamJson, streamList } from '../../shared/json-stream';

// Streamed (route table `stream: true`): `size` may be 175,000, far past a buffered answer's 6 MB;
// an aggregation's skipped count and next cursor follow its buckets, known once they are read.
export const handler = httpHandler(
  'timeseries',
  TIMESERIES_OPERATIONS,
  {
    queryTimeseries: async ({ path, query }, event) =>
      streamJson(event, 'result', await queryTimeseries(registryDb(), timeseriesStore(), callerOf(event), path.workspaceId, query)),
    aggregateTimeseries: async ({ path, query }, event) => {
      const page = await aggregateTimeseries(registryDb(), timeseriesStore(), callerOf(event), path.workspaceId, query);
      return streamJson(event, 'buckets', page.buckets, () => ({ skipped: page.skipped(), next: page.next() }));
    },
    createExport: async ({ path, body }, event) => ok(202, { export: await createExport(registryDb(), callerOf(event), path.workspaceId, body) }),
    listExports: async ({ path, query }, event) => streamList(event, 'exports', await listExports(registryDb(), callerOf(event), path.workspaceId, query)),
    getExport: async ({ path }, event) => ok(200, { export: await getExport(registryDb(), callerOf(event), path.workspaceId, path.exportId) }),
  },
  apiRequestHooks(registryDb()),
);
