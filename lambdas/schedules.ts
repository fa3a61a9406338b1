/**
 * The Lambdas that run on a schedule, as data: the CDK stack makes an EventBridge rule of each row,
 * and `npm start` runs the same handler at the same interval, so that the two cannot disagree. No
 * engine or CDK import.
 */

/** The Lambda (a folder under `lambdas/`) that a schedule runs. */
export type ScheduledHandler = 'rollout-sweep';

/** How often a handler runs, and for how long it may. */
export interface ScheduleDefinition {
  handler: ScheduledHandler;
  /** What the rule and the function are for (their descriptions). */
  description: string;
  /**
   * Minutes between runs: EventBridge's `rate(N minute[s])` (its finest grain is one minute). The
   * local runtimes run one invocation at a time, the next at the next interval after it ends.
   */
  everyMinutes: number;
  /** Seconds one run may take (the Lambda's timeout). */
  timeoutSeconds: number;
}

/**
 * The minute sweep of rollouts (DESIGN §11): releases the next `max_per_minute` queued devices of
 * each active rollout and ends overdue jobs and FOTA as `timed_out`, from the registry's sweep
 * index; and the alarm timers that are due (DESIGN §16, domain/alarms/alarm-sweep.ts), from the
 * same index. A run that misses its minute is not made up: the next one finds the same due work, so
 * neither EventBridge nor Lambda retries it (lib/fleetstream-stack.ts). Its timeout is the period:
 * the handler stops starting work a margin before it (lambdas/handlers/rollout-sweep/handler.ts), so a run
 * ends before the next one starts.
 */
export const ROLLOUT_SWEEP: ScheduleDefinition = {
  handler: 'rollout-sweep',
  description: 'Fleetstream rollout sweep: releases queued devices and times out overdue jobs and FOTA',
  everyMinutes: 1,
  timeoutSeconds: 60,
};

/** Every scheduled handler of the system. */
export const SCHEDULES: readonly ScheduleDefinition[] = [ROLLOUT_SWEEP];

/** EventBridge's rate expression of a schedule: `rate(1 minute)`, `rate(5 minutes)` (singular for 1, as EventBridge demands). */
export const rateExpressionOf = (schedule: Pick<ScheduleDefinition, 'everyMinutes'>) =>
  `rate(${schedule.everyMinutes} minute${schedule.everyMinutes === 1 ? '' : 's'})`;
