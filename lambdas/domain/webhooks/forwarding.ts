import { randomUUID } from 'node:crypto';
import type { Db } from '../../shared/clients';
import { logger } from '../../shared/logger';
import { countMetric } from '../../shared/metrics';
import type { ForwardMessage } from '../../schemas/forward';
import { getDeliveredIntegrations, putDeliveredIntegrations, recordDeliveryOutcome, type IntegrationRecord } from '../../stores/integration-store';
import { delayMessages } from '../../stores/queue-store';
import { readForwardRuns, type EntryRun } from './forward-pack';
import { forwarderMemory, type ForwarderMemory } from './forwarder-memory';
import { signatureHeaders, wantsMessage } from './integrations';
import { UsageTally } from '../limits/usage';
import type { LoggedDelivery } from '../../stores/delivery-log-store';
import { loggedDelivery, writeDeliveryLog } from './delivery-log';
import { awaitWithin, type ConsoleLive, type LiveMessage } from '../console-live/live';

/** One forward-queue message as the forwarder receives it. */
export interface QueuedMessage {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** How many times SQS has delivered it, this time included. */
  receiveCount: number;
  /** The ID it first had, when it was replayed from the DLQ (the `origin-message-id` attribute). */
  originId?: string;
}

/** A webhook POST, ready to send: its body as the bytes that were signed. */
export interface WebhookPost {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
}

/**
 * How a POST went: a 2xx answer, or what went wrong (status, timeout, refused address, …); `status`
 * is the receiver's HTTP status when it answered.
 */
export type PostOutcome = { ok: true; status?: number } | { ok: false; error: string; status?: number };

export interface ForwardingOptions {
  /** Sends one POST; never throws. */
  post: (request: WebhookPost) => Promise<PostOutcome>;
  /** The queue the messages came from, for the retry backoff. */
  queueUrl: string;
  retry: { baseSeconds: number; maxSeconds: number };
  /** POSTs in flight at once. */
  concurrency: number;
  /**
   * Epoch ms after which no POST starts (the invocation's end less one webhook timeout): the
   * messages of the POSTs left out are retried, so that a batch with many slow receivers ends in
   * time instead of timing out as a whole.
   */
  startPostsBefore?: number;
  /**
   * What the container remembers between invocations (its integrations, the statuses it wrote);
   * without it every call reads the integrations and writes each status.
   */
  memory?: ForwarderMemory;
  /**
   * Counts the batch's POSTs in the workspaces' usage (webhook_deliveries, webhook_failures): the
   * handler keeps them and writes them with its statuses (domain/usage.ts usageBuffer). A failure is
   * logged with the counts, never retried by the messages: a POST cannot be taken back, and
   * retrying its message would send it again.
   */
  recordUsage?: (tally: UsageTally) => Promise<unknown>;
  /** Tells the open consoles of the statuses written (domain/console-live): one message per integration per batch; never rejects. */
  live?: ConsoleLive;
}

/** The SQS message attribute that carries a message's first ID through a DLQ replay. */
export const ORIGIN_ID_ATTRIBUTE = 'origin-message-id';

/** Largest POST body the forwarder builds; a bigger batch is split (a single larger entry goes alone). */
export const MAX_POST_BYTES = 1024 * 1024;

// Delivery ledger entries outlive any message: SQS keeps one at most 14 days, the DLQ included.
const LEDGER_TTL_SECONDS = 15 * 24 * 3600;

/** Seconds to hide a message that failed on its `receiveCount`-th delivery: base × 2^(n − 1), capped. */
export const retryDelaySeconds = (retry: ForwardingOptions['retry'], receiveCount: number) =>
  Math.min(retry.maxSeconds, retry.baseSeconds * 2 ** Math.max(0, receiveCount - 1));

const ENVELOPE_START = '{"batch_id":';
const RESULT_START = ',"result":[';
const ENVELOPE_END = ']}';

/**
 * The body of one POST, as the bytes sent: `{batch_id, result}` with entry IDs "0", "1", … in
 * order, each entry's rendered JSON copied in behind its ID (forward-pack.ts: the entries are never
 * parsed here). Entries are pure ASCII, so each is written straight into one buffer: an entry's
 * text goes in first, then its `{"id":"N",` over the entry's own opening brace, with no string
 * built per entry (a megabyte of entries is thousands of them).
 */
