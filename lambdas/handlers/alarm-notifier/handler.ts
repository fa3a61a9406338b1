import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { consoleLive } from '../../domain/console-live/live';
import { notifyTransition, showNotificationFailure, type NotifyDeps } from '../../domain/alarms/notifications';
import { publishForward } from '../../domain/webhooks/events';
import { retryDelaySeconds } from '../../domain/webhooks/forwarding';
import { AlarmTransitionSchema } from '../../schemas/alarm-transitions';
import { registryDb } from '../../shared/clients';
import { alarmEmailSender, alarmNotificationRetry, alarmNotificationsQueueUrl } from '../../shared/env';
import { logger } from '../../shared/logger';
import { sendEmail } from '../../stores/email-sender';
import { publishToConsoles } from '../../stores/console-channel';
import { delayMessages } from '../../stores/queue-store';

const live = consoleLive(publishToConsoles);
const deps = (): NotifyDeps => ({ db: registryDb(), forward: publishForward, sendEmail, sender: alarmEmailSender(), live });

/**
 * The notifications queue's consumer (an SQS event source with ReportBatchItemFailures): each
 * message is an alarm transition, notified by its webhook event and e-mails, each once. A message
 * with a part that failed comes back after the queue's backoff; at its last receive its failure
 * is shown on the rule (`last_notification_error`) and the queue's DLQ keeps it. A failure that
 * no retry mends (no sender on this deployment) is shown at once and not retried.
 */
export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const retry = alarmNotificationRetry();
  const failed: Array<{ messageId: string; receiptHandle: string; receives: number }> = [];
  for (const { messageId, receiptHandle, body, attributes } of event.Records) {
    const receives = Number(attributes.ApproximateReceiveCount) || 1;
    try {
      const transition = AlarmTransitionSchema.parse(JSON.parse(body));
      const failures = await notifyTransition(deps(), transition);
      const retried = failures.filter((f) => f.retryable);
      const shown = retried.length && receives < retry.maxReceiveCount ? failures.filter((f) => !f.retryable) : failures;
      if (shown.length) await showNotificationFailure(deps(), transition, shown[shown.length - 1]);
      if (retried.length) {
        logger.warn('alarm notification failed', { transition_id: transition.id, receives, failures: retried });
        failed.push({ messageId, receiptHandle, receives });
      }
    } catch (error) {
      logger.error('alarm notification failed', { messageId, receives, error: error as Error });
      failed.push({ messageId, receiptHandle, receives });
    }
  }
  if (failed.length) {
    await delayMessages(
      alarmNotificationsQueueUrl(),
      failed.map((f) => ({ receiptHandle: f.receiptHandle, seconds: retryDelaySeconds(retry, f.receives) })),
    ).catch((error) => logger.warn('alarm notification backoff not set: the message comes back after the visibility timeout', { error: error as Error }));
  }
  return { batchItemFailures: failed.map(({ messageId }) => ({ itemIdentifier: messageId })) };
};
