import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { newId } from '../../../lambdas/shared/ids';
import type { DataPoint } from '../../../lambdas/stores/timeseries';
import { ensureTable } from '../../../local/dynamodb-local';
import { dynamoDbTimeseriesStore } from '../../../lambdas/stores/timeseries/dynamodb';
import { collect, describeTimeseriesStore } from './timeseries-store-contract';

const freshTimeseriesTable = async (): Promise<Db> => {
  const client = new DynamoDBClient({});
  const table = `timeseries-${randomUUID()}`;
  await ensureTable(client, table);
  return { doc: documentClient(client), table };
};

describeTimeseriesStore('dynamodb on DynamoDB Local', async () => dynamoDbTimeseriesStore(await freshTimeseriesTable(), { writeConcurrency: 2 }));

describe('dynamodb time-series store across containers', () => {
  // Two stores on one table stand for two Lambda containers: neither knows what the other wrote,
  // so their duplicates are caught by the conditional puts alone.
  const containers = async () => {
    const db = await freshTimeseriesTable();
    return [dynamoDbTimeseriesStore(db, { writeConcurrency: 1 }), dynamoDbTimeseriesStore(db, { writeConcurrency: 3 })];
  };
  const workspace_id = newId('wks');
  const points = (count: number, payload: string, offset = 0): DataPoint[] =>
    Array.from({ length: count }, (_, i) => ({
      workspace_id,
      fleet_id: newId('flt'),
      device_id: `dev-${String((i + offset) % 7).padStart(20, '0')}`,
      tag: 'level',
      timestamp_device: new Date(Date.UTC(2024, 0, 1) + i + offset).toISOString(),
      timestamp_in: new Date().toISOString(),
      payload,
    }));
  const query = { workspaceId: workspace_id, from: 0, size: 10_000, order: 'asc' as const };

  it('discards a batch another container stored, keeping the first payloads', async () => {
    const [first, second] = await containers();
    await first.write(points(230, 'first'));

    const result = await second.write(points(230, 'second'));

    expect(result).toEqual({ written: 0, discarded: 230 });
    expect(new Set((await collect(first.query(query))).map((p) => p.payload))).toEqual(new Set(['first']));
  });

  it('stores the new points of a transaction that also holds stored ones', async () => {
    const [first, second] = await containers();
    // Every tenth point is already there: each transaction of the second write is cancelled once.
    await first.write(points(300, 'first').filter((_, i) => i % 10 === 0));

    const result = await second.write(points(300, 'second'));

    const stored = await collect(second.query(query));
    expect(result).toEqual({ written: 270, discarded: 30 });
    expect(stored).toHaveLength(300);
    expect(stored.filter((p) => p.payload === 'first')).toHaveLength(30);
  });

  it('lets one container win each key when two write the same points at once', async () => {
    const [first, second] = await containers();

    const results = await Promise.all([first.write(points(400, 'a')), second.write(points(400, 'b'))]);

    expect(results.map((r) => r.written + r.discarded)).toEqual([400, 400]);
    expect(results[0].written + results[1].written).toBe(400);
    expect(await collect(first.query(query))).toHaveLength(400);
  });
});