export const webhookBody = (batchId: string, entries: string[]): Buffer => {
  const head = `${ENVELOPE_START}${JSON.stringify(batchId)}${RESULT_START}`;
  let size = Buffer.byteLength(head) + ENVELOPE_END.length + Math.max(0, entries.length - 1);
  for (let i = 0; i < entries.length; i++) size += entries[i].length + idPrefix(i).length - 1;
  const body = Buffer.allocUnsafe(size);
  let at = body.write(head);
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) at = body.writeUInt8(COMMA, at);
    const prefix = idPrefix(i);
    const end = at + prefix.length - 1 + body.write(entries[i], at + prefix.length - 1, 'latin1');
    body.write(prefix, at, 'latin1');
    at = end;
  }
  body.write(ENVELOPE_END, at);
  return body;
};

const COMMA = 0x2c;
/** An entry's start up to its first field: `{"id":"7",` (its `{` then stands where the entry's own was). */
const idPrefix = (i: number) => `{"id":"${i}",`;

/**
 * The signed POST of one batch to an integration: the `{batch_id, result}` body and the headers
 * every webhook POST carries (kind, IDs, signatures). The forwarder and the test delivery both
 * build their POSTs here, so a test is exactly what the receiver will get.
 */
export const webhookPost = (
  integration: IntegrationRecord,
  kind: ForwardMessage['kind'],
  batchId: string,
  entries: string[],
  extraHeaders: Record<string, string> = {},
): WebhookPost => {
  // Encoded once: the same bytes are signed and sent.
  const body = webhookBody(batchId, entries);
  return {
    url: integration.url,
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Fleetstream-Webhooks/1',
      'x-fleetstream-batch-id': batchId,
      'x-fleetstream-integration-id': integration.id,
      'x-fleetstream-kind': kind === 'data' ? 'data' : 'events',
      ...extraHeaders,
      ...signatureHeaders(integration, body),
    },
  };
};

/** One queued message, read: its entries, as runs of one workspace and kind (a pack is one run). */
interface Parsed {
  queued: QueuedMessage;
  key: string;
  runs: EntryRun[];
}

/** Entries of one message on their way into one POST (the entries' JSON texts, in order). */
interface Part {
  from: Parsed;
  lines: string[];
}

interface Post {
  integration: IntegrationRecord;
  kind: ForwardMessage['kind'];
  parts: Part[];
}

// What an entry adds to a POST body besides its JSON (its `"id":"…",` and a comma), and what the
// body's envelope takes (`{"batch_id":"…","result":[…]}`).
export const ENTRY_OVERHEAD = 16;
const ENVELOPE_BYTES = 80;

/**
 * Splits parts into groups whose POST body stays under MAX_POST_BYTES, a part split where a body
 * fills (entries are ASCII: a length is a size; an entry larger than a body goes alone).
 */
const bySize = (parts: Part[]) => {
  const groups: Part[][] = [];
  let bytes = 0;
  for (const part of parts) {
    let start = 0;
    for (let i = 0; i < part.lines.length; i++) {
      const size = part.lines[i].length + ENTRY_OVERHEAD;
      if (!groups.length || (bytes + size > MAX_POST_BYTES && bytes > ENVELOPE_BYTES)) {
        if (i > start) groups.at(-1)!.push({ from: part.from, lines: part.lines.slice(start, i) });
        start = i;
        groups.push([]);
        bytes = ENVELOPE_BYTES;
      }
      bytes += size;
    }
    if (part.lines.length) groups.at(-1)!.push(start === 0 ? part : { from: part.from, lines: part.lines.slice(start) });
  }
  return groups;
};

/** The lines of a run that an integration takes: all or none by kind, one by one by tag when it filters data by tag. */
const linesFor = (integration: IntegrationRecord, run: EntryRun) =>
  run.kind === 'data' && integration.tags.length
    ? run.lines.filter((_, i) => wantsMessage(integration, { kind: run.kind, tag: run.tags![i] }))
    : wantsMessage(integration, { kind: run.kind })
      ? run.lines
      : [];

/** Runs tasks with at most `concurrency` in flight. */
const runAll = async <T>(tasks: Array<() => Promise<T>>, concurrency: number) => {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  return results;
};

const readMessages = (messages: QueuedMessage[]) => {
  const valid: Parsed[] = [];
  const poison: QueuedMessage[] = [];
  for (const queued of messages) {
    // A redelivered message has its entries parsed too: a line no receiver could take is poison.
    const runs = readForwardRuns(queued.body, { parseEntries: queued.receiveCount > 1 || queued.originId !== undefined });
    if (runs) valid.push({ queued, key: queued.originId ?? queued.messageId, runs });
    else poison.push(queued);
  }
  return { valid, poison };
};

