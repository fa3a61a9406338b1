import type { _Record as SdkRecord } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';

type Wire = Record<string, unknown>;

/**
 * An attribute value as it is on the wire. The SDK's DynamoDB Streams client reads an empty map
 * (`{"M":{}}`) as `{}`, which no reader can unmarshall; Lambda's event carries `{"M":{}}`.
 */
const wireValue = (value: Wire): Wire => {
  if (!Object.keys(value).length) return { M: {} };
  if (value.M) return { M: wireImage(value.M as Record<string, Wire>) };
  if (Array.isArray(value.L)) return { L: (value.L as Wire[]).map(wireValue) };
  return value;
};
const wireImage = (image: Record<string, Wire> | undefined) =>
  image && Object.fromEntries(Object.entries(image).map(([name, value]) => [name, wireValue(value)]));

/** An SDK stream record as Lambda presents it in its event (times in epoch seconds, binaries in base64). */
export const toLambdaRecord = (record: SdkRecord, streamArn: string): DynamoDBRecord => {
  const { ApproximateCreationDateTime, ...rest } = record.dynamodb ?? {};
  const json = JSON.parse(JSON.stringify(rest, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value)));
  const dynamodb = { ...json, Keys: wireImage(json.Keys), NewImage: wireImage(json.NewImage), OldImage: wireImage(json.OldImage) };
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion,
    eventSource: record.eventSource,
    awsRegion: record.awsRegion,
    eventSourceARN: streamArn,
    dynamodb: { ...dynamodb, ApproximateCreationDateTime: ApproximateCreationDateTime ? Math.floor(ApproximateCreationDateTime.getTime() / 1000) : undefined },
  };
};

/** How a batch's invocation went: done, failed from the record at `failedFrom` on, or failed as a whole. */
export type Outcome = { failedFrom: number } | 'ok' | 'error';

/**
 * What a batch's invocation answered, as Lambda reads a stream consumer's answer with
 * ReportBatchItemFailures: nothing, or an empty list, is success; otherwise retry from the failed
 * record with the lowest sequence number. An identifier that is missing, empty or no record's of
 * the batch makes the whole batch failed.
 */
export const outcomeOf = (response: unknown, records: DynamoDBRecord[]): Outcome => {
  if (response === undefined || response === null) return 'ok';
  const failures = (response as DynamoDBBatchResponse).batchItemFailures;
  if (failures === undefined || failures === null) return 'ok';
  if (!Array.isArray(failures)) return 'error';
  if (!failures.length) return 'ok';
  let first = records.length;
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown })?.itemIdentifier;
    const index = typeof id === 'string' && id ? records.findIndex((r) => r.dynamodb?.SequenceNumber === id) : -1;
    if (index < 0) return 'error';
    first = Math.min(first, index);
  }
  return { failedFrom: first };
};
