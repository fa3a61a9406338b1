/**
 * The time-series store: one interface (`./types.ts`), two backends (DynamoDB, Timestream), chosen
 * at deploy time (DESIGN §5).
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { documentClient } from '../../shared/clients';
import { TIMESERIES_BACKEND, TIMESERIES_TABLE, TIMESTREAM_DATABASE, TIMESTREAM_TABLE, WRITE_CONCURRENCY } from '../../shared/env';
import { dynamoDbTimeseriesStore } from './dynamodb';
import { timestreamStore } from './timestream';
import type { TimeseriesStore } from './types';

export type * from './types';

let store: TimeseriesStore | undefined;

/**
 * This deployment's time-series store, created once per container: TIMESERIES_BACKEND picks
 * `dynamodb` (TIMESERIES_TABLE) or `timestream` (TIMESTREAM_DATABASE, TIMESTREAM_TABLE).
 * @throws Error when TIMESERIES_BACKEND names no backend.
 */
export const timeseriesStore = (): TimeseriesStore => {
  if (store) return store;
  switch (TIMESERIES_BACKEND) {
    case 'dynamodb':
      store = dynamoDbTimeseriesStore({ doc: documentClient(new DynamoDBClient({})), table: TIMESERIES_TABLE }, { writeConcurrency: WRITE_CONCURRENCY });
      break;
    case 'timestream':
      store = timestreamStore({ database: TIMESTREAM_DATABASE, table: TIMESTREAM_TABLE });
      break;
    default:
      throw new Error(`TIMESERIES_BACKEND=${TIMESERIES_BACKEND} is not a time-series backend (dynamodb | timestream).`);
  }
  return store;
};
