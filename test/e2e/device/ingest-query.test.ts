import { waitFor } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { startRuntime } from '../../helpers/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { depthOf } from '../../helpers/sqs';

interface StoredRecord {
  timestamp_device: string;
  timestamp_in: string;
  fleet_id: string;
  device_id: string;
  tag: string;
  payload: unknown;
}

let runtime: LocalRuntime;
let api: ApiClient;
let devices: Array<{ id: string; fleet_id: string }>;
/** Every point the devices published, first write winning, as the storage must hold them. */
const expected: Array<Omit<StoredRecord, 'timestamp_in' | 'fleet_id'>> = [];

const at = (second: number) => `2026-04-01T12:00:${String(second).padStart(2, '0')}.000Z`;
const keyOf = (r: { device_id: string; tag: string; timestamp_device: string }) => `${r.timestamp_device} ${r.device_id} ${r.tag}`;

const drained = () =>
  waitFor(
    async () => {
      const depth = await depthOf(runtime.queue_urls.ingest);
      if (depth.visible + depth.inFlight) throw new Error(`ingest queue holds ${JSON.stringify(depth)}`);
    },
    'the ingest queue to drain',
    30_000,
  );

const query = (params: string) => api.get<{ result: StoredRecord[] }>(`/timeseries/${runtime.workspace_id}/data${params}`);

beforeAll(async () => {
  runtime = await startRuntime();
  api = apiClient(runtime.storage_url, runtime.api_key);
  const fleet = (await api.post(`/workspaces/${runtime.workspace_id}/fleets`, { name: 'field' })).body.fleet;
  devices = [];
  const clients: Array<ReturnType<typeof deviceClient>> = [];
  for (const fleet_id of [undefined, fleet.id]) {
    const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'sensor', fleet_id })).body.device;
    const { credentials } = (await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`)).body;
    devices.push(device);
    clients.push(deviceClient(runtime.base_url, await deviceToken(credentials)));
  }
  const publish = async (device: number, points: Array<[tag: string, second: number, value: number]>) => {
    const answer = await clients[device].post(
      '/data',
      points.map(([tag, second, value]) => ({ tag, timestamp_device: at(second), payload: { value } })),
    );
    if (answer.status !== 202) throw new Error(`publish answered ${answer.status}`);
    for (const [tag, second, value] of points) {
      const point = { device_id: devices[device].id, tag, timestamp_device: at(second), payload: { value } };
      if (!expected.some((e) => keyOf(e) === keyOf(point))) expected.push(point);
    }
  };

  // Out of order, in several requests; both devices share timestamps (ties across devices).
  await publish(0, [
    ['temp', 5, 50],
    ['temp', 1, 10],
    ['hum', 5, 55],
    ['temp', 9, 90],
  ]);
  await publish(1, [
    ['temp', 5, 500],
    ['temp', 2, 200],
    ['hum', 1, 111],
  ]);
  await publish(0, [
    ['temp', 3, 30],
    ['hum', 0, 0],
    ['temp', 7, 70],
    ['hum', 9, 99],
  ]);
  await drained();
  // Duplicates, once their originals are stored: dropped, the first write stays.
  await publish(0, [
    ['temp', 5, -1],
    ['hum', 0, -1],
    ['temp', 4, 40],
  ]);
  await publish(1, [['temp', 2, -1]]);
  await drained();
}, 120_000);
afterAll(async () => {
  await runtime?.stop();
});

const ascending = () => [...expected].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
const summary = (records: StoredRecord[]) => records.map((r) => [r.timestamp_device, r.device_id, r.tag, r.payload]);
const summaryOf = (points: typeof expected) => points.map((p) => [p.timestamp_device, p.device_id, p.tag, p.payload]);

describe('published points read back through the storage query', () => {
  it('holds each point once, first write winning, newest first by default', async () => {
    const { status, body } = await query('');

    expect(status).toBe(200);
    expect(summary(body.result)).toEqual(summaryOf(ascending().reverse()));
    expect(body.result.every((r) => r.timestamp_in > r.timestamp_device)).toBe(true);
    expect(body.result.map((r) => r.fleet_id)).toEqual(
      ascending()
        .reverse()
        .map((p) => devices.find((d) => d.id === p.device_id)!.fleet_id),
    );
  });

  it('sorts oldest first with sort=timestamp_device', async () => {
    const { body } = await query('?sort=timestamp_device');

    expect(summary(body.result)).toEqual(summaryOf(ascending()));
  });

  it.each([
    ['?start=2026-04-01T12:00:03.000Z&end=2026-04-01T12:00:07.000Z', (p: (typeof expected)[0]) => p.timestamp_device >= at(3) && p.timestamp_device < at(7)],
    ['?start=2026-04-01T14:00:05%2B02:00', (p: (typeof expected)[0]) => p.timestamp_device >= at(5)],
    ['?tag=hum', (p: (typeof expected)[0]) => p.tag === 'hum'],
    ['?tag=hum&tag=temp', () => true],
  ])('filters with %s', async (params, keep) => {
    const { body } = await query(`${params}&sort=timestamp_device`.replace(/^&/, '?'));

    expect(summary(body.result)).toEqual(summaryOf(ascending().filter(keep)));
  });

  it('filters by one device or several', async () => {
    const [one, both] = await Promise.all([
      query(`?device=${devices[1].id}&sort=timestamp_device`),
      query(`?device=${devices[0].id}&device=${devices[1].id}&sort=timestamp_device`),
    ]);

    expect(summary(one.body.result)).toEqual(summaryOf(ascending().filter((p) => p.device_id === devices[1].id)));
    expect(summary(both.body.result)).toEqual(summaryOf(ascending()));
  });

  it.each(['timestamp_device', '-timestamp_device'])('pages through every record exactly once (sort=%s)', async (sort) => {
    const whole = (await query(`?sort=${sort}&size=1000`)).body.result;
    const pages: StoredRecord[][] = [];
    for (let from = 0; from * 3 < whole.length + 3; from++) pages.push((await query(`?sort=${sort}&size=3&from=${from}`)).body.result);

    expect(pages.flat()).toEqual(whole);
    expect(pages.slice(0, -1).every((page) => page.length === 3)).toBe(true);
    expect(pages.at(-1)).toEqual([]);
  });

  it('answers from=1&size=1 with the second record', async () => {
    const [second, all] = await Promise.all([query('?from=1&size=1'), query('')]);

    expect(second.body.result).toEqual([all.body.result[1]]);
  });

  it('combines every parameter', async () => {
    const params = `?device=${devices[0].id}&tag=temp&start=${at(1)}&end=${at(9)}&sort=timestamp_device&size=2&from=1`;

    const { body } = await query(params);

    const matching = ascending().filter((p) => p.device_id === devices[0].id && p.tag === 'temp' && p.timestamp_device >= at(1) && p.timestamp_device < at(9));
    expect(summary(body.result)).toEqual(summaryOf(matching.slice(2, 4)));
  });

  it.each([
    ['?size=-1', 'query.size'],
    ['?from=one', 'query.from'],
    ['?sort=newest', 'query.sort'],
    ['?start=yesterday', 'query.start'],
  ])('answers 400 naming the parameter for %s', async (params, field) => {
    const { status, body } = await api.get(`/timeseries/${runtime.workspace_id}/data${params}`);

    expect(status).toBe(400);
    expect(body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });
});
