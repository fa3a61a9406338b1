/**
 * `npm start`: the whole system on this machine, no AWS account and no Docker.
 * Prints progress to stderr, then one line `READY {json}` to stdout.
 *
 *   PORT=3000                       the API's port (0: any free port)
 *   FLEETSTREAM_DATA_DIR=.local     where data is kept between runs
 *   FLEETSTREAM_IN_MEMORY=1         keep nothing (also: npm start -- --in-memory)
 *   FLEETSTREAM_DEV_API_KEY=…       the bootstrap API key's secret
 *   AUTHORIZER_CACHE_TTL_SECONDS=30 how long a key's authorization is reused
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLocalRuntime } from '../local/runtime';

const inMemory = process.argv.includes('--in-memory') || process.env.FLEETSTREAM_IN_MEMORY === '1';
const dataDir = process.env.FLEETSTREAM_DATA_DIR ?? '.local';
const log = (line: string) => process.stderr.write(`fleetstream: ${line}\n`);

// What the CLIs (create-account --local, replay-dlq --local) need to reach this runtime.
const RUNTIME_ENV = [/^AWS_ENDPOINT_URL_/, /^AWS_REGION$/, /^AWS_ACCESS_KEY_ID$/, /^AWS_SECRET_ACCESS_KEY$/, /_TABLE$/, /_QUEUE_URL$/];

const main = async () => {
  const runtime = await startLocalRuntime({
    port: Number(process.env.PORT ?? 3000),
    dataDir: inMemory ? undefined : dataDir,
    devApiKey: process.env.FLEETSTREAM_DEV_API_KEY || undefined,
    authorizerCacheTtlSeconds: process.env.AUTHORIZER_CACHE_TTL_SECONDS ? Number(process.env.AUTHORIZER_CACHE_TTL_SECONDS) : undefined,
    log,
  });
  const runtimeFile = join(dataDir, 'runtime.json');
  mkdirSync(dataDir, { recursive: true });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => RUNTIME_ENV.some((re) => re.test(k))));
  writeFileSync(runtimeFile, JSON.stringify({ base_url: runtime.base_url, pid: process.pid, env }, null, 2) + '\n');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping…`);
    await runtime.stop();
    rmSync(runtimeFile, { force: true });
    log('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  const { stop: _stop, ...ready } = runtime;
  log(`ready: ${runtime.base_url} (X-API-KEY: ${runtime.api_key})`);
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
};

main().catch((error: Error) => {
  log(`failed to start: ${error.message}${error.cause ? ` (${(error.cause as Error).message ?? error.cause})` : ''}`);
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') log('the port is taken: choose another with PORT=…');
  process.exit(1);
});
