import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RouteHandler } from '../lambdas/routes';
import { startApiGateway } from './api-gateway';
import { ensureRegistryTable, LOCAL_AWS_ENV, startDynamoDbLocal } from './dynamodb-local';
import { freePort } from './ports';

export interface LocalRuntimeOptions {
  /** HTTP port of the API; a free one when 0 or absent. */
  port?: number;
  /** Folder that keeps the data between runs; in memory when undefined. */
  dataDir?: string;
  /** The bootstrap API key's secret (FLEETSTREAM_DEV_API_KEY); a random one when absent. */
  devApiKey?: string;
  /** Seconds the authorizer's answer is reused, as API Gateway's cache. */
  authorizerCacheTtlSeconds?: number;
  /** Progress lines ("starting DynamoDB Local…"). */
  log?: (line: string) => void;
}

export interface Bootstrap {
  account_id: string;
  workspace_id: string;
  api_key: string;
}

export interface LocalRuntime extends Bootstrap {
  base_url: string;
  storage_url: string;
  stop: () => Promise<void>;
}

const REGISTRY_TABLE = 'fleetstream-registry';

/**
 * The first account, its workspace and API key. With a data folder it is remembered in
 * `bootstrap.json` there (the key's secret is kept only as a hash in the table), so that a
 * restart prints the same key.
 */
const bootstrap = async (dataDir: string | undefined, devApiKey: string | undefined): Promise<Bootstrap> => {
  const { createAccount } = await import('../lambdas/domain/accounts');
  const { authenticateApiKey } = await import('../lambdas/domain/api-keys');
  const { registryDb } = await import('../lambdas/shared/clients');
  const file = dataDir && join(dataDir, 'bootstrap.json');
  const remembered = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Bootstrap) : undefined;
  const wanted = devApiKey ?? remembered?.api_key;
  if (wanted) {
    const caller = await authenticateApiKey(registryDb(), wanted).catch(() => undefined);
    if (caller) return { account_id: caller.accountId, workspace_id: caller.workspaceId, api_key: wanted };
  }
  const account = await createAccount(registryDb(), { name: 'local', apiKey: devApiKey });
  const result = { account_id: account.account_id, workspace_id: account.workspace_id, api_key: account.api_key };
  if (file) writeFileSync(file, JSON.stringify(result, null, 2) + '\n', { mode: 0o600 });
  return result;
};

/**
 * Brings the whole system up on this machine: DynamoDB Local, the registry table, the API
 * Gateway emulator over the same handlers and route table, and a first account.
 */
export const startLocalRuntime = async (options: LocalRuntimeOptions = {}): Promise<LocalRuntime> => {
  const log = options.log ?? (() => undefined);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch(() => undefined);
  };
  try {
    if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
    log(`starting DynamoDB Local (${options.dataDir ? `data in ${options.dataDir}` : 'in memory'})…`);
    const dynamo = await startDynamoDbLocal({ dataDir: options.dataDir && join(options.dataDir, 'dynamodb') });
    stops.push(dynamo.stop);

    const port = options.port || (await freePort());
    // The handlers find the engines exactly as in the cloud: standard SDK variables.
    Object.assign(process.env, LOCAL_AWS_ENV, { AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint, REGISTRY_TABLE });
    // Read once by the handlers (lambdas/shared/env.ts), so set before the first one loads.
    process.env.DEVICE_ENDPOINT_URL = `http://127.0.0.1:${port}/v3/device`;
    const client = new DynamoDBClient({});
    await ensureRegistryTable(client, REGISTRY_TABLE);
    client.destroy();

    log('creating the bootstrap account…');
    const account = await bootstrap(options.dataDir, options.devApiKey);

    const handlers = new Map<RouteHandler, Promise<{ handler: never }>>();
    const loadHandler = (name: RouteHandler) => {
      if (!handlers.has(name)) handlers.set(name, import(`../lambdas/${name}/handler.ts`));
      return handlers.get(name)!.then((m) => m.handler);
    };
    const { handler: authorizer } = await import('../lambdas/authorizer/handler');
    log(`starting the API on port ${port}…`);
    const server: Server = await startApiGateway({
      port,
      loadHandler,
      authorizer,
      authorizerCacheTtlMs: (options.authorizerCacheTtlSeconds ?? 30) * 1000,
    });
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    server.closeIdleConnections?.();

    const base = `http://127.0.0.1:${port}/v3`;
    return { ...account, base_url: base, storage_url: base, stop };
  } catch (error) {
    await stop();
    throw error;
  }
};
