import type { JobStatus } from './api';

/** What each state of a job or FOTA on a device means (operations.md §1), as the device page explains it. */
export const JOB_STATE_MEANINGS: Readonly<Record<JobStatus, string>> = {
  queued: 'part of a rate-limited or paused rollout, not released yet: the device is not told',
  pending: 'released: the device gets it (live, or with its next status request)',
  in_progress: 'FOTA only: the device reported progress (downloading, installing)',
  done: 'the device answered',
  failed: 'the device answered with a failure (a job result with an error; a failed FOTA)',
  timed_out: 'not ended within its timeout after its release',
  canceled: 'canceled before it ended: by a person, by its rollout, or replaced by a later scheduling',
};

/** The states a job or FOTA never leaves. */
export const ENDED_JOB_STATUSES: ReadonlySet<JobStatus> = new Set(['done', 'failed', 'timed_out', 'canceled']);

/** Whether a job or FOTA in this state may still change, and so be canceled. */
export const jobOpen = (status: JobStatus) => !ENDED_JOB_STATUSES.has(status);

/** A state in words (`timed_out` → "timed out"). */
export const stateLabel = (status: string) => status.replace(/_/g, ' ');
