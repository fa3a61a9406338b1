/**
 * A device's fleets over the workspace's scheduling clock: what lets a fleet-wide job or FOTA target
 * exactly the devices that were in its fleets at one instant (its snapshot), however devices move
 * while it is written. Pure: the device store reads and writes the history, the domain asks it.
 *
 * The clock is one counter per workspace (`scheduleClockKey`). Every creation or move of a device
 * commits in a transaction that checks the counter still holds the value it stamps on the move, so
 * a move stamped `e` committed while the clock read `e`. A fleet-wide scheduling advances the clock
 * to `E` and reads the devices after that: every move stamped below `E` committed before it (and is
 * in what the scheduler reads), every later move is stamped `E` or more (and is ignored).
 */

/** One stay of a device in a fleet: from the move stamped `epoch` (at `at`, the mover's clock) on. */
export interface FleetStay {
  fleet_id: string;
  epoch: number;
  at: string;
}

/**
 * How long stays are kept once a newer one replaced them: far longer than a fleet-wide scheduling
 * may run (its Lambda stops after 5 minutes), so the stay a running scheduling asks for is never
 * dropped. The newest stay older than this is kept too: it is where the device was before.
 */
export const FLEET_HISTORY_RETENTION_MS = 60 * 60 * 1000;

/** The stays of a device as stored; a device written before histories existed has stayed in its fleet from the start. */
export const staysOf = (device: { fleet_id: string; fleet_history?: FleetStay[]; created_at?: string }): FleetStay[] =>
  device.fleet_history?.length ? device.fleet_history : [{ fleet_id: device.fleet_id, epoch: 0, at: device.created_at ?? '' }];

/**
 * The fleet a device was in at the snapshot of a scheduling that advanced the clock to `snapshot`:
 * that of its last stay stamped below it; undefined when the device did not exist yet.
 */
export const fleetAtSnapshot = (device: { fleet_id: string; fleet_history?: FleetStay[] }, snapshot: number): string | undefined => {
  let fleet: string | undefined;
  for (const stay of staysOf(device)) if (stay.epoch < snapshot) fleet = stay.fleet_id;
  return fleet;
};

/**
 * The history after a move into `fleetId` stamped `epoch`: a second move within one epoch replaces
 * the first (no snapshot falls between them), and stays replaced more than the retention ago are
 * dropped, but for the newest of them.
 */
export const historyAfterMove = (stays: FleetStay[], move: FleetStay, now = Date.now()): FleetStay[] => {
  const kept = stays.filter((stay) => stay.epoch < move.epoch);
  const cutoff = now - FLEET_HISTORY_RETENTION_MS;
  // A stay whose successor began before the cutoff committed before any running scheduling
  // advanced the clock, so that successor (or a later stay) is what such a scheduling reads.
  const successorBegan = (i: number) => Date.parse((kept[i + 1] ?? move).at);
  let first = 0;
  while (first < kept.length - 1 && successorBegan(first) < cutoff) first++;
  return [...kept.slice(first), move];
};
