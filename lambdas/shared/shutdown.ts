/**
 * What a container hands on before it ends: counts it kept to write in batches (usage), points it
 * claimed and did not use. Lambda gives a container notice of its end, SIGTERM and then 500 ms
 * before SIGKILL, only when an extension is registered
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html#runtimes-lifecycle-shutdown),
 * so a module that keeps such work registers an internal extension that subscribes to no event:
 * it costs nothing per invocation and makes Lambda send the signal.
 * @module
 */
import { request } from 'node:http';
import { LAMBDA_RUNTIME_API } from './env';
import { logger } from './logger';

/** Work to do when the container ends. */
type ShutdownHook = () => Promise<void>;

const hooks = new Set<ShutdownHook>();

/** The hooks' share of the runtime's 500 ms, leaving room for the exit itself. */
const SHUTDOWN_BUDGET_MS = 400;

/** How long init waits for Lambda to answer the registration (a stalled answer would hold init until its timeout). */
const REGISTER_TIMEOUT_MS = 2000;

/** The name the extension registers under (an internal one: any name not taken by another). */
export const SHUTDOWN_EXTENSION_NAME = 'fleetstream-shutdown';

/**
 * Runs every hook at once and waits for them, at most `budgetMs`: the container's end. A hook that
 * fails or is cut short is logged; what it held is lost, as it would have been without notice.
 */
export const shutDown = async (budgetMs = SHUTDOWN_BUDGET_MS): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  const outOfTime = new Promise<'out of time'>((resolve) => {
    timer = setTimeout(() => resolve('out of time'), budgetMs);
  });
  const all = Promise.allSettled([...hooks].map((hook) => hook()));
  const outcome = await Promise.race([all, outOfTime]);
  clearTimeout(timer);
  if (outcome === 'out of time') {
    logger.error('the container ended before its shutdown work was done', { budgetMs });
    return;
  }
  for (const result of outcome) if (result.status === 'rejected') logger.error('shutdown work failed', { error: result.reason as Error });
};

/**
 * A call to the Lambda Extensions API of this container (`AWS_LAMBDA_RUNTIME_API`); resolves with
 * the answer's headers once they arrive, or fails after `timeoutMs` (none: the call for the next
 * event stays open for the container's life).
 */
const extensionsApi = (
  api: string,
  method: 'GET' | 'POST',
  path: string,
  headers: Record<string, string>,
  { body, timeoutMs }: { body?: string; timeoutMs?: number } = {},
) =>
  new Promise<{ status: number; identifier?: string }>((resolve, reject) => {
    const [host, port] = api.split(':');
    const call = request(
      { host, port: Number(port || 80), method, path: `/2020-01-01/extension/${path}`, headers, agent: false, timeout: timeoutMs },
      (answer) => {
        answer.resume();
        resolve({ status: answer.statusCode ?? 0, identifier: answer.headers['lambda-extension-identifier'] as string | undefined });
      },
    );
    call.on('timeout', () => call.destroy(new Error(`no answer from the Extensions API in ${timeoutMs} ms`)));
    call.on('error', reject);
    call.end(body);
  });

let registered: Promise<boolean> | undefined;

/**
 * Registers the container's extension with Lambda and listens for SIGTERM, once: a module calls
 * it at its top level (`await`), so that the registration happens during the container's init, as
 * Lambda requires. Outside Lambda (no `AWS_LAMBDA_RUNTIME_API`: the in-process local runtime, the
 * tests) it does nothing and {@link shutDown} is the runtime's to call.
 * @returns whether the container will be told of its end.
 */
export const registerShutdownExtension = (): Promise<boolean> =>
  (registered ??= (async () => {
    const api = LAMBDA_RUNTIME_API;
    if (!api) return false;
    try {
      const { status, identifier } = await extensionsApi(
        api,
        'POST',
        'register',
        { 'Lambda-Extension-Name': SHUTDOWN_EXTENSION_NAME, 'Content-Type': 'application/json' },
        { body: JSON.stringify({ events: [] }), timeoutMs: REGISTER_TIMEOUT_MS },
      );
      if (status !== 200 || !identifier) throw new Error(`the Extensions API answered ${status} to the registration`);
      // Init ends once every extension has asked for its next event. This one subscribes to none, so
      // the call is never answered; it only says the extension is ready.
      extensionsApi(api, 'GET', 'event/next', { 'Lambda-Extension-Identifier': identifier }).catch(() => undefined);
    } catch (error) {
      logger.warn('could not register the shutdown extension: counts kept at the container’s end may be lost', { error: error as Error });
      return false;
    }
    process.once('SIGTERM', () => void shutDown().finally(() => process.exit(0)));
    return true;
  })());

/**
 * Runs `hook` when the container ends (at most {@link SHUTDOWN_BUDGET_MS}), on Lambda once
 * {@link registerShutdownExtension} has registered, and in the local runtime when it stops.
 */
export const onShutdown = (hook: ShutdownHook) => {
  hooks.add(hook);
};
