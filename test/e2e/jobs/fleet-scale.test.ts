/**
 * Fleet-wide jobs and FOTA on more than a page of devices through the HTTP API, while devices move
 * between fleets and new ones are created: every device of the snapshot gets its job once, and
 * the snapshot is one instant (stores/fleet-history.ts).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateDeviceBodySchema } from '../../../lambdas/schemas/device';
import { documentClient } from '../../../lambdas/shared/clients';
import { logger } from '../../../lambdas/shared/logger';
import { PLACEMENT_PAGE } from '../../../lambdas/stores/device-store';
import { getFotaOfDevice, getJobOfDevice } from '../../../lambdas/stores/job-store';
import type { LocalRuntime } from '../../../local/runtime';
import { apiClient, retryDelayMs, type ApiClient, type ApiResponse } from '../../helpers/api-client';
import { startRuntime } from '../../helpers/runtime';

/** Enough devices for the scheduler's reads to span two pages: the pairs below have one device on the first and one on the last. */
const DEVICES = PLACEMENT_PAGE + 200;
const PAIRS = 10;

let runtime: LocalRuntime;
let api: ApiClient;
let ws: string;
let fleetX: string;
let fleetY: string;
let inX: string[];
let inY: string[];

/** Runs `task` on every item, `concurrency` at once. */
const eachLimit = async <T, R>(items: T[], concurrency: number, task: (item: T) => Promise<R>) => {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await task(items[i]);
    }),
  );
  return results;
};

/** The 429s that say "retry": past a rate, or a workspace busy scheduling (a move); not a quota. */
const RETRY_CODES = new Set(['rate_limited', 'throttled']);

/** How long a request is sent again while it is told to retry, at most. */
const RETRY_FOR_MS = 120_000;

/**
 * A request sent until it is answered other than a 429 that says to retry. Thousands of requests on
 * one API key run past its rate (requests_per_second_per_key) and the API's own, the client gives up
 * on a request refused five times, and a move meets the scheduling: the test sends it again, so that
 * it knows the answer of every request. Any other answer, a quota's 429 too, is the caller's to judge.
 */
const untilAnswered = async (request: () => Promise<ApiResponse>) => {
  const deadline = Date.now() + RETRY_FOR_MS;
  for (;;) {
    const answer = await request();
    if (answer.status !== 429 || !RETRY_CODES.has(answer.body?.error?.code)) return answer;
    if (Date.now() > deadline) throw new Error(`still answered 429 ${answer.body.error.code} after ${RETRY_FOR_MS / 1000} s`);
    // Past the rate, wait as the client does; a busy workspace is asked again at once, so that moves keep meeting the scheduling.
    if (answer.body.error.code === 'rate_limited') await new Promise((resolve) => setTimeout(resolve, retryDelayMs(answer)));
  }
};

/** The body of a request answered 200 (sent again while told to retry), or an error naming what it answered. */
const succeeded = async (what: string, request: () => Promise<ApiResponse>) => {
  const { status, body } = await untilAnswered(request);
  if (status !== 200) throw new Error(`${what} answered ${status} ${body?.error?.code ?? ''}`);
  return body;
};

const move = (deviceId: string, fleetId: string) =>
  succeeded(`moving ${deviceId}`, () => api.put(`/workspaces/${ws}/devices/${deviceId}`, { name: deviceId, fleet_id: fleetId }));
const createDevice = async (name: string, fleetId: string) =>
  (await succeeded(`creating ${name}`, () => api.post(`/workspaces/${ws}/devices`, { name, fleet_id: fleetId }))).device.id as string;

/** When the device's `what` (`jobs/swap`, `fota`) was scheduled, or undefined when it has none. */
const scheduledAt = async (deviceId: string, what: string): Promise<string | undefined> => {
  const { status, body } = await untilAnswered(() => api.get(`/devices/${deviceId}/${what}`));
  if (status === 404) return undefined;
  if (status !== 200) throw new Error(`reading ${what} of ${deviceId} answered ${status} ${body?.error?.code ?? ''}`);
  return (body.job ?? body.fota).scheduled_at as string;
};

