import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from './runtime-file';

/**
 * DynamoDB Local's stream log, made a lookup.
 *
 * DynamoDB Local keeps every stream record of every table (deleted tables' too) for 24 hours in one
 * SQLite table, `us`, keyed by sequence number alone. On each request to a table with a stream (the
 * registry), and on each poll of that stream, it finds the stream's first record with `SELECT
 * MIN(SequenceNumber) FROM us WHERE StreamID = ?`: a scan of every record written before, by any
 * table. A request there got slower with each record the engine had kept (about 0.9 µs of CPU per
 * record; docs/local-runtime.md). An index on (StreamID, SequenceNumber) answers it from the index:
 * measured on one engine, 2,000 rounds of requests to a streamed table took the engine 5.0 CPU-s
 * after 10,000 records of other tables, against 27 in memory without the index (5.6 on a new one).
 *
 * The index needs the engine's database as a file: an engine without a data folder gets one in a
 * scratch folder (in memory under /dev/shm where there is one) that it deletes as it stops.
 */

/** The file DynamoDB Local keeps its tables in, given `-sharedDb`. */
const DATABASE_FILE = 'shared-local-instance.db';

/** The statement DynamoDB Local answers each stream request with, made a lookup (see above). */
const STREAM_LOG_INDEX = 'CREATE INDEX IF NOT EXISTS fleetstream_stream_log ON us (StreamID, SequenceNumber)';

/** The scratch folders' prefix; the number after it is the process that made the folder. */
const SCRATCH_PREFIX = 'fleetstream-dynamodb-';

type Sqlite = typeof import('node:sqlite');

/**
 * Node's SQLite module, or undefined where this Node has none (before 22.13). Loading it prints an
 * ExperimentalWarning, which is left out: the module is used for one statement, at start.
 */
export const loadSqlite = async (): Promise<Sqlite | undefined> => {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: never[]) => {
    if (!String(warning).includes('SQLite')) emitWarning.call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return await import('node:sqlite');
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
};

/** Indexes the stream log of the engine whose data folder is `dataDir` (once it has started). */
export const indexStreamLog = (sqlite: Sqlite, dataDir: string) => {
  // The engine may hold its lock a moment (a persisted engine's first writes): wait for it.
  const database = new sqlite.DatabaseSync(join(dataDir, DATABASE_FILE), { timeout: 10_000 });
  try {
    database.exec(STREAM_LOG_INDEX);
  } finally {
    database.close();
  }
};

/** Where scratch folders go: memory where the machine offers it, else the temporary folder. */
export const scratchBase = () => (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());

/**
 * A new scratch data folder for an engine without one. Folders left by processes that have ended
 * (killed before they could delete theirs) are deleted first.
 */
export const scratchDataDir = (): string => {
  const base = scratchBase();
  for (const name of readdirSync(base)) {
    const owner = Number(name.startsWith(SCRATCH_PREFIX) ? name.slice(SCRATCH_PREFIX.length).split('-')[0] : Number.NaN);
    if (Number.isInteger(owner) && !isAlive(owner)) rmSync(join(base, name), { recursive: true, force: true });
  }
  return mkdtempSync(join(base, `${SCRATCH_PREFIX}${process.pid}-`));
};
