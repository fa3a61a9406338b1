/**
 * Scheduling a job on fleets holding 5,000 devices over the local runtime's HTTP API, side by side
 * with writing the same 5,000 job items with plain BatchWriteItem in the same run. Target ratio ≤ 2.
 *
 *   npm run bench:schedule
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { newId, nowIso } from '../lambdas/shared/ids';
import { documentClient, type Db } from '../lambdas/shared/clients';
import { WRITE_CONCURRENCY } from '../lambdas/shared/env';
import { putAll } from '../lambdas/stores/items';
import { deviceKey, deviceLocatorKey, jobKey } from '../lambdas/stores/keys';
import { startLocalRuntime } from '../local/runtime';
import { median, printTable, timeMs } from './stats';

const DEVICES = Number(process.env.DEVICES ?? 5000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

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
    await putAll(db, devices.map((d) => ({ ...deviceKey(ws, d.id), ...d })), WRITE_CONCURRENCY);
    await putAll(db, devices.map((d) => ({ ...deviceLocatorKey(d.id), account_id: d.account_id, workspace_id: ws })), WRITE_CONCURRENCY);

    const api: number[] = [];
    const plain: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const name = `bench-${round}`;
      api.push(
        await timeMs(async () => {
          const response = await fetch(`${runtime.base_url}/workspaces/${ws}/jobs/${name}?fleet=${fleets[0]}&fleet=${fleets[1]}`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ value: { round } }),
          });
          const body = (await response.json()) as { job: { devices: string[] } };
          if (body.job.devices.length !== DEVICES) throw new Error(`scheduled on ${body.job.devices.length} devices, expected ${DEVICES}`);
        }),
      );
      const job = { name: `plain-${round}`, status: 'pending', scheduled_at: nowIso(), value: { round } };
      plain.push(await timeMs(() => putAll(db, devices.map((d) => ({ ...jobKey(d.id, job.name), ...job, device_id: d.id })), WRITE_CONCURRENCY)));
      process.stderr.write('.');
    }
    process.stderr.write('\n');
    const [apiMs, plainMs] = [median(api), median(plain)];
    printTable(`job on fleets of ${DEVICES} devices (median of ${ROUNDS} rounds)`, [
      { what: 'POST /workspaces/{id}/jobs/{name}?fleet=…&fleet=…', 'ms': apiMs, 'devices/s': (DEVICES / apiMs) * 1000 },
      { what: `plain BatchWriteItem of ${DEVICES} job items`, 'ms': plainMs, 'devices/s': (DEVICES / plainMs) * 1000 },
    ]);
    console.log(`\nratio API / plain = ${(apiMs / plainMs).toFixed(2)} (target ≤ 2)`);
  } finally {
    await runtime.stop();
  }
};

await main();