/** The runtime's registry table, for what is seeded and read back without the API's per-key rate. */
const registry = () => ({ doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! });

/**
 * When each device's job `name` (or, without one, its FOTA) was scheduled, read from the table:
 * thousands of reads through the API's key of 100 requests a second took most of a minute each
 * time. `scheduledAt` reads a sample through the API, to tie the two.
 */
const storedScheduledAt = async (deviceIds: string[], name?: string) => {
  const db = registry();
  try {
    return await eachLimit(deviceIds, 16, async (id) => (await (name ? getJobOfDevice(db, id, name) : getFotaOfDevice(db, id)))?.scheduled_at);
  } finally {
    db.doc.destroy();
  }
};

/**
 * Creates DEVICES devices, half in each fleet, through the domain straight into the runtime's
 * registry table, as the API's handler would create them but without its per-key rate: the
 * seed is not what this file tests, and thousands of requests through a key of 100 per second took
 * minutes. The moves, jobs and the devices created during a scheduling still go through the API.
 */
const seedDevices = async (accountId: string) => {
  const { createDevice: createInStore } = await import('../../../lambdas/domain/registry/devices');
  const db = registry();
  try {
    await eachLimit(
      Array.from({ length: DEVICES }, (_, i) => i),
      16,
      (i) => createInStore(db, { accountId }, ws, CreateDeviceBodySchema.parse({ name: `d${i}`, fleet_id: i % 2 ? fleetY : fleetX })),
    );
  } finally {
    db.doc.destroy();
  }
};

// A request answered 500 here is a defect: its cause is printed (the suite's handlers log nothing by default).
logger.setLogLevel('ERROR');

beforeAll(async () => {
  runtime = await startRuntime();
  api = apiClient(runtime.base_url, runtime.api_key);
  ws = runtime.workspace_id;
  [fleetX, fleetY] = await Promise.all(['x', 'y'].map(async (name) => (await api.post(`/workspaces/${ws}/fleets`, { name })).body.fleet.id as string));
  await seedDevices(runtime.account_id);
  const listed = (await api.get(`/workspaces/${ws}/devices?fleet=${fleetX}&fleet=${fleetY}`)).body.devices as Array<{ id: string; fleet_id: string }>;
  inX = listed.filter((d) => d.fleet_id === fleetX).map((d) => d.id);
  inY = listed.filter((d) => d.fleet_id === fleetY).map((d) => d.id);
  expect(listed.length).toBeGreaterThanOrEqual(DEVICES);
  // Devices written through the domain's transactions: a CI run on a machine shared with stray runs once took 480 s for 2,400.
}, 900_000);
afterAll(async () => {
  await runtime?.stop();
});

