import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { addToEveryClient } from './sdk-steps';

/**
 * Counts every AWS request the local runtime makes, and the requests AWS bills that have no SDK
 * call here (API Gateway requests, Lambda invocations, IoT Core messages, rules and actions), plus
 * webhook POSTs: the measure of what a data point costs (docs/cost.md).
 *
 * SDK calls are counted by a middleware step (`deserialize`, so once per attempt: a retried call is
 * two billed requests) that `instrumentAwsSdk` adds to every client's stack on its first `send`,
 * whoever created the client (handlers, stores, pollers, benchmarks). Each count is attributed to
 * the Lambda function whose invocation made it (`withInvocation`), or to `''` for the runtime's own
 * calls (the event source pollers' receives and deletes, which Lambda makes on AWS).
 */

/** What a count is about: the service and operation AWS bills, the queue or table, and the function that made it. */
export interface CountKey {
  service: string;
  operation: string;
  /** Queue or table name(s), the function for invocations, the topic class for IoT messages; '' when none. */
  resource: string;
  /** The Lambda function whose invocation made the request; '' for the runtime's own calls. */
  caller: string;
}

/** The tally of one key. */
export interface Tally {
  requests: number;
  /** Bytes sent (request bodies, message payloads). */
  bytes: number;
  /**
   * Billing units, as the service meters them: SQS 64 KB chunks of each request, IoT Core 5 KB
   * chunks of each message, DynamoDB write units of written items, Lambda milliseconds.
   */
  units: number;
  /** ReceiveMessage calls that returned no message. */
  empty: number;
  /** Calls that failed (they are billed all the same). */
  errors: number;
}

export interface CountRow extends CountKey, Tally {}

const KEY_SEPARATOR = '\u0000';
const keyOf = (k: CountKey) => [k.service, k.operation, k.resource, k.caller].join(KEY_SEPARATOR);

/** The process-wide counter (a `globalThis` singleton, so that every copy of this module shares it). */
export class RequestCounter {
  private readonly tallies = new Map<string, CountRow>();

  /** Adds one request (or `tally`'s figures) to `key`. */
  add(key: CountKey, tally: Partial<Tally> = {}) {
    const id = keyOf(key);
    const row = this.tallies.get(id) ?? { ...key, requests: 0, bytes: 0, units: 0, empty: 0, errors: 0 };
    row.requests += tally.requests ?? 1;
    row.bytes += tally.bytes ?? 0;
    row.units += tally.units ?? 1;
    row.empty += tally.empty ?? 0;
    row.errors += tally.errors ?? 0;
    this.tallies.set(id, row);
  }

  /** Every row counted so far (copies). */
  rows(): CountRow[] {
    return [...this.tallies.values()].map((row) => ({ ...row }));
  }

  /** What was counted since `earlier` (a `rows()` result): the rows' differences, zero rows left out. */
  since(earlier: CountRow[]): CountRow[] {
    const before = new Map(earlier.map((row) => [keyOf(row), row]));
    return this.rows()
      .map((row) => {
        const b = before.get(keyOf(row));
        return b
          ? {
              ...row,
              requests: row.requests - b.requests,
              bytes: row.bytes - b.bytes,
              units: row.units - b.units,
              empty: row.empty - b.empty,
              errors: row.errors - b.errors,
            }
          : row;
      })
      .filter((row) => row.requests > 0);
  }
}

const COUNTER = Symbol.for('fleetstream.requestCounter');
const INVOCATION = Symbol.for('fleetstream.invocation');
const INSTRUMENTED = Symbol.for('fleetstream.awsSdkInstrumented');
type Globals = { [COUNTER]?: RequestCounter; [INVOCATION]?: AsyncLocalStorage<string>; [INSTRUMENTED]?: boolean };
const globals = globalThis as Globals;

/** The process's counter. */
export const requestCounter = (): RequestCounter => (globals[COUNTER] ??= new RequestCounter());
const invocation = () => (globals[INVOCATION] ??= new AsyncLocalStorage<string>());

/** The function whose invocation is running here, or ''. */
export const currentCaller = () => invocation().getStore() ?? '';

