/**
 * A simulated device's state (spec/fleet-state.md §3, the `#state` key of spec/device-mqtt.md):
 * what it runs with, changed by the desired state it is sent, except the keys it was told to
 * refuse (so that an operator sees them stay `pending`). Pure: the device (bin/cli/device.ts)
 * publishes what these functions answer.
 */
import { isDeepStrictEqual } from 'node:util';

/** A state document: top-level keys and their JSON values. */
export type StateDocument = Record<string, unknown>;

/** The desired keys of a `#status` answer: its `expected` entries without a prefix (`@` jobs, `#`, `_` are not state). */
export const desiredOfStatus = (expected: Record<string, { v?: unknown }> | undefined): StateDocument =>
  Object.fromEntries(
    Object.entries(expected ?? {})
      .filter(([key]) => !/^[@#_]/.test(key))
      .map(([key, entry]) => [key, entry?.v ?? null]),
  );

/** What a device does with desired keys: the ones it applies (its report: a value, or null for a removed key) and the ones it refuses. */
export interface Applied {
  reported: StateDocument;
  refused: string[];
}

/**
 * Applies desired changes (a value sets a key, null removes it) to `state`, in place, but for the
 * `refuse` keys; answers the changes to report (only keys whose value changed).
 */
export const applyDesired = (state: StateDocument, desired: StateDocument, refuse: ReadonlySet<string>): Applied => {
  const reported: StateDocument = {};
  const refused: string[] = [];
  for (const [key, value] of Object.entries(desired)) {
    if (refuse.has(key)) {
      refused.push(key);
      continue;
    }
    if (value === null) {
      if (!(key in state)) continue;
      delete state[key];
      reported[key] = null;
    } else if (!isDeepStrictEqual(state[key], value)) {
      state[key] = value;
      reported[key] = value;
    }
  }
  return { reported, refused };
};