describe('a fleet-wide job on two pages of devices while devices move', () => {
  it('reaches exactly the devices of the fleet at one snapshot, each once', async () => {
    // Pairs (a in X, b in Y) swap places over and over, one move at a time, so that at every
    // instant at most one of them is in X: a snapshot can never find both there. The scheduler
    // reads devices in key order, page by page while it writes: a is among the first it reads and
    // b among the last, so that reading each where it is when read would find both in X.
    const [firstX, lastY] = [inX.slice().sort(), inY.slice().sort().reverse()];
    const pairs = Array.from({ length: PAIRS }, (_, i) => ({ a: firstX[i], b: lastY[i] }));
    let scheduling = true;
    let moves = 0;
    const swapping = pairs.map(async ({ a, b }) => {
      while (scheduling) {
        for (const [device, fleet] of [
          [a, fleetY],
          [b, fleetX],
          [b, fleetY],
          [a, fleetX],
        ] as const) {
          await move(device, fleet);
          moves += 1;
        }
      }
    });

    const answer = await untilAnswered(() => api.post(`/workspaces/${ws}/jobs/swap?fleet=${fleetX}`, { value: { at: 'snapshot' } }));
    scheduling = false;
    await Promise.all(swapping);

    expect(answer.status).toBe(200);
    const { devices, ...job } = answer.body.job as { devices: string[]; scheduled_at: string };
    expect(job).toEqual({
      name: 'swap',
      status: 'pending',
      scheduled_at: expect.any(String),
      value: { at: 'snapshot' },
      rollout_id: expect.stringMatching(/^rol-/),
    });
    expect(new Set(devices).size).toBe(devices.length);
    const moving = new Set(pairs.flatMap(({ a, b }) => [a, b]));
    // Every device that stayed in X has it, none that stayed in Y.
    expect(devices.filter((id) => !moving.has(id)).sort()).toEqual(inX.filter((id) => !moving.has(id)).sort());
    for (const { a, b } of pairs) expect([a, b].filter((id) => devices.includes(id)).length).toBeLessThanOrEqual(1);
    expect(moves).toBeGreaterThan(0);

    // What the answer names is stored, once per device, and nothing else is; the API says the same.
    const stored = await storedScheduledAt([...inX, ...inY], 'swap');
    const holders = [...inX, ...inY].filter((_, i) => stored[i] === job.scheduled_at);
    expect(holders.sort()).toEqual(devices.slice().sort());
    const sample = [...devices.slice(0, 5), ...inY.filter((id) => !devices.includes(id)).slice(0, 5)];
    expect(await eachLimit(sample, 5, (id) => scheduledAt(id, 'jobs/swap'))).toEqual(await storedScheduledAt(sample, 'swap'));
  }, 300_000);
});

describe('a FOTA on every fleet of two pages of devices while devices are created', () => {
  it('reaches every device that existed before it, each once, and no device created after it answered', async () => {
    let scheduling = true;
    const created: string[] = [];
    const creating = (async () => {
      while (scheduling) created.push(await createDevice('late', fleetX));
    })();

    const answer = await untilAnswered(() => api.post(`/workspaces/${ws}/fota/fw-main/versions/2.0.0`));
    scheduling = false;
    await creating;
    const after = await createDevice('after', fleetX);

    expect(answer.status).toBe(200);
    const { devices, ...fota } = answer.body.fota as { devices: string[]; scheduled_at: string };
    expect(fota).toEqual({
      scheduled_at: expect.any(String),
      status: 'pending',
      value: { firmware_id: 'fw-main', firmware_version: '2.0.0' },
      rollout_id: expect.stringMatching(/^rol-/),
    });
    expect(new Set(devices).size).toBe(devices.length);
    const before = [...inX, ...inY];
    const known = new Set(devices);
    expect(before.filter((id) => !known.has(id))).toEqual([]);
    expect(devices.every((id) => before.includes(id) || created.includes(id))).toBe(true);
    expect(known.has(after)).toBe(false);
    const stored = await storedScheduledAt([...before, ...created, after]);
    expect([...before, ...created, after].filter((_, i) => stored[i] === fota.scheduled_at).sort()).toEqual(devices.slice().sort());
    const sample = [...devices.slice(0, 5), after];
    expect(await eachLimit(sample, 5, (id) => scheduledAt(id, 'fota'))).toEqual(await storedScheduledAt(sample));
  }, 300_000);

  it('answers 404 for a fleet of another workspace before writing anything, in the error envelope', async () => {
    const other = (await api.post('/workspaces', { name: 'other' })).body.workspace.id as string;
    const foreign = (await api.get(`/workspaces/${other}/fleets`)).body.fleets[0].id as string;

    const answer = await api.post(`/workspaces/${ws}/jobs/never?fleet=${fleetX}&fleet=${foreign}`, { value: {} });

    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('not_found');
    expect((await api.get(`/devices/${inX[0]}/jobs/never`)).status).toBe(404);
    // the stream still works through the FOTA above on a loaded machine: the API answers, later
  }, 180_000);
});
