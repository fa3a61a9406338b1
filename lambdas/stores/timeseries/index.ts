/**
 * The time-series store: one interface, two backends (DynamoDB, Timestream), chosen at deploy
 * time (DESIGN §5). Contract between the ingest handler (writes) and the storage query (reads).
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { documentClient } from '../../shared/clients';
import { TIMESERIES_BACKEND, TIMESERIES_TABLE, TIMESTREAM_DATABASE, TIMESTREAM_TABLE, WRITE_CONCURRENCY } from '../../shared/env';
import { dynamoDbTimeseriesStore } from './dynamodb';
import { timestreamStore } from './timestream';

/** One data point, as stored and as returned by the storage query (plus workspace_id). */
export interface DataPoint {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
  tag: string;
  /** RFC 3339 UTC with milliseconds. */
  timestamp_device: string;
  /** RFC 3339 UTC with milliseconds: when the cloud received it. */
  timestamp_in: string;
  payload: unknown;
}

/** A point to store: a DataPoint, and where it stood in its publish request. */
export interface PointToStore extends DataPoint {
  /**
   * The point's index among the points of its publish request (0–9999, default 0): orders
   * duplicates that arrived together, so that the first of the request wins on every read. The
   * same message gives the same indexes on every retry. Queries do not return it.
   */
  sequence?: number;
}

export interface WriteResult {
  /**
   * Points this call stored. With `dynamodb`, a point that another container already stored an
   * earlier arrival of is stored too, and never read (see `write`).
   */
  written: number;
  /** Points dropped as duplicates of a (device_id, tag, timestamp_device) the call held or the store knew stored. */
  discarded: number;
}

export interface TimeseriesQuery {
  workspaceId: string;
  /** Included lower bound on timestamp_device (RFC 3339). */
  start?: string;
  /** Excluded upper bound on timestamp_device (RFC 3339). */
  end?: string;
  /** Page index: records from*size … from*size+size-1 of the sorted result. */
  from: number;
  size: number;
  /** `asc` for `sort=timestamp_device`, `desc` for `-timestamp_device` (the default). */
  order: 'asc' | 'desc';
  devices?: string[];
  tags?: string[];
}

export interface TimeseriesStore {
  /**
   * Stores points with deduplication on (device_id, tag, timestamp_device): the first write wins,
   * and queries return one point per key. `dynamodb` keeps the earliest arrival (timestamp_in,
   * then sequence), whatever order the writes land in; `timestream` keeps the first one stored. Idempotent:
   * writing the same batch again stores nothing new. Throws only when a point could not be stored
   * (the caller retries the whole batch).
   */
  write(points: PointToStore[]): Promise<WriteResult>;
  /**
   * The page of points the query selects, in order, ties broken deterministically (device_id,
   * then tag) so that consecutive pages never overlap or skip. Yields as it reads: memory does
   * not grow with `size`.
   */
  query(query: TimeseriesQuery): AsyncIterable<DataPoint>;
}

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
      store = dynamoDbTimeseriesStore(
        { doc: documentClient(new DynamoDBClient({})), table: TIMESERIES_TABLE },
        { writeConcurrency: WRITE_CONCURRENCY },
      );
      break;
    case 'timestream':
      store = timestreamStore({ database: TIMESTREAM_DATABASE, table: TIMESTREAM_TABLE });
      break;
    default:
      throw new Error(`TIMESERIES_BACKEND=${TIMESERIES_BACKEND} is not a time-series backend (dynamodb | timestream).`);
  }
  return store;
};
