import { waitFor } from '../../../local/ports';
import type { LocalRuntime } from '../../../local/runtime';
import { startRuntime } from '../../helpers/runtime';
import { apiClient, type ApiClient } from '../../helpers/api-client';
import { deviceClient, deviceToken } from '../../helpers/device-token';
import { depthOf } from '../../helpers/sqs';

let runtime: LocalRuntime;
let api: ApiClient;
beforeAll(async () => {
  runtime = await startRuntime({ authorizerCacheTtlSeconds: 1 });
  api = apiClient(runtime.base_url, runtime.api_key);
});
afterAll(async () => {
  await runtime?.stop();
});

const newDeviceWithCredentials = async () => {
  const device = (await api.post(`/workspaces/${runtime.workspace_id}/devices`, { name: 'sensor' })).body.device;
  const created = await api.post(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities`);
  return { device, ...created.body };
};

const asDevice = (token: string) => deviceClient(runtime.base_url, token);

describe('device API on the local runtime', () => {
  it('hands out credentials that point at the device API', async () => {
    const { device, credentials } = await newDeviceWithCredentials();

    expect(credentials.devinfo).toMatchObject({ device_id: device.id, mode: 'device_token', key_type: 'sym' });
    expect(credentials.endpoint.url).toBe(`${runtime.base_url}/device`);
  });

  it('runs a job end to end: scheduled by the API, fetched and answered by the device, then done', async () => {
    const { device, credentials } = await newDeviceWithCredentials();
    const me = asDevice(await deviceToken(credentials));
    await api.post(`/devices/${device.id}/jobs/reboot`, { value: { delay: 5 } });

    const status = await me.get('/status');
    const answered = await me.post('/jobs/reboot/result', { result: { rebooted: true } });
    const done = await api.get(`/devices/${device.id}/jobs?status=done`);
    const pending = await api.get(`/devices/${device.id}/jobs?status=pending`);

    expect(status.status).toBe(200);
    expect(status.body.jobs).toEqual([{ name: 'reboot', value: { delay: 5 }, scheduled_at: expect.any(String) }]);
    expect(answered.status).toBe(200);
    expect(done.body.jobs).toEqual([expect.objectContaining({ name: 'reboot', status: 'done', result: { rebooted: true }, completed_at: expect.any(String) })]);
    expect(pending.body.jobs).toEqual([]);
  });

  it('stores published points once each, first write winning, whatever their order', async () => {
    const { device, credentials } = await newDeviceWithCredentials();
    const me = asDevice(await deviceToken(credentials));
    const at = (second: number) => `2026-02-01T00:00:${String(second).padStart(2, '0')}.000Z`;
    const { timeseriesStore } = await import('../../../lambdas/stores/timeseries');
    const storedPoints = (count: number) =>
      waitFor(
        async () => {
          const points = [];
          for await (const p of timeseriesStore().query({ workspaceId: runtime.workspace_id, devices: [device.id], from: 0, size: 100, order: 'asc' }))
            points.push(p);
          if (points.length < count) throw new Error(`${points.length} of ${count} points stored`);
          return points;
        },
        'the points to be stored',
        30_000,
      );

    const first = await me.post('/data', [
      { tag: 'temp', payload: { v: 3 }, timestamp_device: at(3) },
      { tag: 'temp', payload: { v: 1 }, timestamp_device: at(1) },
      { tag: 'temp', payload: { v: 2 }, timestamp_device: at(2) },
    ]);
    await storedPoints(3);
    const duplicate = await me.post('/data', { tag: 'temp', payload: { v: 'again' }, timestamp_device: at(1) });
    const late = await me.post('/data', { tag: 'temp', payload: { v: 0 }, timestamp_device: at(0) });
    // Every queued message handled, the duplicate included: only then is "first write wins" shown.
    await waitFor(
      async () => {
        const depth = await depthOf(runtime.queue_urls.ingest);
        if (depth.visible + depth.inFlight) throw new Error(`ingest queue holds ${JSON.stringify(depth)}`);
      },
      'the ingest queue to drain',
      30_000,
    );
    const stored = await storedPoints(4);

    expect([first.status, duplicate.status, late.status]).toEqual([202, 202, 202]);
    expect(stored.map((p) => [p.timestamp_device, p.payload])).toEqual([
      [at(0), { v: 0 }],
      [at(1), { v: 1 }],
      [at(2), { v: 2 }],
      [at(3), { v: 3 }],
    ]);
    expect(stored.every((p) => p.fleet_id === device.fleet_id && p.timestamp_in > p.timestamp_device)).toBe(true);
  });

  it('keeps every point of a 100-point batch without times, and of five more sent back to back, in order', async () => {
    const { device, credentials } = await newDeviceWithCredentials();
    const me = asDevice(await deviceToken(credentials));
    const batch = (request: number) => Array.from({ length: 100 }, (_, i) => ({ tag: 'level', payload: { request, i } }));

    const answers = [await me.post('/data', batch(0))];
    for (let request = 1; request <= 5; request++) answers.push(await me.post('/data', batch(request)));

    expect(answers.map((a) => [a.status, a.body.accepted])).toEqual(Array(6).fill([202, 100]));
    const points = await waitFor(
      async () => {
        const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${device.id}&sort=timestamp_device&size=1000`);
        if (body.result.length < 600) throw new Error(`${body.result.length} of 600 points`);
        return body.result as Array<{ timestamp_device: string; payload: { request: number; i: number } }>;
      },
      'the 600 points to be stored',
      30_000,
    );
    // Each point once, in the order sent: request by request, and within a request point by point.
    expect(points.map((p) => p.payload)).toEqual(Array.from({ length: 6 }, (_, request) => batch(request).map((p) => p.payload)).flat());
    expect(new Set(points.map((p) => p.timestamp_device)).size).toBe(600);
    expect(points.every((p) => /\.\d{6}Z$/.test(p.timestamp_device))).toBe(true);
  });

  it('stores a replayed batch that carries its own times once', async () => {
    const { device, credentials } = await newDeviceWithCredentials();
    const me = asDevice(await deviceToken(credentials));
    const batch = Array.from({ length: 100 }, (_, i) => ({ tag: 'level', payload: { i }, timestamp_device: new Date(Date.UTC(2026, 1, 1) + i).toISOString() }));

    const answers = [
      await me.post('/data', batch),
      await me.post(
        '/data',
        batch.map((p) => ({ ...p, payload: { replayed: true } })),
      ),
    ];
    await waitFor(
      async () => {
        const depth = await depthOf(runtime.queue_urls.ingest);
        if (depth.visible + depth.inFlight) throw new Error(`ingest queue holds ${JSON.stringify(depth)}`);
      },
      'the ingest queue to drain',
      30_000,
    );

    const { body } = await api.get(`/timeseries/${runtime.workspace_id}/data?device=${device.id}&sort=timestamp_device&size=1000`);
    expect(answers.map((a) => a.status)).toEqual([202, 202]);
    expect(body.result.map((p: { timestamp_device: string; payload: unknown }) => [p.timestamp_device, p.payload])).toEqual(
      batch.map((p) => [p.timestamp_device, p.payload]),
    );
  });

  it('answers 401 to bad and expired tokens and to API keys', async () => {
    const { credentials } = await newDeviceWithCredentials();
    const expired = await deviceToken(credentials, { expiresIn: -300 });
    const forged = await deviceToken({ ...credentials, prvkey: Buffer.alloc(32, 7).toString('base64') });

    const answers = await Promise.all([
      asDevice(expired).get('/status'),
      asDevice(forged).get('/status'),
      asDevice('not-a-jwt').get('/status'),
      apiClient(`${runtime.base_url}/device`, runtime.api_key).get('/status'),
    ]);

    expect(answers.map((a) => [a.status, a.body.error.code])).toEqual(Array(4).fill([401, 'unauthorized']));
  });

  it('stops accepting a revoked identity’s tokens once the authorizer cache lets go', async () => {
    const { device, identity, credentials } = await newDeviceWithCredentials();
    const me = asDevice(await deviceToken(credentials));
    const before = await me.get('/status');

    await api.delete(`/workspaces/${runtime.workspace_id}/devices/${device.id}/identities/${identity.id}`);

    expect(before.status).toBe(200);
    // the runtime caches authorizer answers for 1 s, as API Gateway does for its TTL
    await waitFor(
      async () => {
        if ((await me.get('/status')).status !== 401) throw new Error('still accepted');
      },
      'revocation',
      10_000,
    );
  });
});
