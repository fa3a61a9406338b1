import { SendEmailCommand, SESv2Client } from '@aws-sdk/client-sesv2';

// Created once per container; the endpoint comes from AWS_ENDPOINT_URL_SESV2 when set (the local
// runtime's SES v2 emulator, aws-ses-v2-local).
let ses: SESv2Client | undefined;
const client = () => (ses ??= new SESv2Client({}));

/** One plain-text e-mail. */
export interface Email {
  from: string;
  to: string;
  subject: string;
  text: string;
}

/**
 * Sends one e-mail through Amazon SES v2 (SendEmail, simple content, UTF-8).
 * @returns the message ID SES gave it.
 * @throws what SES answers (a refused address, an unverified sender, throttling, an unreachable endpoint).
 */
export const sendEmail = async ({ from, to, subject, text }: Email): Promise<string> => {
  const result = await client().send(
    new SendEmailCommand({
      FromEmailAddress: from,
      Destination: { ToAddresses: [to] },
      Content: {
        Simple: {
          Subject: { Data: subject, Charset: 'UTF-8' },
          Body: { Text: { Data: text, Charset: 'UTF-8' } },
        },
      },
    }),
  );
  return result.MessageId ?? '';
};
