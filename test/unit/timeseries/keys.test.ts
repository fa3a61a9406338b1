import { KEY_PART, pointKey, queryPartitions, SHARDS, seriesPartition, shardOf } from '../../../lambdas/stores/timeseries/keys';

const devices = Array.from({ length: 400 }, (_, i) => `dev-${String(i).padStart(20, '0')}`);

describe('time-series keys', () => {
  it('builds the key of a point: sharded workspace partition, then timestamp, device and tag', () => {
    const key = pointKey({ workspace_id: 'wks-1', device_id: 'dev-a', tag: 'temp', timestamp_device: '2021-07-08T14:21:15.915Z' });

    expect(key).toEqual({ pk: `TS#wks-1#${shardOf('dev-a')}`, sk: '2021-07-08T14:21:15.915Z#dev-a#temp' });
  });

  it('keeps a device in one shard and spreads devices over every shard', () => {
    const counts = new Array(SHARDS).fill(0);
    for (const device of devices) counts[shardOf(device)]++;

    expect(devices.map(shardOf)).toEqual(devices.map(shardOf));
    expect(Math.min(...counts)).toBeGreaterThan(400 / SHARDS / 2);
  });

  it('sorts sort keys as bytes exactly as (timestamp, device, tag) tuples, prefixes included', () => {
    const parts = ['a', 'a.b', 'a-b', 'a_b', 'aa', 'A', 'z9', '0'];
    const tuples = ['2021-01-01T00:00:00.000Z', '2021-01-01T00:00:00.001Z'].flatMap((ts) => parts.flatMap((device) => parts.map((tag) => [ts, device, tag])));
    const byTuple = [...tuples].sort((x, y) => (x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] !== y[1] ? (x[1] < y[1] ? -1 : 1) : x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0));
    const sk = ([ts, device, tag]: string[]) => pointKey({ workspace_id: 'w', device_id: device, tag, timestamp_device: ts }).sk;
    const byKey = [...tuples].sort((x, y) => Buffer.compare(Buffer.from(sk(x)), Buffer.from(sk(y))));

    expect(parts.every((p) => KEY_PART.test(p))).toBe(true);
    expect(byKey).toEqual(byTuple);
  });

  it('reads only the shards of the devices a query names, or every shard', () => {
    expect(queryPartitions('wks-1')).toEqual([...Array(SHARDS).keys()].map((s) => seriesPartition('wks-1', s)));
    expect(queryPartitions('wks-1', [devices[0], devices[0]])).toEqual([seriesPartition('wks-1', shardOf(devices[0]))]);
  });
});
