/**
 * Issue 33 (items 1 and 4; fleet-state.md §1) on the local runtime: a device's `last_seen_at` after
 * a burst of hundreds of points, written a bounded number of times (counted on the registry's own
 * change stream); its `firmware_version` after a FOTA ended `done`; its event log
 * (`GET …/devices/{id}/events`); the workspace overview (`GET …/overview`) over a store-seeded
 * fleet of thousands of devices, with its time printed (a measure, never asserted).
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { until, waitFor } from '../../local/ports';
import type { LocalRuntime } from '../../local/runtime';
import type { Db } from '../../lambdas/shared/clients';
import { apiClient, type ApiClient } from '../helpers/api-client';
import { deviceClient, deviceToken } from '../helpers/device-token';
import { startRuntime } from '../helpers/runtime';

let runtime: LocalRuntime;
let api: ApiClient;
let other: ApiClient;
let db: Db;
let streams: DynamoDBStreamsClient;
// Lambda modules are imported once the runtime has set the environment they read once (lambdas/shared/env.ts).
let putAll: typeof import('../../lambdas/stores/items').putAll;
let deviceKey: typeof import('../../lambdas/stores/keys').deviceKey;

beforeAll(async () => {
  runtime = await startRuntime();
  api = apiClient(runtime.base_url, runtime.api_key);
  const { documentClient } = await import('../../lambdas/shared/clients');
  ({ putAll } = await import('../../lambdas/stores/items'));
  ({ deviceKey } = await import('../../lambdas/stores/keys'));
  db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
  streams = new DynamoDBStreamsClient({});
  // Another account, with its own key.
  const { createAccount } = await import('../../lambdas/domain/tenancy/accounts');
  other = apiClient(runtime.base_url, (await createAccount(db, { name: 'other' })).api_key);
}, 120_000);
afterAll(async () => {
  db?.doc.destroy();
  streams?.destroy();
  await runtime?.stop();
});

/** The value `probe` answers once it is defined (polled, within a generous bound). */
const eventually = <T>(probe: () => Promise<T | undefined | null>, what: string) =>
  waitFor(
    async () => {
      const value = await probe();
      if (value === undefined || value === null) throw new Error(`not yet: ${what}`);
      return value;
    },
    what,
    90_000,
  );

/** Every change of one item the registry's change stream holds (MODIFY and INSERT), read from each shard's start. */
const changesOfItem = async (key: { pk: string; sk: string }) => {
  const { Table } = await new DynamoDBClient({}).send(new DescribeTableCommand({ TableName: db.table }));
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: Table!.LatestStreamArn! }));
  const images: Array<Record<string, unknown>> = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    let iterator = (
      await streams.send(new GetShardIteratorCommand({ StreamArn: Table!.LatestStreamArn!, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }))
    ).ShardIterator;
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      for (const r of page.Records ?? []) {
        if (r.dynamodb?.Keys?.pk?.S === key.pk && r.dynamodb?.Keys?.sk?.S === key.sk) images.push({ event: r.eventName, image: r.dynamodb?.NewImage ?? {} });
      }
      // An open shard answers an empty page with a next iterator forever: its end so far.
      iterator = page.Records?.length ? page.NextShardIterator : undefined;
    }
  }
  return images;
};

const newDevice = async (workspaceId: string, name: string) => {
  const device = (await api.post(`/workspaces/${workspaceId}/devices`, { name })).body.device;
  const { credentials } = (await api.post(`/workspaces/${workspaceId}/devices/${device.id}/identities`)).body;
  return { device, client: deviceClient(runtime.base_url, await deviceToken(credentials)) };
};

