import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { fotaOfItem, jobOfItem, type FotaRecord, type JobRecord } from './job-store';
import { itemKindOf, type ItemKey } from './keys';
import { stateExecutionOfItem, type StateExecutionRecord } from './state-execution-store';

/**
 * A job's, FOTA's or state rollout device's change as the registry stream tells it: the item's key, the item before and
 * after (absent when created or deleted), and the record's event ID (the same on every retry).
 */
export type RegistryChange = { key: ItemKey; eventId: string } & (
  | { kind: 'job'; before?: JobRecord; after?: JobRecord }
  | { kind: 'fota'; before?: FotaRecord; after?: FotaRecord }
  | { kind: 'state'; before?: StateExecutionRecord; after?: StateExecutionRecord }
);

type Image = Record<string, AttributeValue>;

// The stream's images use the same marshalling as the table; the Lambda event types them on their own.
const itemOf = (image: unknown) => (image ? unmarshall(image as Image) : undefined);

/**
 * The change a registry stream record (NEW_AND_OLD_IMAGES) describes, when it is a job's, a
 * FOTA's or a state rollout device's; undefined for every other item. Items are read through the job store, as any read is.
 * @throws Error when the record has no keys or no event ID (not a DynamoDB stream record).
 */
export const registryChangeOf = (record: DynamoDBRecord): RegistryChange | undefined => {
  const keys = itemOf(record.dynamodb?.Keys);
  if (!keys) throw new Error(`Stream record ${record.eventID} has no keys.`);
  const key = { pk: String(keys.pk), sk: String(keys.sk) };
  const kind = itemKindOf(key);
  const [before, after] = [itemOf(record.dynamodb?.OldImage), itemOf(record.dynamodb?.NewImage)];
  const eventId = record.eventID ?? record.dynamodb?.SequenceNumber;
  if (!eventId) throw new Error('A stream record without an event ID or sequence number.');
  if (kind === 'job') return { kind, key, eventId, before: before && jobOfItem(before), after: after && jobOfItem(after) };
  if (kind === 'fota') return { kind, key, eventId, before: before && fotaOfItem(before), after: after && fotaOfItem(after) };
  if (kind === 'state') return { kind, key, eventId, before: before && stateExecutionOfItem(before), after: after && stateExecutionOfItem(after) };
  return undefined;
};
