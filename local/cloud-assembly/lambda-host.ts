import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { ResponseStream } from '../lambda-streaming';
import { newTraceHeader } from './xray-daemon';

/** What a Lambda function of a template runs with. */
export interface LambdaSpec {
  /** The function's logical ID; also its name here. */
  name: string;
  /** The folder of its bundled code (`cdk.out/asset.<hash>`). */
  codeDir: string;
  /** `<module>.<export>`, as in the template. */
  handler: string;
  memoryMb: number;
  timeoutSeconds: number;
  /** Its whole environment: the template's variables, resolved, and the runtime's own. */
  env: Record<string, string>;
  /** X-Ray active tracing (TracingConfig Active): each invocation gets its trace header, as Lambda gives it. */
  tracing?: boolean;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  stream?: ResponseStream;
  timer: NodeJS.Timeout;
}

/** A failed invocation, named as Lambda names it (`Runtime.ImportModuleError`, `Sandbox.Timedout`, the handler's error). */
export class InvocationError extends Error {
  constructor(name: string, message: string, stack?: string) {
    super(message);
    this.name = name;
    if (stack) this.stack = stack;
  }
}

const WORKER_FILE = new URL('./lambda-worker.mjs', import.meta.url);

/** Waits for `work`, at most `ms`. */
const within = async (work: Promise<unknown>, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
};

/**
 * What Lambda leaves the runtime between SIGTERM and SIGKILL when an internal extension is
 * registered (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html#runtimes-lifecycle-shutdown).
 */
const RUNTIME_SHUTDOWN_MS = 500;

/** How long a stop waits for the invocations in flight: Lambda ends a container only between them. */
const STOP_DRAIN_MS = 2000;

/**
 * One Lambda function run from its bundle, as a container: a worker thread with the function's
 * own environment (module-scope reads of `process.env` see only its variables), its memory as the
 * worker's heap limit, and its timeout enforced by ending the container, as Lambda does. A
 * container that times out or crashes is replaced by a fresh one (a cold start) on the next call.
 * Invocations may overlap in one container (Lambda would run more containers).
 */
export class LocalLambda {
  readonly spec: LambdaSpec;
  /** Whether the loaded handler is wrapped by `awslambda.streamifyResponse`. */
  streaming = false;
  /** Why the handler failed to load (Runtime.ImportModuleError, Runtime.HandlerNotFound, …), if it did. */
  initError?: { name: string; message: string };
  private worker?: Worker;
  private ready?: Promise<void>;
  private readonly pending = new Map<string, Pending>();
  /** The invocations running, which a stop lets finish (briefly) before it ends the container. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopped = false;
  /** This function's Extensions API (`AWS_LAMBDA_RUNTIME_API` of its containers). */
  private extensionsApi?: Promise<{ server: Server; address: string }>;
  /** The container whose code registered an extension, by the identifier it was given, and the calls for its next event, held open. */
  private extension?: { worker: Worker; identifier: string; waiting: ServerResponse[] };

  constructor(spec: LambdaSpec) {
    this.spec = spec;
  }

  /** Starts the container and loads the handler; an init error is kept and answers every invocation. */
  start(): Promise<void> {
    this.ready ??= this.launch();
    return this.ready;
  }

