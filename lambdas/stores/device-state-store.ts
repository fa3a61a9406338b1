import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { isConditionFailed } from './errors';
import { deviceKey } from './keys';

/**
 * A device's state as stored on its item (attribute `state`; spec/fleet-state.md §3): absent on a
 * device never given one. Each side is a map of key → JSON, with the time each key was set.
 */
export interface StoredDeviceState {
  desired: Record<string, unknown>;
  reported: Record<string, unknown>;
  /** Grows by one with every change of `desired`. */
  version: number;
  desired_at: Record<string, string>;
  reported_at: Record<string, string>;
  /**
   * Per desired key (a key a rollout removes included), the state rollouts whose value it holds,
   * oldest first: what the registry stream compares a report with, without a read. Absent for a
   * key set by a per-device PATCH.
   */
  desired_by?: Record<string, string[]>;
}

/** The empty state of a device never given one. */
export const EMPTY_STATE: StoredDeviceState = { desired: {}, reported: {}, version: 0, desired_at: {}, reported_at: {} };

/** Whether any desired key is held by a state rollout. */
const held = (by: Record<string, string[]>) => Object.keys(by).length > 0;

/** One side of the state as a write sets it. */
export type StateSide =
  | { side: 'desired'; document: Record<string, unknown>; times: Record<string, string>; version: number; by: Record<string, string[]> }
  | { side: 'reported'; document: Record<string, unknown>; times: Record<string, string> };

/**
 * Writes one side of a device's state over the state it was computed from, or answers false when
 * the item changed meanwhile (the caller reads again): the desired side only over the version it
 * read, the reported side only over the reported document and times it read (a map compares
 * whole), a first state only where none is. The device must exist (a deleted one has no item).
 * @returns whether it was written; undefined when no such device (its item is gone).
 */
export const writeStateSide = async (db: Db, workspaceId: string, deviceId: string, read: StoredDeviceState | undefined, next: StateSide) => {
  const names: Record<string, string> = { '#state': 'state' };
  let UpdateExpression: string;
  let ConditionExpression: string;
  let values: Record<string, unknown>;
  if (!read) {
    const whole =
      next.side === 'desired'
        ? { ...EMPTY_STATE, desired: next.document, desired_at: next.times, version: next.version, ...(held(next.by) ? { desired_by: next.by } : {}) }
        : { ...EMPTY_STATE, reported: next.document, reported_at: next.times };
    UpdateExpression = 'SET #state = :state';
    ConditionExpression = 'attribute_exists(pk) AND attribute_not_exists(#state)';
    values = { ':state': whole };
  } else if (next.side === 'desired') {
    names['#doc'] = 'desired';
    names['#at'] = 'desired_at';
    names['#version'] = 'version';
    names['#by'] = 'desired_by';
    // The rollouts behind each key may change without a new version (one sets a value a key holds already): compared too.
    // No key held by a rollout (a device only ever PATCHed): no attribute.
    const set = 'SET #state.#doc = :doc, #state.#at = :at, #state.#version = :next';
    UpdateExpression = held(next.by) ? `${set}, #state.#by = :by` : `${set} REMOVE #state.#by`;
    ConditionExpression = `attribute_exists(pk) AND #state.#version = :read AND ${read.desired_by ? '#state.#by = :readBy' : 'attribute_not_exists(#state.#by)'}`;
    values = { ':doc': next.document, ':at': next.times, ':next': next.version, ':read': read.version, ...(held(next.by) ? { ':by': next.by } : {}) };
    if (read.desired_by) values[':readBy'] = read.desired_by;
  } else {
    names['#doc'] = 'reported';
    names['#at'] = 'reported_at';
    UpdateExpression = 'SET #state.#doc = :doc, #state.#at = :at';
    ConditionExpression = 'attribute_exists(pk) AND #state.#doc = :readDoc AND #state.#at = :readAt';
    values = { ':doc': next.document, ':at': next.times, ':readDoc': read.reported, ':readAt': read.reported_at };
  }
  try {
    await db.doc.send(
      new UpdateCommand({
        TableName: db.table,
        Key: deviceKey(workspaceId, deviceId),
        UpdateExpression,
        ConditionExpression,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
};
