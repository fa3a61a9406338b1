import { TimestreamWriteClient, WriteRecordsCommand } from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import {
  DATA_BATCH_MAX,
  DATA_PAYLOAD_MAX_BYTES,
  DataPointBatchSchema,
  DataPointInputSchema,
  type IngestDataMessage,
} from '../../../lambdas/schemas/device-api';
import { timestreamStore } from '../../../lambdas/stores/timeseries/timestream';

const SQS_MESSAGE_MAX_BYTES = 256 * 1024;
const id = (prefix: string) => `${prefix}-${'z'.repeat(20)}`;
/** A JSON string payload of exactly `bytes` bytes once serialized. */
const payloadOf = (bytes: number) => 'x'.repeat(bytes - 2);
const largestPoint = () => ({ tag: 't'.repeat(64), payload: payloadOf(DATA_PAYLOAD_MAX_BYTES), timestamp_device: '2026-01-01T00:00:00.000Z' });

describe('device API limits', () => {
  it.each([
    ['accepts the largest payload', { tag: 't', payload: payloadOf(DATA_PAYLOAD_MAX_BYTES) }, true],
    ['refuses a payload one byte over', { tag: 't', payload: payloadOf(DATA_PAYLOAD_MAX_BYTES + 1) }, false],
    ['accepts a 64-character tag', { tag: 't'.repeat(64), payload: 1 }, true],
    ['refuses a 65-character tag', { tag: 't'.repeat(65), payload: 1 }, false],
    ['refuses a tag with a slash', { tag: 'a/b', payload: 1 }, false],
    ['accepts a null payload', { tag: 't', payload: null }, true],
    ['accepts a timestamp with an offset', { tag: 't', payload: 1, timestamp_device: '2026-01-01T01:00:00+01:00' }, true],
    ['refuses a timestamp before 1970', { tag: 't', payload: 1, timestamp_device: '1969-12-31T23:59:59.999Z' }, false],
  ])('%s', (_name, point, valid) => {
    expect(DataPointInputSchema.safeParse(point).success).toBe(valid);
  });

  it('stores device timestamps in UTC with milliseconds', () => {
    expect(DataPointInputSchema.parse({ tag: 't', payload: 1, timestamp_device: '2026-01-01T01:00:00.5+01:00' }).timestamp_device).toBe(
      '2026-01-01T00:00:00.500Z',
    );
  });

  it('lets the largest accepted point fit a Timestream record (2 KB with its dimensions)', async () => {
    const timestream = mockClient(TimestreamWriteClient);
    timestream.on(WriteRecordsCommand).resolves({});
    const input = DataPointInputSchema.parse(largestPoint());
    const store = timestreamStore({ database: 'db', table: 'tbl', writeClient: timestream as unknown as TimestreamWriteClient });

    const result = await store.write([
      {
        ...input,
        timestamp_device: input.timestamp_device!,
        workspace_id: id('wks'),
        fleet_id: id('flt'),
        device_id: id('dev'),
        timestamp_in: new Date().toISOString(),
      },
    ]);

    expect(result).toEqual({ written: 1, discarded: 0 });
  });

  it('keeps the ingest message of the largest batch within one SQS message', () => {
    const points = DataPointBatchSchema.parse(Array.from({ length: DATA_BATCH_MAX }, largestPoint));
    const message: IngestDataMessage = {
      kind: 'data',
      workspace_id: id('wks'),
      fleet_id: id('flt'),
      device_id: id('dev'),
      device_name: 'n'.repeat(128),
      timestamp_in: new Date().toISOString(),
      points: points.map((p) => ({ ...p, timestamp_device: p.timestamp_device! })),
    };

    expect(Buffer.byteLength(JSON.stringify(message))).toBeLessThanOrEqual(SQS_MESSAGE_MAX_BYTES);
  });
});
