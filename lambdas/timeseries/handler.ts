import { aggregateTimeseries } from '../domain/aggregation';
import { apiRequestHooks } from '../domain/api-requests';
import { queryTimeseries } from '../domain/timeseries';
import { TIMESERIES_OPERATIONS } from '../schemas/operations/timeseries';
import { registryDb } from '../shared/clients';
import { callerOf } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import { timeseriesStore } from '../stores/timeseries';
import { streamJson } from '../shared/json-stream';

// Streamed (route table `stream: true`): `size` may be 175,000, far past a buffered answer's 6 MB;
// an aggregation's skipped count and next cursor follow its buckets, known once they are read.
export const handler = httpHandler('timeseries', TIMESERIES_OPERATIONS, {
  queryTimeseries: async ({ path, query }, event) =>
    streamJson(event, 'result', await queryTimeseries(registryDb(), timeseriesStore(), callerOf(event), path.workspaceId, query)),
  aggregateTimeseries: async ({ path, query }, event) => {
    const page = await aggregateTimeseries(registryDb(), timeseriesStore(), callerOf(event), path.workspaceId, query);
    return streamJson(event, 'buckets', page.buckets, () => ({ skipped: page.skipped(), next: page.next() }));
  },
}, apiRequestHooks(registryDb()));