/** Which integrations received each retried message before (none for first deliveries). */
const earlierDeliveries = async (db: Db, valid: Parsed[]) => {
  const retried = valid.filter((p) => p.queued.receiveCount > 1 || p.queued.originId).map((p) => p.key);
  if (!retried.length) return new Map<string, string[]>();
  try {
    return await getDeliveredIntegrations(db, retried);
  } catch (error) {
    // Without the ledger a retry may reach an integration twice: at least once still holds.
    logger.warn('could not read the delivery ledger', { error: error as Error });
    return new Map<string, string[]>();
  }
};

/**
 * Writes each integration's delivery status (a success at most once per the memory's bound, a
 * failure always); answers the consoles' `webhook` messages of the statuses written.
 */
const writeStatuses = async (db: Db, memory: ForwarderMemory, byIntegration: Map<IntegrationRecord, { delivered: boolean; error?: string }>) => {
  const at = new Date().toISOString();
  const written: LiveMessage[] = [];
  await Promise.all(
    [...byIntegration].map(async ([integration, summary]) => {
      if (summary.error) logger.warn('webhook delivery failed', { integrationId: integration.id, error: summary.error });
      if (!memory.needsStatusWrite(integration, summary)) return;
      try {
        await recordDeliveryOutcome(db, integration.workspace_id, integration.id, { at, ...summary });
        memory.statusWritten(integration, summary);
        const message = {
          integration_id: integration.id,
          ok: summary.error === undefined,
          at,
          ...(summary.error ? { error: summary.error.slice(0, 256) } : {}),
        };
        written.push({ workspaceId: integration.workspace_id, kind: 'webhook', message });
      } catch (error) {
        if ((error as Error).name === 'NotFoundError') memory.forget(integration);
        else logger.warn('could not record a delivery status', { integrationId: integration.id, error: error as Error });
      }
    }),
  );
  return written;
};

/**
 * Forwards one batch of forward-queue messages to the webhooks that want them, and returns the IDs
 * of the messages to retry (the partial batch response).
 *
 * A message is a pack of many entries, rendered by the producers as the webhook entries they become
 * (forward-pack.ts), so that they are copied into the POSTs without being parsed (a body from
 * before packing or rendering is parsed and checked). Per workspace, integration and kind (data or
 * events) the entries go out in as few signed POSTs as the size limit allows, all POSTs of the batch
 * in parallel, so a slow or failing receiver holds up no other. A message is retried when any
 * integration that wants it failed; before it is handed back, the integrations it did reach are
 * written to a delivery ledger, so that the retry (and a replay from the DLQ) goes only to those
 * that failed. Retries back off by ChangeMessageVisibility; after the queue's maxReceiveCount SQS
 * moves the message to the DLQ.
 *
 * A message that is not a valid forward message can never succeed: it is logged and made visible
 * again at once, so that it reaches the DLQ after maxReceiveCount quick receives (where the DLQ
 * alarm shows it) instead of waiting through the backoff.
 */
