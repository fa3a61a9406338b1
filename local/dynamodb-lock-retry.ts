import { setTimeout as pause } from 'node:timers/promises';
import { addToEveryClient } from './sdk-steps';

/**
 * DynamoDB Local serializes the writes to an item with a lock, and a request that waits for one
 * too long fails with a 500 `InternalServerError` whose message says "This request will succeed in
 * actual DynamoDB API". DynamoDB has no such answer: it runs the request, or refuses a transaction
 * that meets another with `TransactionConflict`, which the code handles. The SDK retries a 500 only
 * while its retry quota lasts, which a busy test drains, so the local runtime sends these requests
 * again itself (docs/local-runtime.md, _What `npm start` runs_).
 */

/** Sent again this many times at most, after a pause of up to 100 ms, 200 ms, … (jittered). */
export const ATTEMPTS = 6;

const isLockTimeout = (error: unknown) =>
  (error as { name?: string })?.name === 'InternalServerError' && /waiting for a lock/.test((error as Error).message ?? '');

type Next = (args: unknown) => Promise<unknown>;

export const lockRetry = (next: Next, context: { clientName?: string }) => async (args: unknown) => {
  if (context.clientName !== 'DynamoDBClient') return next(args);
  for (let attempt = 1; ; attempt++) {
    try {
      return await next(args);
    } catch (error) {
      if (attempt >= ATTEMPTS || !isLockTimeout(error)) throw error;
      await pause(Math.random() * 100 * attempt);
    }
  }
};

/**
 * Gives every DynamoDB client of this process, whoever creates it, the step that sends a request
 * again when DynamoDB Local timed out waiting for a lock (idempotent). The step wraps the SDK's own
 * retries.
 */
export const retryDynamoDbLocalLockTimeouts = () => addToEveryClient(lockRetry, { step: 'initialize', priority: 'high', name: 'fleetstreamDynamoDbLockRetry' });
