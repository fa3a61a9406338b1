import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { RolloutAbortReason } from '../schemas/rollout';
import { isConditionFailed } from './errors';
import { REGISTRY_SWEEP_INDEX, rolloutKey } from './keys';
import { recordOf, rolloutEntry, type RolloutOutcome, type RolloutRecord, type RolloutState } from './rollout-store';

const { partitionKey: SWEEP_PK, sortKey: SWEEP_SK } = REGISTRY_SWEEP_INDEX;

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
 * sweep entry due at `dueAt`, which cancels its queued and pending devices, and why, in the same write).
 * @returns the rollout as it is now, or undefined when it already ended (or was never sealed, for completed).
 */
export const setRolloutOutcome = (
  db: Db,
  workspaceId: string,
  rolloutId: string,
  outcome: RolloutOutcome,
  at: string,
  dueAt?: number,
  abortReason?: RolloutAbortReason,
) => {
  const entry = entryChange(dueAt);
  return updateRollout(db, workspaceId, rolloutId, {
    set: { outcome, updated_at: at, abort_reason: abortReason, ...entry.set },
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

/**
 * Makes a rollout due by `deadline` (a late device released with a timeout): its next deadline
 * becomes `deadline` unless it has an earlier one, and its sweep entry too unless it is due earlier.
 * Each write is conditional, so that it never delays what is due.
 */
export const dueByDeadline = async (db: Db, workspaceId: string, rolloutId: string, deadline: string) => {
  const entry = rolloutEntry(Date.parse(deadline));
  await updateRollout(db, workspaceId, rolloutId, {
    set: { next_deadline_at: deadline },
    condition: 'attribute_not_exists(#d) OR #d > :d',
    names: { '#d': 'next_deadline_at' },
    values: { ':d': deadline },
  });
  await updateRollout(db, workspaceId, rolloutId, {
    set: entry,
    condition: 'attribute_not_exists(#due) OR #due > :due',
    names: { '#due': SWEEP_SK },
    values: { ':due': entry[SWEEP_SK] },
  });
};
