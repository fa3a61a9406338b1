import type { AlarmTransition } from '../../schemas/alarm-transitions';
import type { ForwardMessage } from '../../schemas/forward';
import type { Db } from '../../shared/clients';
import { markNotificationSent, setRuleNotificationError, wasNotificationSent, type NotificationError } from '../../stores/alarm-notification-store';
import type { Email } from '../../stores/email-sender';
import { alarmUpdateOf, awaitWithin, type ConsoleLive } from '../console-live/live';
import { eventMessage, eventTimestamp } from '../webhooks/events';

/** How long the marks of sent notifications are kept: past the queue's 4 days and its DLQ's 14, so that a replayed transition sends nothing twice. */
export const NOTIFICATION_MARK_DAYS = 30;

/** The transitions that are e-mailed; every transition is a webhook event. */
const EMAILED: ReadonlySet<AlarmTransition['event']> = new Set(['opened', 'closed']);

/** What notifying needs: the registry (its marks, the rule's error), the forward path, SES and the sender. */
export interface NotifyDeps {
  db: Db;
  /** Puts events on the webhooks' forward path (domain/webhooks/events.ts publishForward). */
  forward: (messages: ForwardMessage[]) => Promise<void>;
  sendEmail: (email: Email) => Promise<unknown>;
  /** The From address (deploy setting `alarmSender`); empty: no e-mail on this deployment. */
  sender: string;
  /** The open consoles' channel (the `alarm` kind); absent: nobody is told live. */
  live?: ConsoleLive;
  now?: () => Date;
}

/** How long a transition waits at most for its live message to the consoles (best effort, never a failure). */
const LIVE_WAIT_MS = 1_000;

/** One part of a transition's notification that could not be sent this time. */
export interface NotificationFailure {
  /** The address, or null for the webhook event. */
  email: string | null;
  error: string;
  /** Whether trying again may help (false: this deployment has no sender). */
  retryable: boolean;
}

/**
 * The `ts` of the alarm event: the transition's time in the events' RFC 3339 with microseconds, the
 * same at every redelivery (now, should a transition carry a time that is not one).
 */
const eventTs = (at: string) => {
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? eventTimestamp() : `${new Date(ms).toISOString().slice(0, -1)}000Z`;
};

/** A line of a header (the subject): a rule's or device's name with no control character in it. */
const oneLine = (text: string) =>
  Array.from(text, (c) => (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f ? ' ' : c))
    .join('')
    .replace(/ {2,}/g, ' ');

/** Longest error text a rule keeps (the rule item stays small whatever SES answers). */
export const NOTIFICATION_ERROR_MAX_CHARS = 500;

/** The `alarm` webhook event of a transition: type `alarm`, direction `c2d`, payload the alarm. */
export const alarmEvent = (transition: AlarmTransition): ForwardMessage =>
  eventMessage(
    { workspace_id: transition.workspace_id, fleet_id: transition.alarm.fleet_id, device_id: transition.alarm.device_id },
    'alarm',
    'c2d',
    transition.alarm,
    eventTs(transition.at),
  );

/** The e-mail of a transition (opened or closed) to one address: plain text, what an operator needs to act. */
export const alarmEmail = (transition: AlarmTransition, from: string, to: string): Email => {
  const { alarm, event } = transition;
  const subject = oneLine(`[${alarm.severity}] ${alarm.rule_name}: alarm ${event} on ${alarm.device_id}`);
  const lines = [
    `The alarm of rule "${alarm.rule_name}" (${alarm.kind}, ${alarm.severity}) on device ${alarm.device_id} was ${event} at ${transition.at}.`,
    '',
    `alarm:      ${alarm.id}`,
    `status:     ${alarm.status}`,
    `device:     ${alarm.device_id} (fleet ${alarm.fleet_id})`,
    `workspace:  ${transition.workspace_id}`,
    `opened at:  ${alarm.opened_at}`,
    ...(alarm.acknowledged_at ? [`acknowledged at ${alarm.acknowledged_at} by ${alarm.acknowledged_by ?? 'unknown'}`] : []),
    ...(alarm.closed_at ? [`closed at:  ${alarm.closed_at}`] : []),
    `details:    ${JSON.stringify(alarm.details)}`,
    '',
    `Sent by Fleetstream to the addresses of the rule's notify.emails.`,
  ];
  return { from, to, subject, text: lines.join('\n') };
};

/**
 * Sends one part unless its mark says it was sent, then marks it: a redelivered transition sends
 * nothing twice (a part whose send succeeded but whose mark failed is sent again: at least once).
 */
const once = async (deps: NotifyDeps, transition: AlarmTransition, part: string, send: () => Promise<unknown>) => {
  if (await wasNotificationSent(deps.db, transition.id, part)) return;
  await send();
  await markNotificationSent(deps.db, transition.id, part, (deps.now?.() ?? new Date()).toISOString(), NOTIFICATION_MARK_DAYS * 86_400);
};

/** What failed, as the rule shows it: the error's name and message, and the HTTP status SES answered, if any. */
const messageOf = (error: unknown) => {
  const e = error as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode;
  return `${[e?.name, e?.message].filter(Boolean).join(': ') || String(error)}${status ? ` (HTTP ${status})` : ''}`;
};

/**
 * Notifies one transition: its `alarm` webhook event (unless the rule's notify.integrations is
 * false) and, when opened or closed, an e-mail to each of notify.emails, each part once by the
 * transition's id. A part that fails does not stop the others. The open consoles are told of it
 * (`alarm` live kind) at every delivery, best effort.
 * @returns the parts that failed (none: all sent, now or before).
 */
export const notifyTransition = async (deps: NotifyDeps, transition: AlarmTransition): Promise<NotificationFailure[]> => {
  // The open consoles first (at every delivery: a console told twice reads its alarms twice).
  const telling = deps.live?.([alarmUpdateOf(transition)]);
  try {
    return await notifyParts(deps, transition);
  } finally {
    await awaitWithin(telling, LIVE_WAIT_MS);
  }
};

const notifyParts = async (deps: NotifyDeps, transition: AlarmTransition): Promise<NotificationFailure[]> => {
  const failures: NotificationFailure[] = [];
  if (transition.notify.integrations) {
    await once(deps, transition, 'webhook', () => deps.forward([alarmEvent(transition)])).catch((error: unknown) =>
      failures.push({ email: null, error: messageOf(error), retryable: true }),
    );
  }
  if (!EMAILED.has(transition.event)) return failures;
  for (const to of new Set(transition.notify.emails)) {
    if (!deps.sender) {
      failures.push({ email: to, error: 'This deployment sends no e-mail: its alarmSender setting is empty.', retryable: false });
      continue;
    }
    await once(deps, transition, `email#${to.toLowerCase()}`, () => deps.sendEmail(alarmEmail(transition, deps.sender, to))).catch((error: unknown) =>
      failures.push({ email: to, error: messageOf(error), retryable: true }),
    );
  }
  return failures;
};

/**
 * Shows a failure on the transition's rule (`last_notification_error`); nothing when the rule is
 * gone. The last failure of a transition is shown (the address of its last failed e-mail).
 */
export const showNotificationFailure = (deps: Pick<NotifyDeps, 'db' | 'now'>, transition: AlarmTransition, failure: NotificationFailure) => {
  const error: NotificationError = {
    at: (deps.now?.() ?? new Date()).toISOString(),
    error: failure.error.slice(0, NOTIFICATION_ERROR_MAX_CHARS),
    email: failure.email,
  };
  return setRuleNotificationError(deps.db, transition.workspace_id, transition.alarm.rule_id, error);
};
