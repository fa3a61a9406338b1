import { buildConsole } from './browser';
import { type LocalStack, startLocalStack } from './local-stack';

/**
 * The browser project's global setup: the console is built once from the sources, and one
 * `npm start` serves every browser test file (each signs up an account of its own), so that the
 * project starts one runtime and one DynamoDB Local instead of one per file. The settings are
 * those every file can live with: the authorizer's cache and the rollout sweep at 1 s.
 */
export default async () => {
  buildConsole();
  const stack = await startLocalStack({ AUTHORIZER_CACHE_TTL_SECONDS: '1', SWEEP_INTERVAL_SECONDS: '1' }, undefined, { readyTimeoutMs: 120_000 });
  (globalThis as { __browserStack?: LocalStack }).__browserStack = stack;
  // Workers inherit the environment: test/helpers/browser.ts's `sharedStack` reads it.
  const { process: _child, stop: _stop, ...ready } = stack;
  process.env.FLEETSTREAM_BROWSER_STACK = JSON.stringify(ready);
};
