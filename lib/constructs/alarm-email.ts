import { Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { HandlerFunction } from './handler-function';

/** The variable the notifier reads the From address of alarm e-mails from (`lambdas/shared/env.ts`). */
export const ALARM_EMAIL_SENDER_ENV = 'ALARM_EMAIL_SENDER';

/**
 * Lets the alarm notifier send e-mail through SES v2 from `sender` (deploy setting `alarmSender`):
 * `ses:SendEmail` on the SES identity `identity` (the verified domain or address the sender
 * belongs to), with the From address held to the sender by `ses:FromAddress`, and nothing else
 * of SES. Without a sender the notifier sends no e-mail and is granted none.
 */
export const grantAlarmEmail = (fn: HandlerFunction, sender: string, identity: string) => {
  fn.addEnvironment(ALARM_EMAIL_SENDER_ENV, sender);
  if (!sender) return;
  const identityArn = Stack.of(fn).formatArn({ service: 'ses', resource: 'identity', resourceName: identity });
  fn.addToRolePolicy(
    new PolicyStatement({
      effect: Effect.ALLOW,
      actions: ['ses:SendEmail'],
      resources: [identityArn],
      conditions: { StringEquals: { 'ses:FromAddress': sender } },
    }),
  );
};
