import { createApiClient, queryString } from '../../../console/src/lib/api';
import { ApiError, describeError } from '../../../console/src/lib/errors';

/** A fetch that records each request and answers from a list. */
const recorder = (answers: Array<() => Response>) => {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return answers.shift()!();
  }) as unknown as typeof globalThis.fetch;
  return { calls, fetch };
};

const json = (status: number, body: unknown) => () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('console API client', () => {
  it('repeats list parameters and leaves out undefined ones', () => {
    expect(queryString({ fleet: ['a', 'b'], status: undefined, size: 5 })).toBe('?fleet=a&fleet=b&size=5');
    expect(queryString({ fleet: undefined })).toBe('');
  });

  it('sends the session header, JSON body and encoded path, and answers the payload', async () => {
    const { calls, fetch } = recorder([json(200, { job: { name: 'reboot', status: 'pending' } })]);
    const api = createApiClient({ baseUrl: 'https://api.example.com/v3/', headers: async () => ({ Authorization: 'Bearer t0k' }), fetch });

    const job = await api.scheduleFleetJob('wks-1', 're/boot', { delay: 5 }, { fleets: ['flt-a', 'flt-b'] });

    expect(job).toEqual({ name: 'reboot', status: 'pending' });
    expect(calls).toHaveLength(1);
    expect(calls[0].url).toBe('https://api.example.com/v3/workspaces/wks-1/jobs/re%2Fboot?fleet=flt-a&fleet=flt-b');
    expect(calls[0].init.method).toBe('POST');
    expect(calls[0].init.headers).toEqual({ 'Content-Type': 'application/json', Authorization: 'Bearer t0k' });
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ value: { delay: 5 } });
  });

  it('starts an export with the query’s filters in the body and reads it back by its ID', async () => {
    const running = { id: 'exp-1', status: 'running', rows: 0 };
    const { calls, fetch } = recorder([json(202, { export: running }), json(200, { export: { ...running, status: 'ready' } })]);
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch });

    const started = await api.createExport('wks-1', 'ndjson', { start: '2026-01-01T00:00:00.000Z', tag: ['climate'], device: undefined });
    const read = await api.getExport('wks-1', 'exp-1');

    expect([started.status, read.status]).toEqual(['running', 'ready']);
    expect(calls.map((c) => [c.init.method, c.url])).toEqual([
      ['POST', 'http://x/v3/timeseries/wks-1/exports'],
      ['GET', 'http://x/v3/timeseries/wks-1/exports/exp-1'],
    ]);
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ format: 'ndjson', start: '2026-01-01T00:00:00.000Z', tag: ['climate'] });
  });

  it('turns the error envelope into an ApiError with its code, details and request ID', async () => {
    const envelope = {
      error: { code: 'validation_error', message: 'The request is not valid.', details: [{ field: 'body.name', message: 'Must not be empty.' }] },
      request_id: 'req-1',
    };
    const { fetch } = recorder([json(400, envelope)]);
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch });

    const error = await api.createFleet('wks-1', '').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_error',
      message: 'The request is not valid.',
      requestId: 'req-1',
      details: envelope.error.details,
    });
    expect(describeError(error)).toEqual({ title: 'The request is not valid.', lines: ['name: Must not be empty.'] });
  });

  it('explains a 404, a 500 with its request ID, and an answer that is not JSON', async () => {
    const { fetch } = recorder([
      json(404, { error: { code: 'not_found', message: 'Device not found.', details: [] }, request_id: 'r' }),
      json(500, { error: { code: 'internal_error', message: 'Internal error.', details: [] }, request_id: 'req-9' }),
      () => new Response('<html>Bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
    ]);
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch });

    const notFound = describeError(await api.getDevice('wks-1', 'dev-1').catch((e: unknown) => e));
    const failed = describeError(await api.listWorkspaces().catch((e: unknown) => e));
    const proxy = describeError(await api.listWorkspaces().catch((e: unknown) => e));

    expect(notFound.title).toBe('Device not found.');
    expect(notFound.lines[0]).toMatch(/another account/);
    expect(failed.lines).toContain('Request ID: req-9');
    expect(proxy.title).toBe('The service answered 502 Bad Gateway');
  });

  it('says the service could not be reached when fetch rejects', () => {
    expect(describeError(new TypeError('Failed to fetch')).title).toBe('The service could not be reached.');
  });

  it('answers undefined for an empty success body', async () => {
    const { fetch } = recorder([() => new Response(null, { status: 204 })]);
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch });
    await expect(api.deleteIntegration('wks-1', 'int-1')).resolves.toBeUndefined();
  });

  it('reads a storage page chunk by chunk, reporting the bytes', async () => {
    const body = JSON.stringify({ result: [{ tag: 't', payload: 1 }] });
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const bytes = new TextEncoder().encode(body);
        controller.enqueue(bytes.slice(0, 10));
        controller.enqueue(bytes.slice(10));
        controller.close();
      },
    });
    const { calls, fetch } = recorder([() => new Response(stream, { status: 200 })]);
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({ Authorization: 'Bearer t' }), fetch });
    const progress: number[] = [];

    const records = await api.queryTimeseries('wks-1', { device: ['d1', 'd2'], size: 10, from: 0, start: undefined }, (b) => progress.push(b));

    expect(records).toEqual([{ tag: 't', payload: 1 }]);
    expect(progress).toEqual([10, body.length]);
    expect(calls[0].url).toBe('http://x/v3/timeseries/wks-1/data?device=d1&device=d2&size=10&from=0');
  });
});

