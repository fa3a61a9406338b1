import type { Context, ScheduledEvent } from 'aws-lambda';
import { sweepAlarmTimers, type AlarmSweepSummary } from '../../domain/alarms/alarm-sweep';
import { detectionDeps } from '../../domain/alarms/detection';
import { sweepRollouts, type SweepSummary } from '../../domain/fleet-ops/rollout-sweep';
import { registryDb } from '../../shared/clients';
import { logger } from '../../shared/logger';

// The sweep stops starting work this long before the function's timeout: the last transaction or
// batch it began still has time to finish, so a run never dies half-way through one.
const DEADLINE_MARGIN_MS = 10_000;

const db = registryDb();
const alarms = detectionDeps(db);

/**
 * The minute sweep (an EventBridge schedule; `npm start` runs it on the same schedule): releases
 * queued devices of rollouts and times out overdue jobs and FOTA, and handles the alarm timers
 * that are due (offline, silent, condition), both within the function's time.
 * Returns the summary it logs (EventBridge ignores it; the local runtimes keep the last one).
 */
export const handler = async (event: ScheduledEvent, context: Context): Promise<SweepSummary & { alarms: AlarmSweepSummary }> => {
  const now = Date.now();
  const budget = { now, deadline: now + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS };
  // EventBridge stamps the scheduled minute, never ahead of the run; a time ahead is a local
  // runtime's test clock (sweepClockAheadSeconds), and the alarm timers are swept as of it.
  const ahead = Math.max(0, (Date.parse(event.time) || 0) - now);
  const alarmDeps = ahead ? { ...alarms, now: () => Date.now() + ahead } : alarms;
  const alarmBudget = { now: budget.now + ahead, deadline: budget.deadline + ahead };
  const [summary, alarmSummary] = await Promise.all([sweepRollouts({ db }, budget), sweepAlarmTimers(alarmDeps, alarmBudget)]);
  const result = { ...summary, alarms: alarmSummary };
  logger.info('rollout sweep', { ...result, scheduledAt: event.time, requestId: context.awsRequestId });
  return result;
};
