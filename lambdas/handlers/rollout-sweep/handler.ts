import type { Context, ScheduledEvent } from 'aws-lambda';
import { sweepRollouts, type SweepSummary } from '../../domain/fleet-ops/rollout-sweep';
import { registryDb } from '../../shared/clients';
import { logger } from '../../shared/logger';

// The sweep stops starting work this long before the function's timeout: the last transaction or
// batch it began still has time to finish, so a run never dies half-way through one.
const DEADLINE_MARGIN_MS = 10_000;

/**
 * The minute sweep (an EventBridge schedule; `npm start` runs it on the same schedule): releases
 * queued devices of rollouts and times out overdue jobs and FOTA, within the function's time.
 * Returns the summary it logs (EventBridge ignores it; the local runtimes keep the last one).
 */
export const handler = async (event: ScheduledEvent, context: Context): Promise<SweepSummary> => {
  const now = Date.now();
  const summary = await sweepRollouts({ db: registryDb() }, { now, deadline: now + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS });
  logger.info('rollout sweep', { ...summary, scheduledAt: event.time, requestId: context.awsRequestId });
  return summary;
};
