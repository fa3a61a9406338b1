import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { withInvocation } from './request-counter';

export interface InvocationOptions {
  functionName: string;
  /** Defaults to an ARN in the local account and region. */
  functionArn?: string;
  requestId?: string;
  /** The function's timeout: what `getRemainingTimeInMillis` counts down from. */
  timeoutMs?: number;
}

/** A Lambda context for a local invocation: the function's name and ARN, and the time it has left. */
export const lambdaContext = ({ functionName, functionArn, requestId = randomUUID(), timeoutMs = 30_000 }: InvocationOptions): Context => {
  const started = Date.now();
  return {
    awsRequestId: requestId,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn ?? `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
};

/**
 * Invokes a handler as Lambda does for an event source mapping: an invocation still running at the
 * function's timeout has failed (its late answer is ignored).
 * @throws the handler's error, or a timeout error
 */
export const invokeWithTimeout = async <E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  event: E,
  options: InvocationOptions & { timeoutMs: number },
): Promise<R> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
  });
  try {
    return await Promise.race([withInvocation(options.functionName, () => handler(event, lambdaContext(options))), timeout]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * Invokes a handler and waits for it to end, however long it runs: in-process code cannot be
 * stopped at its timeout as Lambda stops a container, so a scheduled run that must never overlap
 * the next one is waited for. One that ended past its timeout has failed, as on Lambda (its result
 * is discarded).
 * @throws the handler's error, or a timeout error when it ran past `timeoutMs`
 */
export const invokeToEnd = async <E, R>(
  handler: (event: E, context: Context) => Promise<R>,
  event: E,
  options: InvocationOptions & { timeoutMs: number },
): Promise<R> => {
  const started = Date.now();
  const result = await withInvocation(options.functionName, () => handler(event, lambdaContext(options)));
  if (Date.now() - started > options.timeoutMs) throw new Error(`Task timed out after ${(options.timeoutMs / 1000).toFixed(2)} seconds`);
  return result;
};
