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
