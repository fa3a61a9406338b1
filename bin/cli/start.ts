/**
 * `fleetstream start` (`npm start`): the whole system on this machine, no AWS account and no Docker.
 * Prints progress to stderr, then one line `READY {json}` to stdout. Its variables (PORT,
 * FLEETSTREAM_DATA_DIR, FLEETSTREAM_IN_MEMORY, FLEETSTREAM_DEV_API_KEY, FLEETSTREAM_DEV_USER_EMAIL,
 * FLEETSTREAM_DEV_USER_PASSWORD, COGNITO_PORT, AUTHORIZER_CACHE_TTL_SECONDS,
 * MQTT_PORT, MQTTS_PORT, MQTT_WS_PORT, S3_PORT, SES_PORT, WEBHOOK_TIMEOUT_MS, FORWARD_RETRY_*, <QUEUE>_QUEUE_*, SWEEP_INTERVAL_SECONDS,
 * FIRMWARE_UPLOAD_URL_TTL_SECONDS, EXPORT_RUN_SECONDS) are read by local/config.ts and listed in
 * docs/configuration.md.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, startConfig } from '../../local/config';
import { startCloudAssemblyRuntime } from '../../local/cloud-assembly/runtime';
import { CONSOLE_DIST, startLocalRuntime } from '../../local/runtime';
import { writeRuntimeFile } from '../../local/runtime-file';

const log = (line: string) => process.stderr.write(`fleetstream: ${line}\n`);

// What the CLIs (create-account --local, replay-dlq --local) need to reach this runtime (and its user pool, below).
const RUNTIME_ENV = [
  /^AWS_ENDPOINT_URL_/,
  /^AWS_REGION$/,
  /^AWS_ACCESS_KEY_ID$/,
  /^AWS_SECRET_ACCESS_KEY$/,
  /_TABLE$/,
  /_QUEUE_URL$/,
  /_BUCKET$/,
  /^WORKSPACE_LIMIT_DEFAULTS$/,
];

/** `start`'s options. */
export interface StartFlags {
  /** Keep nothing on disk (also FLEETSTREAM_IN_MEMORY=1). */
  inMemory?: boolean;
  /** Run the synthesized template: a given cdk.out (a folder), or a fresh synthesis (true). */
  cloudAssembly?: string | true;
}

const main = async (flags: StartFlags) => {
  const { options, dataDir } = startConfig(process.env, { inMemory: flags.inMemory });
  const assemblyDir = typeof flags.cloudAssembly === 'string' ? flags.cloudAssembly : undefined;
  const onMessage = (m: { code: string; to: string }) => log(`user pool: code ${m.code} for ${m.to} (also at GET /local/outbox)`);
  const cloud = flags.cloudAssembly
    ? await startCloudAssemblyRuntime({ ...options, log, onMessage, assemblyDir, reportFile: process.env.FLEETSTREAM_IAM_REPORT })
    : undefined;
  const runtime = cloud ?? (await startLocalRuntime({ ...options, log, onMessage }));
  const port = Number(new URL(runtime.base_url).port);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && RUNTIME_ENV.some((re) => re.test(k)))) as Record<
    string,
    string
  >;
  // The user pool, for create-account --email: the SDK finds cognito-local by its standard endpoint variable.
  if (runtime.cognito_endpoint && runtime.user_pool_id)
    Object.assign(env, { AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: runtime.cognito_endpoint, USER_POOL_ID: runtime.user_pool_id });
  // One file per instance (runtime-<port>.json): several instances on one folder never overwrite each other's.
  const runtimeFile = writeRuntimeFile(dataDir, {
    base_url: runtime.base_url,
    port,
    pid: process.pid,
    started_at: new Date().toISOString(),
    in_memory: !options.dataDir,
    env,
  });
  // However the process ends; a `kill -9` leaves the file, which the CLIs recognize as stale and delete.
  process.on('exit', () => rmSync(runtimeFile, { force: true }));

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping…`);
    await runtime.stop();
    if (cloud) {
      const report = cloud.report();
      log(`IAM: ${report.calls} AWS calls checked, ${report.refused.length} refused, ${report.unused.length} permissions never used`);
      for (const call of report.refused) log(`  refused: ${call.function} ${call.action} ${call.resource}`);
      for (const grant of report.unused) log(`  never used: ${grant}`);
      for (const refusal of report.invokeRefusals) log(`  not invocable: ${refusal}`);
    }
    log('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  const { stop: _stop, ...ready } = { ...runtime, report: undefined, mail: undefined };
  log(`ready: ${runtime.base_url} (X-API-KEY: ${runtime.api_key})${runtime.mqtt_url ? `; MQTT ${runtime.mqtt_url}, ${runtime.mqtts_url} (TLS)` : ''}`);
  if (runtime.console_url) {
    log(`console: ${runtime.console_url} (sign in as ${runtime.user_email} / ${runtime.user_password}; user pool at ${runtime.cognito_endpoint})`);
    // The cloud-assembly mode serves the console its template deploys (built at synth).
    if (!cloud && !existsSync(join(CONSOLE_DIST, 'index.html'))) log('the console is not built: run `npm run console:build`, then reload the page');
  }
  if (runtime.mail_url) log(`e-mails (alarm notifications): ${runtime.mail_url}`);
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
};

/**
 * Starts the runtime and prints its READY line; it runs until SIGINT or SIGTERM. A bad variable or
 * a failed start is said in one line, and exits 1.
 */
export const startRuntime = (flags: StartFlags) =>
  main(flags).catch((error: Error) => {
    if (error instanceof ConfigError) log(`bad configuration: ${error.message}`);
    else log(`failed to start: ${error.message}${error.cause ? ` (${(error.cause as Error).message ?? error.cause})` : ''}`);
    // A port the runtime binds itself is named by its variable (PortTakenError); one an engine binds is not.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      log('a port is taken: PORT, MQTT_PORT, MQTTS_PORT, MQTT_WS_PORT, COGNITO_PORT, S3_PORT and SES_PORT move them');
    process.exit(1);
  });
