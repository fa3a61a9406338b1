import type { ScheduledEvent } from 'aws-lambda';
import { randomUUID } from 'node:crypto';

/** One run of a schedule: when it started and ended, and what the function answered or threw. */
export interface ScheduledRunRecord {
  startedAt: number;
  endedAt: number;
  result?: unknown;
  error?: string;
}

/** What a schedule has done so far (the local runtimes' `schedules()`). */
export interface ScheduleStatus {
  /** The rule's name (the handler folder for npm start, the rule's physical name for the cloud assembly). */
  rule: string;
  /** The function it invokes. */
  function: string;
  intervalMs: number;
  /** Runs that ended, and of those, the ones that failed. */
  runs: number;
  failures: number;
  /** Times the rule fired but could not invoke the function (no permission): EventBridge's FailedInvocations. */
  refused: number;
  /** Why the function may not be invoked, when it may not. */
  refusal?: string;
  /** The last few runs, oldest first. */
  recent: ScheduledRunRecord[];
}

/** A running schedule. */
export interface RunningSchedule {
  status: () => ScheduleStatus;
  /** Stops firing, and resolves once the run in progress (if any) has ended. */
  stop: () => Promise<void>;
}

export interface ScheduleOptions {
  rule: string;
  function: string;
  intervalMs: number;
  /** Invokes the function with the rule's event. */
  invoke: (event: ScheduledEvent) => Promise<unknown>;
  /** The rule's ARN, region and account, as the event names them. */
  ruleArn: string;
  region: string;
  account: string;
  /** Set when the function may not be invoked: each firing is counted as refused and invokes nothing. */
  refusal?: string;
  /** Milliseconds the events' `time` is ahead of the firing (a test's clock ahead; 0 when absent). */
  clockAheadMs?: number;
  /** A run that failed; logged to stderr when absent. */
  onError?: (error: unknown, rule: string) => void;
}

const RECENT_RUNS = 10;

/**
 * The event EventBridge sends a target of a scheduled rule: `Scheduled Event` from `aws.events`,
 * its `time` the scheduled minute's, the rule's ARN in `resources`.
 * https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-scheduled.html
 */
export const scheduledEvent = (ruleArn: string, region: string, account: string, at: number): ScheduledEvent => ({
  version: '0',
  id: randomUUID(),
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account,
  time: new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  region,
  resources: [ruleArn],
  detail: {},
});

/**
 * Fires a scheduled rule every `intervalMs` from now (the first firing one interval after the start,
 * as a new rate rule's), one run at a time: a run still going when its next firing is due delays
 * that firing to its end, and the firings it covered are skipped, not queued. A run that fails is
 * logged and counted; the schedule goes on.
 */
export const startSchedule = (options: ScheduleOptions): RunningSchedule => {
  const { rule, intervalMs } = options;
  const onError = options.onError ?? ((error: unknown) => console.error(`schedule ${rule}: run failed:`, error));
  const status: ScheduleStatus = {
    rule,
    function: options.function,
    intervalMs,
    runs: 0,
    failures: 0,
    refused: 0,
    ...(options.refusal ? { refusal: options.refusal } : {}),
    recent: [],
  };
  const startedAt = Date.now();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const fire = async (due: number) => {
    if (options.refusal) {
      status.refused += 1;
      return;
    }
    const record: ScheduledRunRecord = { startedAt: Date.now(), endedAt: 0 };
    try {
      record.result = await options.invoke(scheduledEvent(options.ruleArn, options.region, options.account, due + (options.clockAheadMs ?? 0)));
    } catch (error) {
      status.failures += 1;
      record.error = (error as Error)?.message ?? String(error);
      onError(error, rule);
    } finally {
      record.endedAt = Date.now();
      status.runs += 1;
      status.recent = [...status.recent, record].slice(-RECENT_RUNS);
    }
  };
  // The next firing after `now` on the rule's grid (start + k × interval).
  const schedule = () => {
    if (stopped) return;
    const now = Date.now();
    const due = startedAt + (Math.floor((now - startedAt) / intervalMs) + 1) * intervalMs;
    timer = setTimeout(() => {
      running = fire(due).finally(() => {
        running = undefined;
        schedule();
      });
    }, due - now);
  };
  schedule();

  return {
    status: () => ({ ...status, recent: status.recent.map((r) => ({ ...r })) }),
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
};
