import { addToEveryClient } from './sdk-steps';

/**
 * The writes to DynamoDB that this process makes (its handlers, stores and tests) or passes on (the
 * cloud-assembly runtime's proxies, for its functions), told to the local stream pollers: a poller
 * reads a shard as soon as a write may have added a record to it, and polls an idle shard once a
 * second rather than Lambda's four times (local/dynamodb-stream-shards.ts). An idle runtime's four
 * polls a second cost its DynamoDB Local about 0.03 of a core, paid by every test file whose runtime
 * is up (docs/local-runtime.md).
 */

type Listener = () => void;

/** The writes a poller listens to. */
export interface TableWrites {
  /** Calls `listener` after each write; answers the function that stops it. */
  subscribe: (listener: Listener) => () => void;
}

/** DynamoDB's operations that write items, by the names of the SDK's commands and of the API's targets. */
const WRITES = new Set([
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
  'ExecuteStatement',
  'BatchExecuteStatement',
  'ExecuteTransaction',
]);

/** Whether a DynamoDB operation (`PutItem`, or its command's name `PutItemCommand`) writes items. */
export const isItemWrite = (operation: string) => WRITES.has(operation.replace(/Command$/, ''));

// Kept on the global object: one set of listeners per process however often the module is loaded.
const LISTENERS = Symbol.for('fleetstream.tableWrites');
const globals = globalThis as { [LISTENERS]?: Set<Listener> };

/** Tells the listening pollers that a table was written (the SDK step below, and the proxies). */
export const tableWritten = () => {
  for (const listener of globals[LISTENERS] ?? []) listener();
};

type Next = (args: unknown) => Promise<unknown>;

const tellWrites = (next: Next, context: { clientName?: string; commandName?: string }) => async (args: unknown) => {
  const result = await next(args);
  if (context.clientName === 'DynamoDBClient' && isItemWrite(context.commandName ?? '')) tableWritten();
  return result;
};

/**
 * Starts telling this process's writes: every DynamoDB client of the process, whoever creates it,
 * tells each item write it made (idempotent). The local runtimes call it before their pollers start.
 */
export const signalTableWrites = () => {
  globals[LISTENERS] ??= new Set();
  addToEveryClient(tellWrites, { step: 'initialize', priority: 'low', name: 'fleetstreamTableWrites' });
};

/** This process's writes, once signalTableWrites has been called; undefined before (a poller then polls four times a second). */
export const tableWrites = (): TableWrites | undefined => {
  const listeners = globals[LISTENERS];
  return (
    listeners && {
      subscribe: (listener) => {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    }
  );
};
