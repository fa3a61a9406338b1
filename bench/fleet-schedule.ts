/**
 * A job and a FOTA on fleets holding 100,000 devices over the local runtime's HTTP API (streamed
 * answer, read to the end and checked), each side by side with writing the same 100,000 items with
 * plain BatchWriteItem in the same run. Target ratio ≤ 1.5. Each round's FOTA replaces the last
 * round's on every device (as scheduling a FOTA again does); the plain FOTA items are written beside
 * them once the last round's rollout has counted its FOTA canceled.
 *
 *   npm run bench:schedule                       # DEVICES=100000 ROUNDS=3
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { newId, nowIso } from '../lambdas/shared/ids';
import { documentClient, type Db } from '../lambdas/shared/clients';
import { WRITE_CONCURRENCY } from '../lambdas/shared/env';
import { putAll } from '../lambdas/stores/items';
import { deviceKey, deviceLocatorKey, fotaKey, jobKey } from '../lambdas/stores/keys';
import { startLocalRuntime } from '../local/runtime';
import { median, printTable, timeMs } from './stats';

const DEVICES = Number(process.env.DEVICES ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const main = async () => {
  console.log('starting the local runtime (in memory)…');
  const runtime = await startLocalRuntime({ log: (line) => console.log(`  ${line}`) });
  try {
    const db: Db = { doc: documentClient(new DynamoDBClient({})), table: process.env.REGISTRY_TABLE! };
    const headers = { 'content-type': 'application/json', 'x-api-key': runtime.api_key };
    const ws = runtime.workspace_id;
    const fleets = await Promise.all(
      ['north', 'south'].map(async (name) => {
        const response = await fetch(`${runtime.base_url}/workspaces/${ws}/fleets`, { method: 'POST', headers, body: JSON.stringify({ name }) });
        return ((await response.json()) as { fleet: { id: string } }).fleet.id;
      }),
    );

    console.log(`seeding ${DEVICES} devices in 2 fleets…`);
    const devices = Array.from({ length: DEVICES }, (_, i) => ({
      id: newId('dev'),
      name: `bench-${i}`,
      account_id: runtime.account_id,
      workspace_id: ws,
      fleet_id: fleets[i % 2],
      phys_id: '',
      created_at: nowIso(),
    }));
    await putAll(
      db,
      devices.map((d) => ({ ...deviceKey(ws, d.id), ...d })),
      WRITE_CONCURRENCY,
    );
    await putAll(
      db,
      devices.map((d) => ({ ...deviceLocatorKey(d.id), account_id: d.account_id, workspace_id: ws })),
      WRITE_CONCURRENCY,
    );

    /** POSTs and reads the streamed answer to the end; checks it names every device once. */
    const schedule = async (path: string, body: unknown, key: 'job' | 'fota') => {
      const response = await fetch(`${runtime.base_url}${path}?fleet=${fleets[0]}&fleet=${fleets[1]}`, {
        method: 'POST',
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const answer = (await response.json()) as Record<string, { devices: string[]; rollout_id: string }>;
      const named = new Set(answer[key].devices);
      if (answer[key].devices.length !== DEVICES || named.size !== DEVICES)
        throw new Error(`${key} on ${named.size} devices (${answer[key].devices.length} named), expected ${DEVICES}`);
      return answer[key].rollout_id;
    };
    /** Waits (untimed) until a rollout whose FOTA the next round replaced counts every device canceled: the stream's consumer is done with it. */
    const replaced = async (rolloutId: string) => {
      for (const started = Date.now(); Date.now() - started < 600_000; await new Promise((resolve) => setTimeout(resolve, 200))) {
        const response = await fetch(`${runtime.base_url}/workspaces/${ws}/rollouts/${rolloutId}`, { headers });
        if (((await response.json()) as { rollout: { counts: { canceled: number } } }).rollout.counts.canceled === DEVICES) return;
      }
      throw new Error(`rollout ${rolloutId}: its replaced FOTA were never all counted`);
    };
    const place = (d: (typeof devices)[number]) => ({ device_id: d.id, workspace_id: ws, fleet_id: d.fleet_id });
    const eventTs = () => `${new Date().toISOString().slice(0, -1)}000Z`;

    const times = { job: [] as number[], plainJob: [] as number[], fota: [] as number[], plainFota: [] as number[] };
    let lastFota: string | undefined;
    for (let round = 0; round < ROUNDS; round++) {
      times.job.push(await timeMs(() => schedule(`/workspaces/${ws}/jobs/bench-${round}`, { value: { round } }, 'job')));
      const job = { name: `plain-${round}`, status: 'pending', scheduled_at: nowIso(), value: JSON.stringify({ round }), event_ts: eventTs() };
      times.plainJob.push(
        await timeMs(() =>
          putAll(
            db,
            devices.map((d) => ({ ...jobKey(d.id, job.name), ...job, ...place(d) })),
            WRITE_CONCURRENCY,
          ),
        ),
      );
      let rollout = '';
      times.fota.push(await timeMs(async () => (rollout = await schedule(`/workspaces/${ws}/fota/fw-bench/versions/${round}.0.0`, undefined, 'fota'))));
      if (lastFota) await replaced(lastFota);
      lastFota = rollout;
      const fota = { scheduled_at: nowIso(), status: 'pending', value: { firmware_id: 'fw-plain', firmware_version: `${round}.0.0` }, event_ts: eventTs() };
      // Beside the devices' FOTA items, not over them, and once the consumer has counted the FOTA the
      // API's replaced (each canceled in its rollout, its record kept): otherwise that work, the
      // stream's consumer's after the API's answer, would be timed as the plain write's.
      times.plainFota.push(
        await timeMs(() =>
          putAll(
            db,
            devices.map((d) => ({ ...fotaKey(`${d.id}-plain`), ...fota, ...place(d) })),
            WRITE_CONCURRENCY,
          ),
        ),
      );
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) as Record<keyof typeof times, number>;
    const row = (what: string, ms: number) => ({ what, ms, 'devices/s': (DEVICES / ms) * 1000 });
    printTable(`fleet-wide scheduling on ${DEVICES} devices in 2 fleets (median of ${ROUNDS} rounds)`, [
      row('POST /workspaces/{id}/jobs/{name}?fleet=…&fleet=… (streamed answer read to the end)', m.job),
      row(`plain BatchWriteItem of ${DEVICES} job items`, m.plainJob),
      row('POST /workspaces/{id}/fota/{fw}/versions/{v}?fleet=…&fleet=…', m.fota),
      row(`plain BatchWriteItem of ${DEVICES} FOTA items`, m.plainFota),
    ]);
    console.log(`\njob: ratio API / plain = ${(m.job / m.plainJob).toFixed(2)} (target ≤ 1.5)`);
    console.log(`fota: ratio API / plain = ${(m.fota / m.plainFota).toFixed(2)} (target ≤ 1.5)`);
    console.log(`rounds (ms): ${JSON.stringify(times)}`);
  } finally {
    await runtime.stop();
  }
};

await main();