/**
 * Runs `fn` as one invocation of the Lambda function `functionName`: counts the invocation and its
 * duration (Lambda bills milliseconds), and attributes the requests `fn` makes to the function.
 */
export const withInvocation = async <R>(functionName: string, fn: () => Promise<R>): Promise<R> => {
  const started = performance.now();
  let failed = false;
  try {
    return await invocation().run(functionName, fn);
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    const ms = Math.max(1, Math.ceil(performance.now() - started));
    requestCounter().add({ service: 'Lambda', operation: 'Invoke', resource: functionName, caller: '' }, { units: ms, errors: failed ? 1 : 0 });
  }
};

/** The caller of the requests IoT Core's rules engine makes (its actions' SendMessage). */
export const IOT_RULES_CALLER = 'iot-rules';

/**
 * Runs `fn` with its requests attributed to `caller`, a part of AWS that is not a Lambda function
 * (IoT Core's rules engine): nothing is counted for the call itself.
 */
export const asCaller = <R>(caller: string, fn: () => Promise<R>): Promise<R> => invocation().run(caller, fn);

/** One request to the API Gateway (REST) API, as billed: every request that reaches the stage. */
export const countGatewayRequest = (route: string) => requestCounter().add({ service: 'API Gateway', operation: 'Request', resource: route, caller: '' });

const IOT_MESSAGE_UNIT = 5 * 1024; // IoT Core meters messages in 5 KB increments

/**
 * One IoT Core message (a device's publish, or a delivery to a subscriber), a rule triggered, or
 * a rule action executed, as IoT Core bills them (pricing page: messaging, rules engine).
 */
export const countIotCore = (operation: 'PublishIn' | 'PublishOut' | 'RuleTriggered' | 'ActionExecuted', resource: string, bytes = 0) =>
  requestCounter().add(
    { service: 'IoT Core', operation, resource, caller: '' },
    { bytes, units: operation.startsWith('Publish') ? Math.max(1, Math.ceil(bytes / IOT_MESSAGE_UNIT)) : 1 },
  );

const SQS_CHUNK = 64 * 1024; // SQS bills each 64 KB chunk of a request's payload as one request
const WRITE_UNIT = 1024; // a DynamoDB write unit is an item of up to 1 KB

const SERVICES: Record<string, string> = {
  DynamoDBClient: 'DynamoDB',
  DynamoDBStreamsClient: 'DynamoDB Streams',
  SQSClient: 'SQS',
  TimestreamWriteClient: 'Timestream',
  TimestreamQueryClient: 'Timestream',
  IoTDataPlaneClient: 'IoT Core',
};

const queueName = (url: unknown) => (typeof url === 'string' ? (url.split('/').pop() ?? '') : '');

/**
 * The queue or table(s) a request names; a request of one item also names the item's kind (its
 * sort key up to the first `#`: `fleetstream-registry/DEVICE` is a device's locator,
 * `…/USAGE` a workspace's usage of a day), so that what follows devices and days can be told
 * from what follows points.
 */
const resourceOf = (input: Record<string, unknown>): string => {
  if (typeof input.QueueUrl === 'string') return queueName(input.QueueUrl);
  // The key as the document client gave it, or marshalled ({ S: '…' }).
  const key = (input.Key as { sk?: string | { S?: string } } | undefined)?.sk;
  const sk = typeof key === 'string' ? key : key?.S;
  if (typeof input.TableName === 'string') return sk === undefined ? input.TableName : `${input.TableName}/${sk.split('#')[0]}`;
  if (input.RequestItems && typeof input.RequestItems === 'object') return Object.keys(input.RequestItems).sort().join(',');
  if (Array.isArray(input.TransactItems)) return 'transaction';
  if (typeof input.topic === 'string') return input.topic.split('/').slice(0, 2).join('/');
  return '';
};

