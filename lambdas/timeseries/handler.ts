import { queryTimeseries } from '../domain/timeseries';
import { TIMESERIES_OPERATIONS } from '../schemas/operations/timeseries';
import { registryDb } from '../shared/clients';
import { callerOf } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import { timeseriesStore } from '../stores/timeseries';
import { streamJson } from '../shared/json-stream';

// Streamed (route table `stream: true`): `size` may be 175,000, far past a buffered answer's 6 MB.
export const handler = httpHandler('timeseries', TIMESERIES_OPERATIONS, {
  queryTimeseries: async ({ path, query }, event) =>
    streamJson(event, 'result', await queryTimeseries(registryDb(), timeseriesStore(), callerOf(event), path.workspaceId, query)),
});
