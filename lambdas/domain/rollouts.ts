import type { Db } from '../shared/clients';
import { listDueEntries } from '../stores/sweep-store';

/** What the minute sweep works with. */
export interface SweepDeps {
  db: Db;
}

/** What one run of the sweep did. */
export interface SweepSummary {
  /** Queued devices released (made `pending`). */
  released: number;
  /** Overdue jobs and FOTA ended as `timed_out`. */
  timedOut: number;
  /** Devices of canceled or aborted rollouts ended as `canceled`. */
  canceled: number;
}

/**
 * One run of the minute sweep (DESIGN §11): releases queued devices and times out overdue ones,
 * from the registry's sweep index, and stops starting new work at `budget.deadline`.
 *
 * Placeholder until the rollouts domain lands: it only counts the entries due before `budget.now`
 * (a real Query of the sweep index, so that the IAM and wiring of the sweep are exercised), and
 * reports them as `timedOut`.
 */
export const sweepRollouts = async (deps: SweepDeps, budget: { now: number; deadline: number }): Promise<SweepSummary> => {
  let due = 0;
  for await (const page of listDueEntries(deps.db, { before: budget.now })) {
    due += page.length;
    if (Date.now() >= budget.deadline) break;
  }
  return { released: 0, timedOut: due, canceled: 0 };
};