describe('a device’s last_seen_at and firmware_version (additive fields)', () => {
  it('sets last_seen_at after a burst of 300 points with at most one device write a minute', async () => {
    const ws = runtime.workspace_id;
    const { device, client } = await newDevice(ws, 'burst');
    expect((await api.get(`/workspaces/${ws}/devices/${device.id}`)).body.device).toMatchObject({ last_seen_at: null, firmware_version: null });

    // 30 requests of 10 points: 30 ingest messages, read in batches as they come.
    for (let r = 0; r < 30; r++) {
      const answer = await client.post(
        '/data',
        Array.from({ length: 10 }, (_, i) => ({ tag: 'burst', payload: { r, i } })),
      );
      expect(answer.status).toBe(202);
    }
    const points = await eventually(async () => {
      const { body } = await api.get(`/timeseries/${ws}/data?device=${device.id}&size=1000&sort=timestamp_device`);
      return body.result.length === 300 ? (body.result as Array<{ timestamp_in: string }>) : undefined;
    }, 'the 300 points stored');
    const arrivals = points.map((p) => Date.parse(p.timestamp_in)).sort((a, b) => a - b);
    const seen = await eventually(
      async () => (await api.get(`/workspaces/${ws}/devices/${device.id}`)).body.device.last_seen_at as string | null,
      'last_seen_at',
    );

    // Within a minute of the newest point's arrival, never after it.
    expect(Date.parse(seen)).toBeLessThanOrEqual(arrivals.at(-1)!);
    expect(Date.parse(seen)).toBeGreaterThanOrEqual(arrivals.at(-1)! - 60_000);
    // The device's item, as DynamoDB's change stream saw it: written once, plus once per further minute the burst spanned.
    const writes = (await changesOfItem(deviceKey(ws, device.id))).filter((c) => c.event === 'MODIFY' && (c.image as { last_seen_at?: unknown }).last_seen_at);
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.length).toBeLessThanOrEqual(1 + Math.floor((arrivals.at(-1)! - arrivals[0]) / 60_000));
  });

  it('sets firmware_version after a FOTA ends done, and logs the FOTA and job events newest first', async () => {
    const ws = runtime.workspace_id;
    const { device, client } = await newDevice(ws, 'flashed');
    expect((await api.post(`/devices/${device.id}/fota/app/versions/2.1.0`)).status).toBe(200);
    expect((await client.post('/fota/result', { status: 'done', firmware_version: '2.1.0' })).status).toBe(200);
    expect((await api.post(`/devices/${device.id}/jobs/reboot`, { value: {} })).status).toBe(200);

    await until(async () => (await api.get(`/workspaces/${ws}/devices/${device.id}`)).body.device.firmware_version === '2.1.0', 'firmware_version 2.1.0');
    const events = await eventually(async () => {
      const { body } = await api.get(`/workspaces/${ws}/devices/${device.id}/events`);
      return body.events.length >= 3 ? (body.events as Array<{ ts: string; type: string; direction: string; payload: { status?: string } }>) : undefined;
    }, 'three events logged');
    expect(events.map((e) => `${e.type} ${e.direction} ${e.payload.status}`).sort()).toEqual(['fota c2d pending', 'fota d2c done', 'job c2d pending'].sort());
    const times = events.map((e) => e.ts);
    expect([...times].sort().reverse()).toEqual(times);

    // Paged newest first by `before`.
    const first = (await api.get(`/workspaces/${ws}/devices/${device.id}/events?limit=2`)).body;
    expect(first.events).toEqual(events.slice(0, 2));
    const second = (await api.get(`/workspaces/${ws}/devices/${device.id}/events?limit=2&before=${encodeURIComponent(first.next)}`)).body;
    expect(second.events).toEqual(events.slice(2, 3));
    expect(second.next).toBeNull();
  });

  it('answers 404 for another account’s device and 400 for a bad page, writing nothing', async () => {
    const ws = runtime.workspace_id;
    const { device } = await newDevice(ws, 'private');
    expect((await other.get(`/workspaces/${ws}/devices/${device.id}/events`)).status).toBe(404);
    const bad = await api.get(`/workspaces/${ws}/devices/${device.id}/events?limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'query.limit' })]);
    expect((await api.get(`/workspaces/${ws}/devices/${device.id}/events?before=yesterday`)).status).toBe(400);
  });
});

describe('the overview', () => {
  const FLEET_DEVICES = 1500;

  it('counts a store-seeded workspace of 3,000 devices in two fleets, and answers in one pass', async () => {
    const { body } = await api.post('/workspaces', { name: 'overview' });
    const ws: string = body.workspace.id;
    const north = (await api.post(`/workspaces/${ws}/fleets`, { name: 'north', description: '' })).body.fleet;
    const south = (await api.post(`/workspaces/${ws}/fleets`, { name: 'south', description: '' })).body.fleet;
    const now = Date.now();
    const seeded = (fleetId: string, n: number) =>
      Array.from({ length: FLEET_DEVICES }, (_, i) => {
        const id = `dev-ov${fleetId.slice(-6)}${String(i).padStart(9, '0')}`;
        return {
          ...deviceKey(ws, id),
          id,
          name: `d${n}-${i}`,
          account_id: runtime.account_id,
          workspace_id: ws,
          fleet_id: fleetId,
          phys_id: '',
          created_at: new Date(now).toISOString(),
          // A third connected, a third silent for an hour, a third never seen; half on 1.0, the rest unknown.
          connected: i % 3 === 0,
          ...(i % 3 === 2 ? {} : { last_seen_at: new Date(now - (i % 3 === 1 ? 3600_000 : 10_000)).toISOString() }),
          ...(i % 2 === 0 ? { firmware_version: '1.0' } : {}),
        };
      });
    await putAll(db, [...seeded(north.id, 1), ...seeded(south.id, 2)], 8);

    const started = performance.now();
    const answer = await api.get(`/workspaces/${ws}/overview`);
    const ms = performance.now() - started;
    console.log(`overview of ${2 * FLEET_DEVICES} devices: ${Math.round(ms)} ms`);

    expect(answer.status).toBe(200);
    const o = answer.body.overview;
    const perFleet = {
      devices: 1500,
      online: 500,
      offline: 1000,
      silent: 500,
      never_seen: 500,
      firmware: [
        { version: '1.0', devices: 750 },
        { version: 'unknown', devices: 750 },
      ],
    };
    expect(o.totals).toEqual({
      devices: 3000,
      online: 1000,
      offline: 2000,
      silent: 1000,
      never_seen: 1000,
      firmware: [
        { version: '1.0', devices: 1500 },
        { version: 'unknown', devices: 1500 },
      ],
    });
    expect(o.fleets.find((f: { fleet_id: string }) => f.fleet_id === north.id)).toEqual({ fleet_id: north.id, fleet_name: 'north', ...perFleet });
    expect(o.fleets.find((f: { fleet_id: string }) => f.fleet_id === south.id)).toEqual({ fleet_id: south.id, fleet_name: 'south', ...perFleet });
    expect(o.fleets.find((f: { fleet_name: string }) => f.fleet_name === 'default')).toMatchObject({ devices: 0 });
    expect(o).toMatchObject({
      silent_after: 900,
      rollouts: [],
      webhooks: [],
      non_compliant: { devices: 0, keys: [] },
      open_alarms: { critical: 0, major: 0, minor: 0, warning: 0, total: 0 },
    });
    // Two hours of silence allowed: the hour-old devices are not silent.
    expect((await api.get(`/workspaces/${ws}/overview?silent_after=7200`)).body.overview.totals.silent).toBe(0);
  }, 180_000); // 3,000 writes and a full read on a loaded 2-core machine

  it('answers 404 for another account’s workspace and 400 for a bad threshold', async () => {
    expect((await other.get(`/workspaces/${runtime.workspace_id}/overview`)).status).toBe(404);
    const bad = await api.get(`/workspaces/${runtime.workspace_id}/overview?silent_after=5`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'query.silent_after' })]);
  });
});