  private async launch(): Promise<void> {
    const { address } = await (this.extensionsApi ??= this.listenForExtensions());
    // Stopped meanwhile: no container is started that the stop would not end.
    if (this.stopped) throw new InvocationError('Runtime.Stopped', `${this.spec.name} is stopped`);
    const worker = new Worker(WORKER_FILE, {
      // Node's own flags only, as Lambda runs a bundle: not the parent's (`npm start` runs under tsx,
      // whose loader would otherwise be set up again in every container, a third of a second each).
      execArgv: [],
      env: { ...this.spec.env, AWS_LAMBDA_RUNTIME_API: address },
      workerData: { codeDir: this.spec.codeDir, handler: this.spec.handler },
      resourceLimits: { maxOldGenerationSizeMb: this.spec.memoryMb },
      stdout: false,
      stderr: false,
    });
    this.worker = worker;
    const ready = new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new InvocationError('Runtime.ExitError', `the container exited (${code}) during its init`)));
      worker.on('message', (message) => {
        if (message.type === 'ready') {
          this.streaming = message.streaming;
          this.initError = message.error ? { name: message.error.name, message: message.error.message } : undefined;
          if (message.error) console.error(`lambda ${this.spec.name}: init failed: ${message.error.name}: ${message.error.message}`);
          resolve();
          return;
        }
        this.onMessage(message);
      });
    });
    worker.on('error', (error) => this.retire(worker, new InvocationError('Runtime.ExitError', `the container crashed: ${error.message}`)));
    worker.on('exit', (code) => this.retire(worker, new InvocationError('Runtime.ExitError', `the container exited (${code})`)));
    return ready;
  }

  /**
   * The part of Lambda's Extensions API a container's own code uses: `register` (an internal
   * extension; the answer carries its identifier) and `event/next`, which is held open as Lambda
   * holds it until an event the extension subscribed to. Subscribing to SHUTDOWN is refused, as
   * Lambda refuses it to internal extensions.
   */
  private listenForExtensions(): Promise<{ server: Server; address: string }> {
    const answer = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(body));
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/2020-01-01/extension/register') {
          const name = req.headers['lambda-extension-name'];
          let events: unknown;
          try {
            events = (JSON.parse(Buffer.concat(chunks).toString() || '{}') as { events?: unknown }).events;
          } catch {
            events = undefined;
          }
          if (!name || !Array.isArray(events) || events.some((e) => e !== 'INVOKE') || !this.worker) {
            answer(res, 400, {
              errorMessage: 'An internal extension registers with a Lambda-Extension-Name and events among ["INVOKE"].',
              errorType: 'InvalidRequestFormat',
            });
            return;
          }
          const identifier = randomUUID();
          this.extension = { worker: this.worker, identifier, waiting: [] };
          answer(
            res,
            200,
            { functionName: this.spec.name, functionVersion: '$LATEST', handler: this.spec.handler },
            { 'Lambda-Extension-Identifier': identifier },
          );
          return;
        }
        if (req.method === 'GET' && req.url === '/2020-01-01/extension/event/next') {
          if (!this.extension || req.headers['lambda-extension-identifier'] !== this.extension.identifier) {
            answer(res, 403, { errorMessage: 'Unknown extension identifier.', errorType: 'Extension.UnknownExtensionIdentifier' });
            return;
          }
          this.extension.waiting.push(res);
          return;
        }
        answer(res, 404, { errorMessage: `No ${req.method} ${req.url} in the Extensions API.`, errorType: 'InvalidRequest' });
      });
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve({ server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` }));
    });
  }

  /**
   * Ends a container as Lambda does: with a registered extension, SIGTERM to the runtime and
   * {@link RUNTIME_SHUTDOWN_MS} to exit before it is killed; without one, at once.
   */
  private async end(worker: Worker): Promise<void> {
    const extension = this.extension?.worker === worker ? this.extension : undefined;
    if (extension) {
      this.extension = undefined;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage({ type: 'shutdown' });
      await within(exited, RUNTIME_SHUTDOWN_MS);
      for (const res of extension.waiting) res.destroy();
    }
    await worker.terminate();
  }

  private onMessage(message: {
    type: string;
    id: string;
    result?: unknown;
    error?: { name: string; message: string; stack?: string };
    contentType?: string;
    data?: Uint8Array;
  }) {
    const call = this.pending.get(message.id);
    if (!call) return;
    if (message.type === 'chunk') {
      call.stream!.setContentType(message.contentType!);
      call.stream!.write(Buffer.from(message.data!));
      return;
    }
    this.pending.delete(message.id);
    clearTimeout(call.timer);
    if (message.type === 'error') call.reject(new InvocationError(message.error!.name, message.error!.message, message.error!.stack));
    else {
      if (call.stream) call.stream.setContentType(message.contentType ?? call.stream.contentType);
      call.resolve(message.result);
    }
  }

  /** Fails what ran in a container that ended, and lets the next invocation start a new one. */
  private retire(worker: Worker, error: Error) {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.ready = undefined;
    if (this.extension?.worker === worker && error.name !== 'Runtime.Stopped') {
      // A container that crashed or timed out is gone without its shutdown.
      for (const res of this.extension.waiting) res.destroy();
      this.extension = undefined;
    }
    for (const [id, call] of this.pending) {
      clearTimeout(call.timer);
      call.reject(error);
      this.pending.delete(id);
    }
  }

  private async send(event: unknown, requestId: string, stream?: ResponseStream): Promise<unknown> {
    if (this.stopped) throw new InvocationError('Runtime.Stopped', `${this.spec.name} is stopped`);
    await this.start();
    const worker = this.worker;
    if (!worker) throw new InvocationError('Runtime.ExitError', `the container of ${this.spec.name} ended before the invocation`);
    const id = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    const context: Partial<Context> & { deadline: number } = {
      awsRequestId: requestId,
      functionName: this.spec.name,
      functionVersion: '$LATEST',
      invokedFunctionArn: `arn:aws:lambda:${this.spec.env.AWS_REGION}:000000000000:function:${this.spec.name}`,
      memoryLimitInMB: String(this.spec.memoryMb),
      logGroupName: `/aws/lambda/${this.spec.name}`,
      logStreamName: 'local',
      deadline: Date.now() + timeoutMs,
    };
    const call = new Promise((resolve, reject) => {
      // As Lambda: past its timeout the invocation fails and the container is ended.
      const timer = setTimeout(() => {
        this.retire(worker, new InvocationError('Sandbox.Timedout', `Task timed out after ${this.spec.timeoutSeconds.toFixed(2)} seconds`));
        void worker.terminate();
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, stream, timer });
      worker.postMessage({ id, event, context, stream: Boolean(stream), ...(this.spec.tracing ? { traceHeader: newTraceHeader() } : {}) });
    });
    this.inFlight.add(call);
    void call.catch(() => undefined).finally(() => this.inFlight.delete(call));
    return call;
  }

  /** A buffered (RequestResponse) invocation: resolves with what the handler returned. */
  invoke(event: unknown, requestId: string = randomUUID()): Promise<unknown> {
    return this.send(event, requestId);
  }

  /** A streamed invocation: what the handler writes arrives on `stream`, which ends with it. */
  async invokeStreaming(event: unknown, stream: ResponseStream, requestId: string = randomUUID()): Promise<void> {
    try {
      await this.send(event, requestId, stream);
    } finally {
      if (!stream.writableEnded) stream.end();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // A launch waiting for the API starts no container once stopped; one in its init is ended too.
    const api = await this.extensionsApi?.catch(() => undefined);
    // Lambda ends a container between invocations: its init and those in flight finish first, briefly.
    await within(Promise.allSettled([this.ready, ...this.inFlight]), STOP_DRAIN_MS);
    const worker = this.worker;
    if (worker) {
      this.retire(worker, new InvocationError('Runtime.Stopped', `${this.spec.name} is stopped`));
      await this.end(worker);
    }
    if (api) {
      api.server.closeAllConnections();
      await new Promise((resolve) => api.server.close(resolve));
    }
  }
}
