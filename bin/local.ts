/**
 * `npm start`: the whole system on this machine, no AWS account and no Docker.
 * Prints progress to stderr, then one line `READY {json}` to stdout.
 *
 *   PORT=4000                       the API's port (default 3000)
 *   FLEETSTREAM_DATA_DIR=.local     where data is kept between runs (default .local)
 *   FLEETSTREAM_IN_MEMORY=1         keep nothing (also: npm start -- --in-memory)
 *   FLEETSTREAM_DEV_API_KEY=…       the bootstrap API key's secret
 *   AUTHORIZER_CACHE_TTL_SECONDS=30 how long a key's authorization is reused
 */
import { startLocalRuntime } from '../local/runtime';

const inMemory = process.argv.includes('--in-memory') || process.env.FLEETSTREAM_IN_MEMORY === '1';
const log = (line: string) => process.stderr.write(`fleetstream: ${line}\n`);

const main = async () => {
  const runtime = await startLocalRuntime({
    port: Number(process.env.PORT ?? 3000),
    dataDir: inMemory ? undefined : (process.env.FLEETSTREAM_DATA_DIR ?? '.local'),
    devApiKey: process.env.FLEETSTREAM_DEV_API_KEY || undefined,
    authorizerCacheTtlSeconds: process.env.AUTHORIZER_CACHE_TTL_SECONDS ? Number(process.env.AUTHORIZER_CACHE_TTL_SECONDS) : undefined,
    log,
  });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping…`);
    await runtime.stop();
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
