import type { AlarmTransition } from '../schemas/alarm-transitions';
import { alarmNotificationsQueueUrl } from '../shared/env';
import { AppError } from '../shared/errors';
import { sendDelayedMessage } from './queue-store';

/**
 * Puts an alarm's transition on the notifications queue, which the `alarm-notifier` Lambda drains
 * (its webhook event and e-mails, each sent once by the transition's id).
 * @throws when no notifications queue is configured or SQS refuses the message, so that the
 * transition's caller fails (and is retried) rather than losing the notification.
 */
export const sendAlarmTransition = async (transition: AlarmTransition): Promise<void> => {
  const queueUrl = alarmNotificationsQueueUrl();
  if (!queueUrl) throw new AppError(500, 'internal_error', 'ALARM_NOTIFICATIONS_QUEUE_URL is not set.');
  await sendDelayedMessage(queueUrl, transition, 0);
};
