/**
 * A write of the `dynamodb` backend, as phases: check the points, keep each identity's winner,
 * stamp the sealed hours it reaches pending, put the packs, stamp those hours final.
 */
import type { Db } from '../../shared/clients';
import { putAll } from '../items';
import { type KnownPoints, winnersOf } from './dynamodb-dedup';
import { packRows } from './dynamodb-packing';
import { sealedHoursOf, stampHours } from './dynamodb-rollups';
import { toRows } from './dynamodb-rows';
import type { PointToStore, WriteResult } from './types';

export interface DynamoDbTimeseriesOptions {
  /** BatchWriteItem calls in flight at once per write. */
  writeConcurrency: number;
  /** The clock that decides which hours a write stamps (tests set it). */
  now?: () => number;
}

/**
 * Stores a write's points, deduplicated against each other and against what `known` says this
 * store already wrote, and remembers the winners it stored.
 * @throws ValidationError naming each bad field; PayloadTooLargeError when a point could not fit an item.
 */
export const writePoints = async (db: Db, known: KnownPoints, options: DynamoDbTimeseriesOptions, points: PointToStore[]): Promise<WriteResult> => {
  const rows = toRows(points);
  const winners = winnersOf(rows, known);
  // A write into sealed hours stamps them pending first, then final once its points are stored
  // (as the clock then reads: a write that outlasted a sealing stamps that hour too).
  const clock = options.now ?? Date.now;
  const pending = sealedHoursOf(winners.values(), clock());
  await stampHours(db, pending, true, clock(), options.writeConcurrency);
  await putAll(
    db,
    packRows([...winners.values()]).map((pack) => pack.item()),
    options.writeConcurrency,
  );
  await stampHours(db, sealedHoursOf(winners.values(), clock()), false, clock(), options.writeConcurrency);
  for (const [identity, row] of winners) known.add(identity, row);
  return { written: winners.size, discarded: rows.length - winners.size };
};
