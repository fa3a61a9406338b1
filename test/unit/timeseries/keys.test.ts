import { arrivalVersion, KEY_PART, pointKey, queryPartitions, SHARDS, seriesKeyOf, seriesPartition, shardOf } from '../../../lambdas/stores/timeseries/keys';

const devices = Array.from({ length: 400 }, (_, i) => `dev-${String(i).padStart(20, '0')}`);

describe('time-series keys', () => {
  const arrival = { timestamp_in: '2021-07-08T14:21:16.002Z', sequence: 3, payloadJson: '{"v":1}' };

  it('builds the key of an arrival: sharded workspace partition, then timestamp, device, tag and version', () => {
    const key = pointKey({ workspace_id: 'wks-1', device_id: 'dev-a', tag: 'temp', timestamp_device: '2021-07-08T14:21:15.915Z', ...arrival });

    expect(key.pk).toBe(`TS#wks-1#${shardOf('dev-a')}`);
    expect(key.sk).toMatch(/^2021-07-08T14:21:15\.915Z#dev-a#temp#2021-07-08T14:21:16\.002Z#0003#[0-9a-f]{8}$/);
    expect(seriesKeyOf(key.sk)).toBe('2021-07-08T14:21:15.915Z#dev-a#temp');
  });

  it('versions arrivals by arrival time, then place in the request, then payload, the same way every time', () => {
    const early = arrivalVersion('2021-07-08T14:21:16.002Z', 7, '{"v":2}');
    const late = arrivalVersion('2021-07-08T14:21:16.003Z', 0, '{"v":1}');
    const sameArrivalLater = arrivalVersion('2021-07-08T14:21:16.002Z', 8, '{"v":0}');
    const sameArrivalAndPlace = arrivalVersion('2021-07-08T14:21:16.002Z', 7, '{"v":3}');

    expect(early < late).toBe(true);
    expect(early < sameArrivalLater).toBe(true);
    expect(arrivalVersion('2021-07-08T14:21:16.002Z', 7, '{"v":2}')).toBe(early);
    expect(sameArrivalAndPlace).not.toBe(early);
    expect(seriesKeyOf(`k#${sameArrivalAndPlace}`)).toBe('k');
  });

  it('reads a sort key written before versions existed as its own dedup key, sorting before its versions', () => {
    const legacy = '2021-07-08T14:21:15.915Z#dev-a#temp';
    const versioned = pointKey({ workspace_id: 'wks-1', device_id: 'dev-a', tag: 'temp', timestamp_device: '2021-07-08T14:21:15.915Z', ...arrival }).sk;
    // IDs and tags up to 128 characters, whatever they look like, never pass for a version.
    const long = `2021-07-08T14:21:15.915Z#${'d'.repeat(128)}#2021-07-08T14-21-16.002Z-0000-abcdef01`;

    expect(seriesKeyOf(legacy)).toBe(legacy);
    expect(seriesKeyOf(versioned)).toBe(legacy);
    expect(legacy < versioned).toBe(true);
    expect(KEY_PART.test('2021-07-08T14-21-16.002Z-0000-abcdef01')).toBe(true);
    expect(seriesKeyOf(long)).toBe(long);
  });

  it('keeps a device in one shard and spreads devices over every shard', () => {
    const counts = new Array(SHARDS).fill(0);
    for (const device of devices) counts[shardOf(device)]++;

    expect(devices.map(shardOf)).toEqual(devices.map(shardOf));
    expect(Math.min(...counts)).toBeGreaterThan(400 / SHARDS / 2);
  });

  it('sorts sort keys as bytes exactly as (timestamp, device, tag, arrival) tuples, prefixes included', () => {
    const parts = ['a', 'a.b', 'a-b', 'a_b', 'aa', 'A', 'z9', '0'];
    const times = ['2021-01-01T00:00:00.000Z', '2021-01-01T00:00:00.001Z'];
    const tuples = times.flatMap((ts) => parts.flatMap((device) => parts.flatMap((tag) => times.map((arrived) => [ts, device, tag, arrived]))));
    const byTuple = [...tuples].sort((x, y) => {
      const differs = x.findIndex((part, i) => part !== y[i]);
      return differs < 0 ? 0 : x[differs] < y[differs] ? -1 : 1;
    });
    const sk = ([ts, device, tag, arrived]: string[]) =>
      pointKey({ workspace_id: 'w', device_id: device, tag, timestamp_device: ts, timestamp_in: arrived, sequence: 0, payloadJson: '1' }).sk;
    const byKey = [...tuples].sort((x, y) => Buffer.compare(Buffer.from(sk(x)), Buffer.from(sk(y))));

    expect(parts.every((p) => KEY_PART.test(p))).toBe(true);
    expect(byKey).toEqual(byTuple);
  });

  it('reads only the shards of the devices a query names, or every shard', () => {
    expect(queryPartitions('wks-1')).toEqual([...Array(SHARDS).keys()].map((s) => seriesPartition('wks-1', s)));
    expect(queryPartitions('wks-1', [devices[0], devices[0]])).toEqual([seriesPartition('wks-1', shardOf(devices[0]))]);
  });
});
