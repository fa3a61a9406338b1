import { startFauxqs } from 'fauxqs';
import { join } from 'node:path';
import { LOCAL_AWS_ENV, startDynamoDbLocal } from '../dynamodb-local';
import { listeningOn } from '../ports';
import { startLocalS3 } from '../s3-engine';
import { startLocalSes } from '../ses-engine';
import type { Engines, StartBase } from './run-context';

/**
 * Starts the engines the template's data resources are created on: DynamoDB Local (or uses the one
 * `dynamoDbEndpoint` names, left running at the stop), fauxqs, the local S3 in front of fauxqs's, and
 * the SES v2 emulator.
 */
export const startEngines = async ({ options, stops }: StartBase, dataDir: string | undefined): Promise<Engines> => {
  const dynamo = options.dynamoDbEndpoint
    ? { endpoint: options.dynamoDbEndpoint, stop: async () => undefined }
    : await startDynamoDbLocal({ dataDir: dataDir && join(dataDir, 'dynamodb') });
  stops.push(dynamo.stop);
  const sqs = await startFauxqs({ port: 0, logger: false });
  stops.push(() => sqs.stop());
  // The local S3: fauxqs's, behind the front that checks signatures, expiry and checksums as S3 does.
  const s3 = await startLocalS3({
    engine: sqs.address,
    port: options.s3Port,
    credentials: { [LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID]: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY },
    dataDir,
  });
  stops.push(s3.stop);
  // Alarm e-mails (SES v2 SendEmail), as npm start's.
  const ses = await listeningOn('SES_PORT', options.sesPort, () => startLocalSes({ port: options.sesPort }));
  stops.push(ses.stop);
  return { dynamo, sqs, s3, ses };
};
