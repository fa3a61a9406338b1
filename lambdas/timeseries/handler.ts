import { queryTimeseries } from '../domain/timeseries';
import { TimeseriesQuerySchema } from '../schemas/timeseries';
import { WorkspacePathSchema } from '../schemas/workspace';
import { registryDb } from '../shared/clients';
import { callerOf, parsePath, parseQuery, type ApiEvent } from '../shared/http';
import { httpHandler } from '../shared/middleware';
import { timeseriesStore } from '../stores/timeseries';
import { streamJson } from './json-stream';

// Streamed (route table `stream: true`): `size` may be 175,000, far past a buffered answer's 6 MB.
const queryTimeseriesRoute = async (event: ApiEvent) => {
  const { workspaceId } = parsePath(WorkspacePathSchema, event);
  const params = parseQuery(TimeseriesQuerySchema, event, ['device', 'tag']);
  return streamJson(event, 'result', await queryTimeseries(registryDb(), timeseriesStore(), callerOf(event), workspaceId, params));
};

export const handler = httpHandler('timeseries', { queryTimeseries: queryTimeseriesRoute });
