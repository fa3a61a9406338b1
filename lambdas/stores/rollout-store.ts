import {
  BatchGetCommand,
  GetCommand,
  type BatchGetCommandOutput,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { JOB_STATUSES, type JobStatus } from '../schemas/job';
import type { RolloutSettings } from '../schemas/rollout-settings';
import { isConditionFailed } from './errors';
import { queryPages, type Keyed, type TransactAction } from './items';
import {
  CHANGE_COUNTERS,
  INDEX_SHARDS,
  REGISTRY_SWEEP_INDEX,
  ROLLOUT_DUE_PARTITION,
  collection,
  rolloutCounterKey,
  readRolloutDeviceSortKey,
  schedulingCounter,
  rolloutDevicesEntry,
  rolloutDevicesPartition,
  rolloutKey,
  supersededKey,
  sweepEntry,
  type ItemKey,
} from './keys';

/** What a user makes of a rollout: releasing (`in_progress`), `paused`, or `canceled` for good. */
export type RolloutState = 'in_progress' | 'paused' | 'canceled';
/** What its devices made of it, set once by the registry stream's consumer. */
export type RolloutOutcome = 'completed' | 'aborted';

/** A rollout as stored (its counts live on its counter items). */
export interface RolloutRecord {
  id: string;
  workspace_id: string;
  kind: 'job' | 'fota';
  job_name?: string;
  value?: Record<string, unknown>;
  firmware_id?: string;
  firmware_version?: string;
  fleets: string[];
  created_at: string;
  updated_at: string;
  /** The devices' `scheduled_at`. */
  scheduled_at: string;
  settings: RolloutSettings;
  state: RolloutState;
  outcome?: RolloutOutcome;
  /** How many device items the scheduling wrote, once it ended (or the sweep sealed it for a scheduling that died). */
  sealed_total?: number;
  /** Rate-limited: when the next release may start (60 s after the last one started). */
  next_release_at?: string;
  last_release_at?: string;
  /**
   * Rate-limited: how many devices the release of `last_release_at` still owes, when a sweep run
   * stopped it short at its deadline; the next run goes on with it (`claimOwedRelease`).
   */
  release_owed?: number;
  /** Rate-limited: queued devices may remain (a release found none, after the seal: false). */
  queue_open?: boolean;
  /** With a timeout: the earliest deadline of its released devices not known to have ended (their release plus the timeout). */
  next_deadline_at?: string;
  /** The sweep index's entry of the rollout, when it has work due (`sweep_sk`). */
  sweep_due?: string;
}

/** Counts of a rollout, as its counter items add them up. */
export interface RolloutTally {
  total: number;
  counts: Record<JobStatus, number>;
  /** The last change of a counter, if any. */
  updated_at?: string;
}

export const emptyCounts = (): Record<JobStatus, number> => Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;

/** Counters are flat attributes (`c_pending`): ADD creates them, where a nested path needs its map first. */
const counterAttribute = (status: JobStatus) => `c_${status}`;

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;

const recordOf = (item: Record<string, unknown>): RolloutRecord => {
  const { pk: _pk, sk: _sk, [SWEEP_PK]: _p, [SWEEP_SK]: due, value, ...rest } = item;
  return {
    ...(rest as unknown as RolloutRecord),
    ...(typeof value === 'string' ? { value: JSON.parse(value) as Record<string, unknown> } : {}),
    ...(typeof due === 'string' ? { sweep_due: due } : {}),
  };
};

const tallyOf = (counters: Array<Record<string, unknown>>): RolloutTally => {
  const counts = emptyCounts();
  let total = 0;
  let updated: string | undefined;
  for (const counter of counters) {
    total += Number(counter.total ?? 0);
    for (const status of JOB_STATUSES) counts[status] += Number(counter[counterAttribute(status)] ?? 0);
    if (typeof counter.updated_at === 'string' && (!updated || counter.updated_at > updated)) updated = counter.updated_at;
  }
  return { total, counts, ...(updated ? { updated_at: updated } : {}) };
};

/** The sweep entry of a rollout due at `dueAt` (ms), in the rollouts' partition of the sweep index. */
const rolloutEntry = (dueAt: number) => sweepEntry(dueAt, ROLLOUT_DUE_PARTITION);

/**
 * Creates a rollout (before any of its devices' items), due in the sweep index at `dueAt`.
 * @throws when its ID is taken (never: IDs are random).
 */
export const createRollout = async (db: Db, rollout: RolloutRecord, dueAt: number) => {
  const { value, sweep_due: _due, ...rest } = rollout;
  await db.doc.send(
    new PutCommand({
      TableName: db.table,
      Item: {
        ...rolloutKey(rollout.workspace_id, rollout.id),
        ...rest,
        ...(value === undefined ? {} : { value: JSON.stringify(value) }),
        ...rolloutEntry(dueAt),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
};

/** A rollout's own item without its counts (one GetItem, eventually consistent: a device's status check). */
export const getRolloutRecord = async (db: Db, workspaceId: string, rolloutId: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: rolloutKey(workspaceId, rolloutId) }));
  return Item ? recordOf(Item) : undefined;
};

/** A rollout with its counts, read at once (strongly consistent; each counter item's counts add up to its own total). */
export interface RolloutView {
  record: RolloutRecord;
  tally: RolloutTally;
}

const isCounterOf = (id: string) => (sk: string) => sk.startsWith(`${rolloutKey('', id).sk}#C`);

/** A rollout of a workspace with its counts, or undefined. One Query: its item and its counter items are one key range. */
export const getRollout = async (db: Db, workspaceId: string, rolloutId: string): Promise<RolloutView | undefined> => {
  const { pk, prefix } = collection.rolloutWithCounters(workspaceId, rolloutId);
  const items: Array<Record<string, unknown>> = [];
  for await (const page of queryPages(db, { pk, prefix })) items.push(...page);
  const main = items.find((item) => item.sk === prefix);
  if (!main) return undefined;
  return { record: recordOf(main), tally: tallyOf(items.filter((item) => isCounterOf(rolloutId)(item.sk as string))) };
};

/**
 * A workspace's rollouts with their counts, newest first (IDs begin with their creation time),
 * one by one as pages are read; each keyed by its item's sort key (where a page that ends at it
 * resumes). A rollout's counter items sort right after its own, so reading backwards meets them
 * first, then the rollout.
 */
export async function* readRolloutsOfWorkspace(
  db: Db,
  workspaceId: string,
  { after, pageSize }: { after?: string; pageSize?: number },
): AsyncGenerator<Keyed<RolloutView>> {
  const { pk, prefix } = collection.rolloutsOfWorkspace(workspaceId);
  let ExclusiveStartKey: Record<string, unknown> | undefined = after === undefined ? undefined : { pk, sk: after };
  let counters: Array<Record<string, unknown>> = [];
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        ConsistentRead: true,
        ScanIndexForward: false,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk, ':prefix': prefix },
        // A rollout's item comes with a few dozen counter items at most.
        ...(pageSize ? { Limit: pageSize * 32 } : {}),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = item.sk as string;
      if (/#C\d+$/.test(sk)) {
        counters.push(item);
        continue;
      }
      const record = recordOf(item);
      yield { sk, value: { record, tally: tallyOf(counters.filter((c) => isCounterOf(record.id)(c.sk as string))) } };
      counters = [];
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

/** What a conditional update of a rollout checks and writes. */
interface RolloutUpdate {
  set: Record<string, unknown>;
  /** Fields set only where absent. */
  setIfAbsent?: Record<string, unknown>;
  remove?: readonly string[];
  /** A condition on the item's attributes, its names and values given as `#name` / `:value` in `names`/`values`. */
  condition: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

/** Applies a conditional update to a rollout. @returns the rollout as it is now, or undefined when the condition (or the item) failed. */
const updateRollout = async (db: Db, workspaceId: string, rolloutId: string, u: RolloutUpdate): Promise<RolloutRecord | undefined> => {
  const sets = Object.entries(u.set).filter(([, v]) => v !== undefined);
  const absent = Object.entries(u.setIfAbsent ?? {}).filter(([, v]) => v !== undefined);
  const names: Record<string, string> = { ...u.names };
  const values: Record<string, unknown> = { ...u.values };
  sets.forEach(([field, v], i) => {
    names[`#s${i}`] = field;
    values[`:s${i}`] = v;
  });
  absent.forEach(([field, v], i) => {
    names[`#a${i}`] = field;
    values[`:a${i}`] = v;
  });
  const clauses = [...sets.map((_, i) => `#s${i} = :s${i}`), ...absent.map((_, i) => `#a${i} = if_not_exists(#a${i}, :a${i})`)];
  const removes = (u.remove ?? []).map((field, i) => {
    names[`#r${i}`] = field;
    return `#r${i}`;
  });
  try {
    const { Attributes } = await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: rolloutKey(workspaceId, rolloutId),
        UpdateExpression: [clauses.length ? `SET ${clauses.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].filter(Boolean).join(' '),
        ConditionExpression: `attribute_exists(pk) AND (${u.condition})`,
        ExpressionAttributeNames: names,
        ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes && recordOf(Attributes);
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
};

const OPEN = '#state IN (:in_progress, :paused) AND attribute_not_exists(#outcome)';
const OPEN_NAMES = { '#state': 'state', '#outcome': 'outcome' };
const OPEN_VALUES = { ':in_progress': 'in_progress', ':paused': 'paused' };

/** The sweep index attributes to set for a due time (ms), or to remove when there is none. */
const entryChange = (dueAt: number | undefined) => (dueAt === undefined ? { set: {}, remove: [SWEEP_PK, SWEEP_SK] } : { set: rolloutEntry(dueAt), remove: [] });

/**
 * Sets the user's state of an open rollout (neither canceled nor with an outcome), and its sweep
 * entry when `dueAt` is given (a resume asks the sweep to look at once; a cancel, to cancel its devices).
 * @returns the rollout as it is now, or undefined when it is not open (or does not exist).
 */
export const setRolloutState = (db: Db, workspaceId: string, rolloutId: string, state: RolloutState, at: string, dueAt?: number) =>
  updateRollout(db, workspaceId, rolloutId, {
    set: { state, updated_at: at, ...(dueAt === undefined ? {} : rolloutEntry(dueAt)) },
    condition: OPEN,
    names: OPEN_NAMES,
    values: OPEN_VALUES,
  });

/**
 * Sets the outcome of an open rollout, once: `completed` (only once sealed) or `aborted` (with its
 * sweep entry due at `dueAt`, which cancels its queued and pending devices).
 * @returns the rollout as it is now, or undefined when it already ended (or was never sealed, for completed).
 */
export const setRolloutOutcome = (db: Db, workspaceId: string, rolloutId: string, outcome: RolloutOutcome, at: string, dueAt?: number) => {
  const entry = entryChange(dueAt);
  return updateRollout(db, workspaceId, rolloutId, {
    set: { outcome, updated_at: at, ...entry.set },
    // Completed, it has no device left to time out.
    remove: [...entry.remove, ...(outcome === 'completed' ? ['next_deadline_at'] : [])],
    condition: `${OPEN}${outcome === 'completed' ? ' AND attribute_exists(sealed_total)' : ''}`,
    names: OPEN_NAMES,
    values: OPEN_VALUES,
  });
};

/** Records how many device items the scheduling wrote, once. @returns the rollout, or undefined when it was sealed already. */
export const sealRollout = (db: Db, workspaceId: string, rolloutId: string, total: number) =>
  updateRollout(db, workspaceId, rolloutId, { set: { sealed_total: total }, condition: 'attribute_not_exists(sealed_total)' });

/**
 * Claims the release that was due at `seen` (the rollout's `next_release_at`): only one sweep run
 * wins it, however many overlap. The next one is due at `next`. With a timeout, the released
 * devices' `deadline` becomes the rollout's next deadline unless it has an earlier one.
 * @returns the rollout, or undefined when another run claimed it, or the rollout is no longer releasing.
 */
export const claimRelease = (db: Db, workspaceId: string, rolloutId: string, seen: string, at: string, next: string, deadline?: string) =>
  updateRollout(db, workspaceId, rolloutId, {
    set: { last_release_at: at, next_release_at: next },
    setIfAbsent: { next_deadline_at: deadline },
    condition: '#next = :seen AND #state = :in_progress AND attribute_not_exists(#outcome)',
    names: { '#next': 'next_release_at', '#state': 'state', '#outcome': 'outcome' },
    values: { ':seen': seen, ':in_progress': 'in_progress' },
  });

/**
 * Records that the release of `at` (the rollout's `last_release_at`) stopped short of its count,
 * owing `owed` devices, and makes the rollout due at `dueAt` (the release's time: at once) so that
 * the next sweep run goes on with it; unless a later release was claimed meanwhile or something owes already.
 * @returns the rollout, or undefined when it was not recorded.
 */
export const oweRelease = (db: Db, workspaceId: string, rolloutId: string, at: string, owed: number, dueAt: number) =>
  updateRollout(db, workspaceId, rolloutId, {
    set: { release_owed: owed, ...rolloutEntry(dueAt) },
    condition: '#last = :at AND attribute_not_exists(#owed)',
    names: { '#last': 'last_release_at', '#owed': 'release_owed' },
    values: { ':at': at },
  });

/**
 * Claims what the release of `at` owes (`owed`, as read): only one sweep run wins it, however many
 * overlap, and it is taken away whether or not the rollout still releases (an owed release of a
 * paused rollout, or one past its minute, is dropped: the next release takes over).
 * @returns the rollout, or undefined when another run claimed it or a later release was claimed.
 */
export const claimOwedRelease = (db: Db, workspaceId: string, rolloutId: string, at: string, owed: number) =>
  updateRollout(db, workspaceId, rolloutId, {
    set: {},
    remove: ['release_owed'],
    condition: '#last = :at AND #owed = :owed',
    names: { '#last': 'last_release_at', '#owed': 'release_owed' },
    values: { ':at': at, ':owed': owed },
  });

/**
 * Moves a rollout's next deadline from `seen` (none: it had none) to `next` (none: removed), unless
 * another run moved it meanwhile. @returns whether it was moved.
 */
export const moveNextDeadline = async (db: Db, workspaceId: string, rolloutId: string, seen: string | undefined, next: string | undefined) =>
  (await updateRollout(db, workspaceId, rolloutId, {
    set: next === undefined ? {} : { next_deadline_at: next },
    remove: next === undefined ? ['next_deadline_at'] : [],
    condition: seen === undefined ? 'attribute_not_exists(#d)' : '#d = :seen',
    names: { '#d': 'next_deadline_at' },
    values: seen === undefined ? {} : { ':seen': seen },
  })) !== undefined;

/** Marks a rate-limited rollout's queue empty for good (sealed, and a release found nothing queued). */
export const closeQueue = (db: Db, workspaceId: string, rolloutId: string) =>
  updateRollout(db, workspaceId, rolloutId, { set: { queue_open: false }, condition: 'attribute_exists(sealed_total)' });

/**
 * Moves the rollout's sweep entry from `seen` (the due time the sweep worked from; none: it had
 * none) to `dueAt` (none: removed), unless someone moved it meanwhile (a resume, a cancel).
 * @returns whether it was moved.
 */
export const moveSweepEntry = async (db: Db, workspaceId: string, rolloutId: string, seen: string | undefined, dueAt: number | undefined) => {
  const entry = entryChange(dueAt);
  const moved = await updateRollout(db, workspaceId, rolloutId, {
    set: entry.set,
    remove: entry.remove,
    condition: seen === undefined ? 'attribute_not_exists(#due)' : '#due = :seen',
    names: { '#due': SWEEP_SK },
    values: seen === undefined ? {} : { ':seen': seen },
  });
  return moved !== undefined;
};

/** How a set of stream records changes one rollout's counts. */
export interface CountDelta {
  workspace_id: string;
  rollout_id: string;
  /** Devices added to the rollout (a scheduling's new items). */
  total: number;
  counts: Partial<Record<JobStatus, number>>;
}

/** One counted unit of the registry stream: a record's deltas, applied once. */
export interface CountedChange {
  /** The record's event ID: the ledger item that makes it count once. */
  eventId: string;
  deviceId: string;
  deltas: CountDelta[];
}

/** How long a counted record's mark is kept: past the stream's 24 h retention, after which no retry can bring it again. */
export const LEDGER_TTL_SECONDS = 2 * 24 * 3600;

// TransactWriteItems takes at most 100 actions, and no two on one item.
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html
const TRANSACTION_MAX = 100;

/** Groups changes into transactions of at most TRANSACTION_MAX actions (a ledger item each, a counter update per rollout), in order. */
export const transactionsOf = (changes: CountedChange[]): CountedChange[][] => {
  const groups: CountedChange[][] = [];
  let group: CountedChange[] = [];
  let rollouts = new Set<string>();
  let size = 0;
  for (const change of changes) {
    const added = new Set(change.deltas.map((d) => d.rollout_id).filter((id) => !rollouts.has(id)));
    if (group.length && size + 1 + added.size > TRANSACTION_MAX) {
      groups.push(group);
      group = [];
      rollouts = new Set();
      size = 0;
    }
    group.push(change);
    const before = rollouts.size;
    for (const d of change.deltas) rollouts.add(d.rollout_id);
    size += 1 + rollouts.size - before;
  }
  if (group.length) groups.push(group);
  return groups;
};

/** The deltas of many changes added up per rollout. */
export const sumDeltas = (changes: CountedChange[]): CountDelta[] => {
  const sums = new Map<string, CountDelta>();
  for (const delta of changes.flatMap((c) => c.deltas)) {
    const sum = sums.get(delta.rollout_id) ?? { workspace_id: delta.workspace_id, rollout_id: delta.rollout_id, total: 0, counts: {} };
    sum.total += delta.total;
    for (const [status, n] of Object.entries(delta.counts) as Array<[JobStatus, number]>) sum.counts[status] = (sum.counts[status] ?? 0) + n;
    sums.set(delta.rollout_id, sum);
  }
  return [...sums.values()];
};

/** A transaction's update of one of a rollout's counter items: the delta's ADDs, and when. */
export const counterUpdate = (db: Db, delta: CountDelta, shard: number, at: string) => {
  const adds = [
    ['total', delta.total] as const,
    ...(Object.entries(delta.counts) as Array<[JobStatus, number]>).map(([s, n]) => [counterAttribute(s), n] as const),
  ].filter(([, n]) => n !== 0);
  return {
    Update: {
      TableName: db.table,
      Key: rolloutCounterKey(delta.workspace_id, delta.rollout_id, shard),
      UpdateExpression: `SET updated_at = :at${adds.length ? ` ADD ${adds.map((_, i) => `#a${i} :a${i}`).join(', ')}` : ''}`,
      ExpressionAttributeNames: Object.fromEntries(adds.map(([name], i) => [`#a${i}`, name])),
      ExpressionAttributeValues: { ':at': at, ...Object.fromEntries(adds.map(([, n], i) => [`:a${i}`, n])) },
    },
  };
};

/**
 * How a scheduling counts the device items it writes, in the transaction that writes them: a
 * chunk's items added to the rollout's total and to their states, on the counter of the writer's
 * slot (keys.ts schedulingCounter). The items and their count are stored together or not at all,
 * so the counts hold every device item the moment it exists, and the registry stream's consumer
 * never counts a creation.
 */
export const countWritten =
  (db: Db, workspaceId: string, rolloutId: string, at: string) =>
  (items: Array<{ status?: unknown }>, slot: number): TransactAction => {
    const counts: Partial<Record<JobStatus, number>> = {};
    for (const item of items) counts[item.status as JobStatus] = (counts[item.status as JobStatus] ?? 0) + 1;
    return counterUpdate(db, { workspace_id: workspaceId, rollout_id: rolloutId, total: items.length, counts }, schedulingCounter(slot), at);
  };

const cancellationCodes = (error: unknown) => {
  const e = error as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
  return e?.name === 'TransactionCanceledException' ? (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None') : undefined;
};

const RETRYABLE = new Set([
  'TransactionConflictException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
]);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_ATTEMPTS = 8;

/**
 * Applies counted changes in one transaction: a ledger item per change (put only if absent: a
 * change already counted, by an earlier try of its stream record, is not counted again) and their
 * deltas added to one counter item per rollout (a random one of
 * CHANGE_COUNTERS, so that concurrent batches seldom meet on one). Changes found counted already
 * are dropped and the rest tried again; conflicts and throttling are retried with backoff.
 * @returns the changes counted by this call (those found counted before are not among them).
 * @throws when the transaction keeps failing: none of the changes not yet counted is counted then.
 */
export const applyCountedChanges = async (db: Db, changes: CountedChange[], at: string, now = Date.now()): Promise<CountedChange[]> => {
  let pending = changes;
  const ttl = Math.floor(now / 1000) + LEDGER_TTL_SECONDS;
  for (let attempt = 1; pending.length; attempt++) {
    const deltas = sumDeltas(pending).filter((d) => d.total !== 0 || Object.values(d.counts).some((n) => n !== 0));
    const shard = Math.floor(Math.random() * CHANGE_COUNTERS);
    const ledger = pending.map((change) => ({
      Put: {
        TableName: db.table,
        Item: { pk: `DEV#${change.deviceId}`, sk: `CNT#${change.eventId}`, ttl },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    }));
    const items = [...ledger, ...deltas.map((d) => counterUpdate(db, d, shard, at))];
    try {
      await db.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return pending;
    } catch (error) {
      const codes = cancellationCodes(error);
      const counted = codes ? new Set(codes.slice(0, ledger.length).flatMap((code, i) => (code === 'ConditionalCheckFailed' ? [i] : []))) : new Set<number>();
      if (counted.size) {
        pending = pending.filter((_, i) => !counted.has(i));
        continue;
      }
      const retryable = codes
        ? codes.some((c) => c === 'TransactionConflict' || c === 'ThrottlingError' || c === 'ProvisionedThroughputExceeded')
        : RETRYABLE.has((error as Error).name);
      if (!retryable || attempt >= MAX_ATTEMPTS) throw error;
      await pause(Math.random() * Math.min(1000, 20 * 2 ** attempt));
    }
  }
  return pending;
};

/** A device of a rollout as its index entry tells it. */
export interface RolloutDeviceRow {
  device_id: string;
  status: JobStatus;
  /** When it reached its state (pending and in progress: when it was released). */
  time: string;
  /** The item's own key (a job, a FOTA, or what a later scheduling left of one). */
  key: ItemKey;
}

/** Where a read of one shard of a rollout's devices starts and what it covers. */
export interface RolloutDevicesRead {
  /** Only this state. */
  status?: JobStatus;
  /** Start after this index sort key (a cursor's). */
  after?: string;
  /** Only entries whose sort key is below this (a state's entries up to a time). */
  before?: string;
  /** Query's Limit. */
  pageSize?: number;
}

// Every index sort key of a rollout device is `<status>#<time>#<device>`: letters, digits and
// `#:.-TZ_`, all above "!" and below "~", so these bound every key of a state (or of all), and
// `after + "!"` is the first key past `after`.
const LOWEST = '!';
const HIGHEST = '~';

/**
 * One shard of a rollout's devices, in index order (by state, then the time they reached it, then
 * device ID), page by page, from the sweep index (eventually consistent, as every index).
 */
export async function* readRolloutDevicesShard(db: Db, rolloutId: string, shard: number, read: RolloutDevicesRead): AsyncGenerator<Keyed<RolloutDeviceRow>> {
  const low = read.after !== undefined ? `${read.after}${LOWEST}` : read.status ? `${read.status}#` : LOWEST;
  const high = read.before ?? (read.status ? `${read.status}#${HIGHEST}` : HIGHEST);
  if (high <= low) return;
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        IndexName: REGISTRY_SWEEP_INDEX.name,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :low AND :high',
        ExpressionAttributeNames: { '#pk': SWEEP_PK, '#sk': SWEEP_SK },
        ExpressionAttributeValues: { ':pk': rolloutDevicesPartition(rolloutId, shard), ':low': low, ':high': high },
        ...(read.pageSize ? { Limit: read.pageSize } : {}),
        ExclusiveStartKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = item[SWEEP_SK] as string;
      const { status, time, deviceId } = readRolloutDeviceSortKey(sk);
      yield { sk, value: { device_id: deviceId, status: status as JobStatus, time, key: { pk: item.pk as string, sk: item.sk as string } } };
    }
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
}

// BatchGetItem takes at most 100 keys a call, and may leave some for another.
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html
const BATCH_GET_LIMIT = 100;

/** What the index does not hold of a rollout device's item. */
export interface DeviceDetails {
  updated_at?: string;
  /** A job's result, as stored (JSON text). */
  result?: unknown;
  /** A FOTA's last message. */
  message?: string;
}

/**
 * What the index does not hold of some rollout devices' items (when they last changed, a job's
 * result, a FOTA's message), by item key (`pk|sk`), eventually consistent as the index they come
 * from. Unprocessed keys are asked again.
 */
export const readDeviceDetails = async (db: Db, keys: ItemKey[]): Promise<Map<string, DeviceDetails>> => {
  const details = new Map<string, DeviceDetails>();
  for (let i = 0; i < keys.length; i += BATCH_GET_LIMIT) {
    let Keys: Array<Record<string, unknown>> | undefined = keys.slice(i, i + BATCH_GET_LIMIT).map(({ pk, sk }) => ({ pk, sk }));
    for (let attempt = 0; Keys?.length; attempt++) {
      if (attempt) await pause(Math.min(1000, 25 * 2 ** attempt));
      const answer: BatchGetCommandOutput = await db.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [db.table]: { Keys, ProjectionExpression: 'pk, sk, updated_at, #result, message', ExpressionAttributeNames: { '#result': 'result' } },
          },
        }),
      );
      for (const item of answer.Responses?.[db.table] ?? []) {
        details.set(`${item.pk}|${item.sk}`, {
          updated_at: item.updated_at as string | undefined,
          result: item.result,
          message: item.message as string | undefined,
        });
      }
      Keys = answer.UnprocessedKeys?.[db.table]?.Keys;
    }
  }
  return details;
};

/** Every shard number of a rollout's devices in the sweep index. */
export const ROLLOUT_DEVICE_SHARDS: readonly number[] = Array.from({ length: INDEX_SHARDS }, (_, k) => k);

/**
 * What a device's job or FOTA (the item of sort key `itemSortKey`) was in a rollout once a later
 * scheduling replaced it: its final state there, listed among the rollout's devices as any other.
 */
export const supersededItem = (
  itemSortKey: string,
  old: { device_id: string; rollout_id: string; workspace_id: string; result?: Record<string, unknown>; message?: string },
  status: JobStatus,
  updatedAt: string,
) => ({
  ...supersededKey(old.device_id, old.rollout_id, itemSortKey),
  device_id: old.device_id,
  rollout_id: old.rollout_id,
  workspace_id: old.workspace_id,
  status,
  updated_at: updatedAt,
  ...(old.result !== undefined && (status === 'done' || status === 'failed') ? { result: JSON.stringify(old.result) } : {}),
  ...(old.message ? { message: old.message } : {}),
  ...rolloutDevicesEntry(old.rollout_id, old.device_id, status, updatedAt),
});
