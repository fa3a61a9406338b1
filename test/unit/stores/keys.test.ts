import {
  INDEX_SHARDS,
  readRolloutDeviceSortKey,
  apiKeyHashKey,
  collection,
  deadlinePartition,
  deviceKey,
  deviceLocatorKey,
  jobKey,
  rolloutCounterKey,
  rolloutDevicesEntry,
  rolloutDevicesPartition,
  rolloutKey,
  shardOfDevice,
  sweepEntry,
  workspaceKey,
} from '../../../lambdas/stores/keys';

describe('registry keys', () => {
  it('hangs workspaces under their account, so another account cannot address them', () => {
    expect(workspaceKey('acc-1', 'wks-1')).toEqual({ pk: 'ACC#acc-1', sk: 'WKS#wks-1' });
    expect(workspaceKey('acc-2', 'wks-1')).not.toEqual(workspaceKey('acc-1', 'wks-1'));
  });

  it('keeps a device, its jobs and its locator findable from the IDs the routes carry', () => {
    expect(deviceKey('wks-1', 'dev-1')).toEqual({ pk: 'WKS#wks-1', sk: 'DEV#dev-1' });
    expect(deviceLocatorKey('dev-1')).toEqual({ pk: 'DEV#dev-1', sk: 'DEVICE' });
    expect(jobKey('dev-1', 'reboot')).toEqual({ pk: 'DEV#dev-1', sk: 'JOB#reboot' });
  });

  it('makes each collection’s prefix match only its own items', () => {
    const jobs = collection.jobsOfDevice('dev-1');

    expect(jobKey('dev-1', 'x').sk.startsWith(jobs.prefix)).toBe(true);
    expect(deviceLocatorKey('dev-1').sk.startsWith(jobs.prefix)).toBe(false);
    expect(apiKeyHashKey('ab').pk).toBe('APIKEY#ab');
  });
});

describe('rollout keys and index entries', () => {
  it('keeps a rollout and its counters one key range of its workspace, apart from every other rollout', () => {
    const { pk, prefix } = collection.rolloutWithCounters('wks-1', 'rol-0000000001aaaaaaaaaaa');

    expect(rolloutKey('wks-1', 'rol-0000000001aaaaaaaaaaa')).toEqual({ pk, sk: prefix });
    expect(rolloutCounterKey('wks-1', 'rol-0000000001aaaaaaaaaaa', 3).sk.startsWith(prefix)).toBe(true);
    expect(rolloutKey('wks-1', 'rol-0000000001aaaaaaaaaab').sk.startsWith(prefix)).toBe(false);
  });

  it('spreads devices over the index shards evenly, each always in the same one', () => {
    const shards = new Map<number, number>();
    for (let i = 0; i < 16_000; i++) {
      const shard = shardOfDevice(`dev-${i.toString(36).padStart(20, '0')}`);
      shards.set(shard, (shards.get(shard) ?? 0) + 1);
    }

    expect([...shards.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: INDEX_SHARDS }, (_, k) => k));
    for (const n of shards.values()) expect(n).toBeGreaterThan(800);
    expect(shardOfDevice('dev-x')).toBe(shardOfDevice('dev-x'));
  });

  it('orders a rollout’s devices by state, then time, then device, in text order, and reads its entries back', () => {
    const a = rolloutDevicesEntry('rol-1', 'dev-a', 'queued', '2026-01-01T00:00:00.000Z');
    const b = rolloutDevicesEntry('rol-1', 'dev-b', 'queued', '2026-01-01T00:00:00.000Z');
    const later = rolloutDevicesEntry('rol-1', 'dev-a', 'queued', '2026-01-01T00:00:00.001Z');

    expect(a.sweep_sk < b.sweep_sk && b.sweep_sk < later.sweep_sk).toBe(true);
    expect(a.sweep_pk).toBe(rolloutDevicesPartition('rol-1', shardOfDevice('dev-a')));
    expect(readRolloutDeviceSortKey(a.sweep_sk)).toEqual({ status: 'queued', time: '2026-01-01T00:00:00.000Z', deviceId: 'dev-a' });
    expect(deadlinePartition(3)).toBe('DUE#T03');
    expect(sweepEntry(Date.UTC(2026, 0, 1), 'DUE#T03')).toEqual({ sweep_pk: 'DUE#T03', sweep_sk: '2026-01-01T00:00:00.000Z' });
  });
});