describe('console API client: fleet operations', () => {
  const client = (answers: Array<() => Response>) => {
    const recorded = recorder(answers);
    return { ...recorded, api: createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch: recorded.fetch }) };
  };
  const body = (init: RequestInit) => (init.body === undefined ? undefined : JSON.parse(init.body as string));

  it('schedules on fleets with rollout settings, and with none sends the v3 bodies', async () => {
    const rollout = { max_per_minute: 2, abort: { failure_percentage: 20, min_finished: 5 } };
    const { calls, api } = client([
      json(200, { job: { name: 'flash', rollout_id: 'rol-1' } }),
      json(200, { job: { name: 'flash', rollout_id: 'rol-2' } }),
      json(200, { fota: { rollout_id: 'rol-3' } }),
      json(200, { fota: { rollout_id: 'rol-4' } }),
    ]);

    await api.scheduleFleetJob('wks-1', 'flash', { image: 'v2' }, { fleets: ['flt-a'] }, rollout);
    await api.scheduleFleetJob('wks-1', 'flash', { image: 'v2' });
    await api.scheduleFleetFota('wks-1', 'app', '1.2.0', undefined, { timeout_seconds: 600 });
    const fota = await api.scheduleFleetFota('wks-1', 'app', '1.2.0', { fleets: ['flt-a'] });

    expect(fota.rollout_id).toBe('rol-4');
    expect(calls.map((c) => [c.init.method, c.url, body(c.init)])).toEqual([
      ['POST', 'http://x/v3/workspaces/wks-1/jobs/flash?fleet=flt-a', { value: { image: 'v2' }, rollout }],
      ['POST', 'http://x/v3/workspaces/wks-1/jobs/flash', { value: { image: 'v2' } }],
      ['POST', 'http://x/v3/workspaces/wks-1/fota/app/versions/1.2.0', { rollout: { timeout_seconds: 600 } }],
      // v3 sends the fleet-wide FOTA no body
      ['POST', 'http://x/v3/workspaces/wks-1/fota/app/versions/1.2.0?fleet=flt-a', undefined],
    ]);
  });

  it('schedules on a device with a timeout, and cancels its job and FOTA', async () => {
    const { calls, api } = client([
      json(200, { job: {} }),
      json(200, { fota: {} }),
      json(200, { fota: {} }),
      json(200, { job: { status: 'canceled' } }),
      json(200, { fota: { status: 'canceled' } }),
    ]);

    await api.scheduleJob('dev-1', 'reboot', {}, 600);
    await api.scheduleFota('dev-1', 'app', '1.2.0', 3600);
    await api.scheduleFota('dev-1', 'app', '1.2.0');
    expect((await api.cancelJob('dev-1', 'reboot')).status).toBe('canceled');
    expect((await api.cancelFota('dev-1')).status).toBe('canceled');

    expect(calls.map((c) => [c.init.method, c.url, body(c.init)])).toEqual([
      ['POST', 'http://x/v3/devices/dev-1/jobs/reboot', { value: {}, timeout_seconds: 600 }],
      ['POST', 'http://x/v3/devices/dev-1/fota/app/versions/1.2.0', { timeout_seconds: 3600 }],
      ['POST', 'http://x/v3/devices/dev-1/fota/app/versions/1.2.0', undefined],
      ['DELETE', 'http://x/v3/devices/dev-1/jobs/reboot', undefined],
      ['DELETE', 'http://x/v3/devices/dev-1/fota', undefined],
    ]);
  });

  it('pages rollouts and a rollout’s devices by state, and pauses, resumes and cancels', async () => {
    const { calls, api } = client([
      json(200, { rollouts: [{ id: 'rol-2' }, { id: 'rol-1' }], next: 'c1' }),
      json(200, { rollouts: [{ id: 'rol-0' }], next: null }),
      json(200, { rollout: { id: 'rol-1', status: 'in_progress' } }),
      json(200, { devices: [{ device_id: 'dev-1', status: 'failed', result: { error: 'x' } }], next: null }),
      json(200, { rollout: { id: 'rol-1', status: 'paused' } }),
      json(200, { rollout: { id: 'rol-1', status: 'in_progress' } }),
      json(200, { rollout: { id: 'rol-1', status: 'canceled' } }),
    ]);

    expect(await api.listRollouts('wks-1', { limit: 2 })).toEqual({ items: [{ id: 'rol-2' }, { id: 'rol-1' }], next: 'c1' });
    expect(await api.listRollouts('wks-1', { limit: 2, cursor: 'c1' })).toEqual({ items: [{ id: 'rol-0' }], next: null });
    expect((await api.getRollout('wks-1', 'rol-1')).status).toBe('in_progress');
    expect((await api.listRolloutDevices('wks-1', 'rol-1', { status: ['failed', 'timed_out'], limit: 50 })).items[0].result).toEqual({ error: 'x' });
    const states = [];
    for (const action of ['pause', 'resume', 'cancel'] as const) states.push((await api.changeRollout('wks-1', 'rol-1', action)).status);

    expect(states).toEqual(['paused', 'in_progress', 'canceled']);
    expect(calls.map((c) => `${c.init.method} ${c.url}`)).toEqual([
      'GET http://x/v3/workspaces/wks-1/rollouts?limit=2',
      'GET http://x/v3/workspaces/wks-1/rollouts?limit=2&cursor=c1',
      'GET http://x/v3/workspaces/wks-1/rollouts/rol-1',
      'GET http://x/v3/workspaces/wks-1/rollouts/rol-1/devices?status=failed&status=timed_out&limit=50',
      'POST http://x/v3/workspaces/wks-1/rollouts/rol-1/pause',
      'POST http://x/v3/workspaces/wks-1/rollouts/rol-1/resume',
      'POST http://x/v3/workspaces/wks-1/rollouts/rol-1/cancel',
    ]);
  });

  it('registers, reads, lists and deletes firmware versions', async () => {
    const upload = { method: 'PUT', url: 'http://s3/x?X-Amz-Signature=s', headers: { 'x-amz-checksum-sha256': 'q83v' }, expires_at: 't' };
    const { calls, api } = client([
      json(201, { firmware: { firmware_id: 'app', version: '1.2.0', status: 'awaiting_upload', upload } }),
      json(200, { firmware: { status: 'ready' } }),
      json(200, { firmwares: [{ firmware_id: 'app' }] }),
      json(200, { firmware: { status: 'ready' } }),
    ]);

    expect((await api.registerFirmware('wks-1', 'app', '1.2.0', { size: 3, sha256: 'ab'.repeat(32), description: 'first' })).upload).toEqual(upload);
    expect((await api.getFirmware('wks-1', 'app', '1.2.0')).status).toBe('ready');
    expect(await api.listFirmwares('wks-1')).toEqual({ items: [{ firmware_id: 'app' }], next: null });
    await api.deleteFirmware('wks-1', 'app', '1.2.0');

    expect(calls.map((c) => [c.init.method, c.url, body(c.init)])).toEqual([
      ['POST', 'http://x/v3/workspaces/wks-1/firmwares/app/versions/1.2.0', { size: 3, sha256: 'ab'.repeat(32), description: 'first' }],
      ['GET', 'http://x/v3/workspaces/wks-1/firmwares/app/versions/1.2.0', undefined],
      ['GET', 'http://x/v3/workspaces/wks-1/firmwares', undefined],
      ['DELETE', 'http://x/v3/workspaces/wks-1/firmwares/app/versions/1.2.0', undefined],
    ]);
  });
});

describe('console API client on a refused session', () => {
  it('calls onUnauthorized on a 401, and not on other errors', async () => {
    const { fetch } = recorder([
      json(401, { error: { code: 'unauthorized', message: 'Unauthorized', details: [] }, request_id: 'r' }),
      json(404, { error: { code: 'not_found', message: 'x', details: [] }, request_id: 'r' }),
    ]);
    let refused = 0;
    const api = createApiClient({ baseUrl: 'http://x/v3', headers: async () => ({}), fetch, onUnauthorized: () => refused++ });
    await expect(api.listWorkspaces()).rejects.toMatchObject({ status: 401 });
    await expect(api.listWorkspaces()).rejects.toMatchObject({ status: 404 });
    expect(refused).toBe(1);
  });
});