export const forwardMessages = async (db: Db, messages: QueuedMessage[], options: ForwardingOptions): Promise<string[]> => {
  const memory = options.memory ?? forwarderMemory(db, { ttlMs: 0, max: 0 });
  const { valid, poison } = readMessages(messages);
  for (const queued of poison) logger.error('not a forward message; it will go to the DLQ', { messageId: queued.messageId, body: queued.body.slice(0, 512) });

  const before = await earlierDeliveries(db, valid);
  // Runs by workspace (a pack holds one workspace's, but single messages and packs mix in a batch).
  const workspaces = new Map<string, Array<{ from: Parsed; run: EntryRun }>>();
  for (const from of valid) {
    for (const run of from.runs) {
      if (!workspaces.has(run.workspace_id)) workspaces.set(run.workspace_id, []);
      workspaces.get(run.workspace_id)!.push({ from, run });
    }
  }

  const unreadable = new Set<Parsed>(); // messages whose workspace's integrations could not be read
  const posts: Post[] = [];
  await Promise.all(
    [...workspaces].map(async ([workspaceId, runs]) => {
      let integrations: IntegrationRecord[];
      try {
        integrations = await memory.integrationsOf(workspaceId);
      } catch (error) {
        logger.warn('could not read the integrations of a workspace', { workspaceId, error: error as Error });
        for (const { from } of runs) unreadable.add(from);
        return;
      }
      for (const integration of integrations) {
        for (const kind of ['data', 'event'] as const) {
          const wanted = runs
            .filter(({ from, run }) => run.kind === kind && !before.get(from.key)?.includes(integration.id))
            .map(({ from, run }) => ({ from, lines: linesFor(integration, run) }));
          for (const group of bySize(wanted)) posts.push({ integration, kind, parts: group });
        }
      }
    }),
  );

  const logged: LoggedDelivery[] = [];
  const outcomes = await runAll(
    posts.map((post) => async (): Promise<PostOutcome | undefined> => {
      if (options.startPostsBefore !== undefined && Date.now() >= options.startPostsBefore) return undefined;
      const entries = post.parts.flatMap((part) => part.lines);
      const batchId = randomUUID();
      const at = new Date().toISOString();
      const started = performance.now();
      const outcome = await options.post(webhookPost(post.integration, post.kind, batchId, entries));
      const durationMs = performance.now() - started;
      logged.push(loggedDelivery(post.integration, { at, durationMs, batchId, kind: post.kind, entries: entries.length }, outcome));
      return outcome;
    }),
    options.concurrency,
  );
  // One item per POST, written beside the statuses (never per message).
  const logging = writeDeliveryLog(db, logged);

  // A message reached an integration when every POST to it that carried one of its entries
  // succeeded (a pack's data and events, or a pack split by size, may take several POSTs).
  const sentTo = new Map<Parsed, Set<string>>();
  const failedTo = new Map<Parsed, Set<string>>();
  const missed = new Set<Parsed>(unreadable);
  const byIntegration = new Map<IntegrationRecord, { delivered: boolean; error?: string }>();
  posts.forEach((post, i) => {
    const outcome = outcomes[i];
    const messages = new Set(post.parts.map((part) => part.from));
    if (!outcome) {
      // not sent for lack of time: retried, and nothing to say about the receiver
      for (const p of messages) missed.add(p);
      return;
    }
    const summary = byIntegration.get(post.integration) ?? { delivered: false };
    if (outcome.ok) summary.delivered = true;
    else summary.error = outcome.error;
    byIntegration.set(post.integration, summary);
    for (const p of messages) {
      const into = outcome.ok ? sentTo : failedTo;
      into.set(p, (into.get(p) ?? new Set()).add(post.integration.id));
      if (!outcome.ok) missed.add(p);
    }
  });
  const reached = new Map<Parsed, Set<string>>();
  for (const [p, ids] of sentTo) {
    const complete = [...ids].filter((id) => !failedTo.get(p)?.has(id));
    if (complete.length) reached.set(p, new Set(complete));
  }

  const usage = new UsageTally();
  posts.forEach((post, i) => {
    const outcome = outcomes[i];
    if (outcome) usage.add(post.integration.workspace_id, Date.now(), outcome.ok ? { webhook_deliveries: 1 } : { webhook_failures: 1 });
  });
  countMetric('WebhookDeliveries', outcomes.filter((o) => o?.ok).length);
  countMetric('WebhookFailures', outcomes.filter((o) => o && !o.ok).length);
  // Written while the statuses and the ledger are; days it could not write are logged, and lost.
  const counting =
    usage.size && options.recordUsage
      ? options.recordUsage(usage).catch((error: unknown) => logger.error('could not write usage counts', { error: error as Error }))
      : undefined;

  const written = await writeStatuses(db, memory, byIntegration);
  const telling = options.live?.(written);

  const retried = [...missed];
  const ledger = retried
    .filter((p) => reached.has(p))
    .map((p) => ({ messageKey: p.key, integrationIds: [...new Set([...(before.get(p.key) ?? []), ...reached.get(p)!])] }));
  try {
    if (ledger.length) await putDeliveredIntegrations(db, ledger, Math.floor(Date.now() / 1000) + LEDGER_TTL_SECONDS);
  } catch (error) {
    logger.warn('could not write the delivery ledger; retries may repeat deliveries', { error: error as Error });
  }

  await Promise.all([counting, logging]);
  await awaitWithin(telling, 1_000);
  const delays = [
    ...retried.map((p) => ({ receiptHandle: p.queued.receiptHandle, seconds: retryDelaySeconds(options.retry, p.queued.receiveCount) })),
    ...poison.map((queued) => ({ receiptHandle: queued.receiptHandle, seconds: 0 })),
  ];
  try {
    if (delays.length) await delayMessages(options.queueUrl, delays);
  } catch (error) {
    // They come back after the queue's visibility timeout instead.
    logger.warn('could not set the retry backoff', { error: error as Error });
  }
  return [...retried.map((p) => p.queued.messageId), ...poison.map((q) => q.messageId)];
};
