/**
 * `npm run bench`: every benchmark, one after the other, each in its own process so that one's
 * memory and engines do not disturb the next. `npm run bench -- cold-start` runs one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const ALL = [
  'cold-start',
  'fleet-schedule',
  'rollout',
  'ingest',
  'burst',
  'query',
  'aggregate',
  'lists',
  'search',
  'state',
  'forward',
  'requests',
  'latency',
  'mqtt',
];
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : ALL;

let failed = 0;
for (const name of wanted) {
  const file = `bench/${name}.ts`;
  if (!existsSync(file)) {
    console.error(`no benchmark ${file}`);
    failed++;
    continue;
  }
  console.log(`\n=== ${name}`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
