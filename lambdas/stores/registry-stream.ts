import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { fotaOfItem, jobOfItem, type FotaRecord, type JobRecord } from './job-store';
import { itemKindOf } from './keys';

/** A job's or FOTA's change as the registry stream tells it: the item before and after (absent when created or deleted). */
export type RegistryChange =
  | { kind: 'job'; before?: JobRecord; after?: JobRecord }
  | { kind: 'fota'; before?: FotaRecord; after?: FotaRecord };

type Image = Record<string, AttributeValue>;

// The stream's images use the same marshalling as the table; the Lambda event types them on their own.
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);

/**
 * The change a registry stream record (NEW_AND_OLD_IMAGES) describes, when it is a job's or a
 * FOTA's; undefined for every other item. Items are read through the job store, as any read is.
 * @throws Error when the record has no keys (not a DynamoDB stream record).
 */
export const registryChangeOf = (record: DynamoDBRecord): RegistryChange | undefined => {
  const keys = itemOf(record.dynamodb?.Keys);
  if (!keys) throw new Error(`Stream record ${record.eventID} has no keys.`);
  const kind = itemKindOf({ pk: String(keys.pk), sk: String(keys.sk) });
  const [before, after] = [itemOf(record.dynamodb?.OldImage), itemOf(record.dynamodb?.NewImage)];
  if (kind === 'job') return { kind, before: before && jobOfItem(before), after: after && jobOfItem(after) };
  if (kind === 'fota') return { kind, before: before && fotaOfItem(before), after: after && fotaOfItem(after) };
  return undefined;
};
