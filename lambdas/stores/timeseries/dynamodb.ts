import type { Db } from '../../shared/clients';
import { KNOWN_KEYS_MAX, KnownPoints } from './dynamodb-dedup';
import { restampWorkspace } from './dynamodb-expiry';
import { purgeWorkspacePoints } from './dynamodb-purge';
import { queryPoints, readRangePoints } from './dynamodb-read';
import { rollupStore } from './dynamodb-rollups';
import { type DynamoDbTimeseriesOptions, writePoints } from './dynamodb-write';
import type { ExpiryRestamp, PointsPurge, PointToStore, TimeseriesQuery, TimeseriesRange, TimeseriesStore } from './types';

export type { DynamoDbTimeseriesOptions } from './dynamodb-write';

/**
 * The `dynamodb` time-series backend (keys, packs and the reasons for them in `./keys.ts`).
 *
 * Writes: points are checked first (a bad one stores nothing); of each identity (`identityOf`,
 * `./dynamodb-dedup.ts`) only the winning arrival is kept, and dropped too when this store already wrote that identity
 * with a winner at least as good; the rest are packed per workspace, in key order, and put with
 * BatchWriteItem, unconditionally. A pack's ID is a digest of its points, so a retried write
 * rewrites the same items (nothing lost, nothing doubled), and readers keep one point per
 * identity, so a duplicate another container stores (a device's replay, a retry batched another
 * way) is never returned, whatever order the writes land in.
 *
 * Why not a conditional put per point (DESIGN §5's first plan): on DynamoDB Local every write path
 * that checks a condition (conditional PutItem, TransactWriteItems, PartiQL INSERT) runs in its one
 * database thread at about a third of BatchWriteItem's rate, below the ingest target of half; on
 * AWS a transactional put costs two write units, and a point of its own a whole unit.
 *
 * Queries: the workspace's partitions are read in parallel, each in key order, its packs unpacked
 * into a buffer of one span; the partitions are merged, one point per identity kept, `from*size`
 * points skipped, and the iterator yields as it goes.
 *
 * One module per job behind this face: `-dedup` (identity and winners), `-rows` (a write's checks),
 * `-packing`, `-write` (the write's phases), `-partition` (one partition's Query and items),
 * `-merge` (ordering and merging partitions), `-read` (the merged read), `-expiry` (re-stamping
 * items' expiry), `-purge` (a deleted device's or workspace's points) and `-rollups` (hourly rollups and the stamps of sealed hours).
 */
export const dynamoDbTimeseriesStore = (db: Db, options: DynamoDbTimeseriesOptions): TimeseriesStore => {
  const known = new KnownPoints(KNOWN_KEYS_MAX);
  return {
    write: (points: PointToStore[]) => writePoints(db, known, options, points),
    query: (query: TimeseriesQuery) => queryPoints(db, query),
    readRange: (selection: TimeseriesRange) => readRangePoints(db, selection),
    restampExpiry: (restamp: ExpiryRestamp) => restampWorkspace(db, restamp),
    purgePoints: (purge: PointsPurge) => purgeWorkspacePoints(db, options.writeConcurrency, purge),
    rollups: rollupStore(db, options.writeConcurrency),
  };
};
