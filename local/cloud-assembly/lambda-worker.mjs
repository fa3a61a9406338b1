// One Lambda "container" of the cloud-assembly runtime: a worker thread with the function's own
// environment (process.env is the template's variables, nothing of the parent's), which loads the
// bundled asset by its handler string as the Node.js runtime does, and runs invocations the host
// sends. Plain JavaScript: it is the runtime, not project code, and the bundle it loads is plain
// JavaScript too. Messages: host → {type:'invoke', id, event, context, stream, traceHeader?},
// {type:'shutdown'} (SIGTERM); worker →
// {type:'ready', streaming, error?}, {type:'result', id, result}, {type:'chunk', id, contentType,
// data}, {type:'end', id}, {type:'error', id, error}.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { localAwsLambda, ResponseStream, isStreamingHandler } = await tsImport('../lambda-streaming.ts', import.meta.url);

// The Node.js runtime's `awslambda` global (streamifyResponse, HttpResponseStream), per container.
globalThis.awslambda = { ...localAwsLambda };
if ((process.env.NODE_OPTIONS ?? '').includes('--enable-source-maps')) process.setSourceMapsEnabled(true);

const serialize = (error) => ({
  name: error?.name ?? 'Error',
  message: error?.message ?? String(error),
  stack: error?.stack,
});

/**
 * Loads `<module>.<export>` from the code folder as the Lambda Node.js runtime does: the module is
 * tried as .js, .mjs and .cjs; a missing file is Runtime.ImportModuleError, a missing export
 * Runtime.HandlerNotFound (the errors a wrong handler string gives on AWS).
 */
const load = async (codeDir, handlerString) => {
  const at = handlerString.lastIndexOf('.');
  if (at <= 0) throw Object.assign(new Error(`Bad handler ${handlerString}: expected <module>.<export>`), { name: 'Runtime.MalformedHandlerName' });
  const moduleName = handlerString.slice(0, at);
  const exportName = handlerString.slice(at + 1);
  const file = ['.js', '.mjs', '.cjs'].map((ext) => join(codeDir, moduleName + ext)).find((f) => existsSync(f));
  if (!file) throw Object.assign(new Error(`Cannot find module '${moduleName}' in ${codeDir}`), { name: 'Runtime.ImportModuleError' });
  const module = await import(pathToFileURL(file).href);
  const handler = module[exportName];
  if (typeof handler !== 'function') throw Object.assign(new Error(`${handlerString} is undefined or not exported`), { name: 'Runtime.HandlerNotFound' });
  return handler;
};

let handler;
let initError;
try {
  handler = await load(workerData.codeDir, workerData.handler);
} catch (error) {
  initError = serialize(error);
}
parentPort.postMessage({ type: 'ready', streaming: handler ? isStreamingHandler(handler) : false, error: initError });

const contextOf = ({ deadline, ...fields }) => ({
  ...fields,
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
});

parentPort.on('message', async ({ type, id, event, context, stream, traceHeader }) => {
  // Lambda ends a container whose code registered an extension with SIGTERM (signals are not
  // delivered to a worker thread: its listeners are called here).
  if (type === 'shutdown') {
    if (!process.emit('SIGTERM', 'SIGTERM')) process.exit(0);
    return;
  }
  // As the Lambda runtime does for a traced function: the invocation's trace header, read by the X-Ray SDK.
  if (traceHeader) process.env._X_AMZN_TRACE_ID = traceHeader;
  try {
    if (initError) throw Object.assign(new Error(initError.message), { name: initError.name });
    if (!stream) {
      const result = await handler(event, contextOf(context));
      parentPort.postMessage({ type: 'result', id, result });
      return;
    }
    if (!isStreamingHandler(handler))
      throw new Error('The integration streams (ResponseTransferMode STREAM) but the handler is not wrapped by awslambda.streamifyResponse.');
    const out = new ResponseStream();
    out.on('data', (data) => parentPort.postMessage({ type: 'chunk', id, contentType: out.contentType, data }));
    const ended = new Promise((resolve, reject) => out.once('end', resolve).once('error', reject));
    await handler(event, out, contextOf(context));
    if (!out.writableEnded) out.end();
    await ended;
    parentPort.postMessage({ type: 'end', id, contentType: out.contentType });
  } catch (error) {
    parentPort.postMessage({ type: 'error', id, error: serialize(error) });
  }
});