/** DynamoDB write units of a write, from its (marshalled) items: ⌈size / 1 KB⌉ each. */
const writeUnitsOf = (operation: string, input: Record<string, unknown>): number | undefined => {
  const units = (item: unknown) => Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(item ?? {})) / WRITE_UNIT));
  if (operation === 'BatchWriteItem') {
    const requests = Object.values(
      (input.RequestItems ?? {}) as Record<string, Array<{ PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }>>,
    ).flat();
    return requests.reduce((sum, r) => sum + units(r.PutRequest?.Item ?? r.DeleteRequest?.Key), 0);
  }
  if (operation === 'PutItem') return units(input.Item);
  return undefined;
};

const bodyBytes = (body: unknown) => (typeof body === 'string' ? Buffer.byteLength(body) : body instanceof Uint8Array ? body.byteLength : 0);

type Next = (args: { input: Record<string, unknown>; request?: { body?: unknown } }) => Promise<{ output: Record<string, unknown> }>;

const countingMiddleware =
  (next: Next, context: { clientName?: string; commandName?: string }) => async (args: { input: Record<string, unknown>; request?: { body?: unknown } }) => {
    const service = SERVICES[context.clientName ?? ''] ?? (context.clientName ?? 'unknown').replace(/Client$/, '');
    const operation = service === 'IoT Core' ? 'PublishIn' : (context.commandName ?? 'unknown').replace(/Command$/, '');
    const key: CountKey = { service, operation, resource: resourceOf(args.input ?? {}), caller: currentCaller() };
    const bytes = bodyBytes(args.request?.body);
    const units =
      service === 'SQS'
        ? Math.max(1, Math.ceil(bytes / SQS_CHUNK))
        : service === 'IoT Core'
          ? Math.max(1, Math.ceil(bodyBytes(args.input.payload) / IOT_MESSAGE_UNIT))
          : service === 'DynamoDB'
            ? writeUnitsOf(operation, args.input ?? {})
            : undefined;
    try {
      const result = await next(args);
      const empty = operation === 'ReceiveMessage' && !(result.output?.Messages as unknown[] | undefined)?.length ? 1 : 0;
      requestCounter().add(key, { bytes, units, empty });
      return result;
    } catch (error) {
      requestCounter().add(key, { bytes, units, errors: 1 });
      throw error;
    }
  };

const WEBHOOK_USER_AGENT = 'Fleetstream-Webhooks/1';

/**
 * Counts every AWS SDK request of this process from now on (idempotent): each client gets the
 * counting step on its first `send` (local/sdk-steps.ts), and counts the
 * forwarder's webhook POSTs from Node's HTTP client diagnostics channel.
 */
export const instrumentAwsSdk = () => {
  if (globals[INSTRUMENTED]) return;
  globals[INSTRUMENTED] = true;
  addToEveryClient(countingMiddleware, { step: 'deserialize', priority: 'high', name: 'fleetstreamRequestCounter' });
  subscribe('http.client.request.created', (message) => {
    const request = (message as { request: ClientRequest }).request;
    if (request.getHeader('user-agent') !== WEBHOOK_USER_AGENT) return;
    const bytes = Number(request.getHeader('content-length') ?? 0);
    requestCounter().add({ service: 'Webhook', operation: 'POST', resource: '', caller: currentCaller() }, { bytes });
  });
};

/** Rows summed by the given key fields (e.g. by service, or by service and operation). */
export const sumBy = (rows: CountRow[], fields: Array<keyof CountKey>): CountRow[] => {
  const sums = new Map<string, CountRow>();
  for (const row of rows) {
    const key: CountKey = { service: '', operation: '', resource: '', caller: '' };
    for (const f of fields) key[f] = row[f];
    const id = keyOf(key);
    const sum = sums.get(id) ?? { ...key, requests: 0, bytes: 0, units: 0, empty: 0, errors: 0 };
    sum.requests += row.requests;
    sum.bytes += row.bytes;
    sum.units += row.units;
    sum.empty += row.empty;
    sum.errors += row.errors;
    sums.set(id, sum);
  }
  return [...sums.values()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
};

/**
 * What AWS bills as requests (Lambda: invocations; webhook POSTs are not AWS requests and are
 * left out), and free calls left out too: Lambda's reads of a DynamoDB stream for its trigger
 * are not billed.
 */
export const isAwsRequest = (row: CountKey) => row.service !== 'Webhook' && row.service !== 'DynamoDB Streams';
