import * as z from 'zod';

/**
 * An alarm as a transition carries it (fleet-state.md §4, Alarms): the same fields as the alarms
 * list answers, at the moment of the transition.
 */
export const TransitionAlarmSchema = z.object({
  id: z.string(),
  rule_id: z.string(),
  rule_name: z.string(),
  kind: z.string(),
  severity: z.string(),
  device_id: z.string(),
  fleet_id: z.string(),
  status: z.string(),
  opened_at: z.string(),
  acknowledged_at: z.string().nullable(),
  acknowledged_by: z.string().nullable(),
  closed_at: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});

/**
 * One transition of an alarm (opened, acknowledged, closed), as the alarm transitions put it on the
 * notifications queue (stores/alarm-notification-queue.ts) and the `alarm-notifier` Lambda reads
 * it: the `alarm` webhook event of the workspace and, on `opened` and `closed`, an e-mail to
 * `notify.emails`. `id` is `${alarm.id}:${event}`, once per event: the notifier sends each at most
 * once by it.
 */
export const AlarmTransitionSchema = z.object({
  /** Transition id: `${alarm.id}:${event}` (once per event). */
  id: z.string(),
  event: z.enum(['opened', 'acknowledged', 'closed']),
  /** ISO time of the transition. */
  at: z.string(),
  workspace_id: z.string(),
  alarm: TransitionAlarmSchema,
  notify: z.object({ emails: z.array(z.string()), integrations: z.boolean() }),
});
export type AlarmTransition = z.infer<typeof AlarmTransitionSchema>;
export type AlarmTransitionEvent = AlarmTransition['event'];
