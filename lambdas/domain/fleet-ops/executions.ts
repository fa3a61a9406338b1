/**
 * What jobs and FOTA share as executions on a device (operations.md §1): the state a scheduling
 * gives them, their deadline, and what makes a device's answer a failure. Pure.
 */
import type { JobStatus } from '../../schemas/job';
import type { ExecutionTimes } from '../../stores/job-store';

/** The deadline of an execution released at `releasedAt` with a timeout, as the interface writes dates. */
export const deadlineOf = (releasedAt: string, timeoutSeconds: number) => new Date(Date.parse(releasedAt) + timeoutSeconds * 1000).toISOString();

/** The state a scheduling writes: `pending` when released now (with its deadline), `queued` when its rollout releases it later. */
export const scheduledState = ({
  at,
  released,
  timeout_seconds,
  rollout_id,
}: {
  at: string;
  released: boolean;
  timeout_seconds?: number;
  rollout_id?: string;
}): { status: JobStatus; rollout_id?: string; timeout_seconds?: number } & ExecutionTimes => ({
  status: released ? 'pending' : 'queued',
  updated_at: at,
  ...(rollout_id ? { rollout_id } : {}),
  ...(timeout_seconds ? { timeout_seconds } : {}),
  ...(released ? { released_at: at } : {}),
  ...(released && timeout_seconds ? { deadline_at: deadlineOf(at, timeout_seconds) } : {}),
});

/** A job result is a failure when it is an object with a top-level `error` key (the device clients' own convention). */
export const isFailureResult = (result: Record<string, unknown>) => Object.hasOwn(result, 'error');
