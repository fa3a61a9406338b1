import { ForwardEntriesHeaderSchema, ForwardQueueMessageSchema, type ForwardEntriesHeader, type ForwardMessage } from '../../schemas/forward';
import { toQueueBody } from '../../shared/json';

/**
 * The forward queue's wire format, both ways: the producers render each point or event as the
 * webhook entry it will be, and the forwarder copies those entries into its POST bodies without
 * parsing them. A message is a header line (ForwardEntriesHeaderSchema: workspace, data or events,
 * count, each point's tag) and then one entry per line:
 *
 *   {"kind":"entries","workspace_id":"wks-…","of":"data","count":2,"tags":["temp","hum"]}
 *   {"workspace_id":"wks-…","fleet_id":"flt-…","device_id":"dev-…",…,"tag":"temp","payload":{"v":21.5}}
 *   {"workspace_id":"wks-…","fleet_id":"flt-…","device_id":"dev-…",…,"tag":"hum","payload":40}
 *
 * Lines split exactly: JSON text never holds a raw line break (JSON.stringify escapes them), and the
 * entries are pure ASCII (`toQueueBody`), so a line's length is its size in bytes. Bodies from
 * before (a JSON pack of forward messages, or a single one, still queued or in the DLQ) are read too.
 */

/** One webhook entry as the forwarder handles it: what its filters need, and the entry's JSON without `id`. */
export interface RenderedEntry {
  kind: ForwardMessage['kind'];
  workspace_id: string;
  /** A data point's tag (for tag filters); none for events. */
  tag?: string;
  /** The entry's JSON object text, the interface's fields in order, without its `id` (added per POST). */
  json: string;
}

/**
 * Largest forward-queue message a pack fills: 256 KiB, the size every SQS queue takes (queues made
 * since 2025 take 1 MiB, but SQS bills each 64 KB of a request as one request whatever the
 * message size, and a SendMessageBatch call carries 256 KiB on older queues), less 1 KiB for the
 * message attributes a DLQ replay adds (`origin-message-id`), which count towards the size.
 */
export const FORWARD_PACK_MAX_BYTES = 255 * 1024;

/** The webhook entry of a point or event (spec: webhooks), without its `id`, in pure ASCII. */
const entryJson = (m: ForwardMessage) =>
  toQueueBody(
    m.kind === 'data'
      ? {
          workspace_id: m.workspace_id,
          fleet_id: m.fleet_id,
          device_id: m.device_id,
          device_name: m.device_name,
          timestamp_device: m.timestamp_device,
          timestamp_in: m.timestamp_in,
          tag: m.tag,
          payload: m.payload,
        }
      : { ts: m.ts, workspace_id: m.workspace_id, fleet_id: m.fleet_id, device_id: m.device_id, type: m.type, direction: m.direction, payload: m.payload },
  );

/** A point or event as the entry it becomes in a webhook POST. */
export const renderEntry = (m: ForwardMessage): RenderedEntry => ({
  kind: m.kind,
  workspace_id: m.workspace_id,
  ...(m.kind === 'data' ? { tag: m.tag } : {}),
  json: entryJson(m),
});

/** A pack being filled: its header (count and tags grow with it), its lines, and its size so far. */
interface Pack {
  header: ForwardEntriesHeader;
  lines: string[];
  bytes: number;
}

// A header's size before its tags, with room for any count.
const headerBase = (workspaceId: string, of: ForwardEntriesHeader['of']) =>
  toQueueBody({ kind: 'entries', workspace_id: workspaceId, of, count: Number.MAX_SAFE_INTEGER, ...(of === 'data' ? { tags: [] } : {}) }).length;

/**
 * Packs forward messages into as few forward-queue bodies as the size allows: one workspace's data
 * points in some, its events in others (so a message never waits on two kinds of POST), the order
 * of `messages` kept within each pack. An entry larger than a pack goes alone.
 */
export const packForward = (messages: ForwardMessage[], maxBytes = FORWARD_PACK_MAX_BYTES): string[] => {
  const open = new Map<string, Pack>();
  const packs: Pack[] = [];
  for (const message of messages) {
    const { kind: of, workspace_id, tag, json } = renderEntry(message);
    const tagBytes = tag === undefined ? 0 : toQueueBody(tag).length + 1; // as the header writes it, and its comma
    const key = `${workspace_id}\n${of}`;
    let pack = open.get(key);
    if (!pack || pack.bytes + tagBytes + 1 + json.length > maxBytes) {
      pack = {
        header: { kind: 'entries', workspace_id, of, count: 0, ...(of === 'data' ? { tags: [] } : {}) },
        lines: [],
        bytes: headerBase(workspace_id, of),
      };
      open.set(key, pack);
      packs.push(pack);
    }
    pack.header.count += 1;
    if (tag !== undefined) pack.header.tags!.push(tag);
    pack.lines.push(json);
    pack.bytes += tagBytes + 1 + json.length;
  }
  return packs.map(({ header, lines }) => `${toQueueBody(header)}\n${lines.join('\n')}`);
};

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

const OPEN_BRACE = 0x7b;
const QUOTE = 0x22;
const CLOSE_BRACE = 0x7d;

/** Whether a line can be an entry: parsed when `parse`, else only its shape (`{"…}`) checked. */
const isEntry = (line: string, parse: boolean) => {
  if (line.charCodeAt(0) !== OPEN_BRACE || line.charCodeAt(1) !== QUOTE || line.charCodeAt(line.length - 1) !== CLOSE_BRACE) return false;
  if (!parse) return true;
  const value = parseJson(line);
  return typeof value === 'object' && value !== null && !Array.isArray(value);
};

/**
 * Entries of one workspace and one kind, in order, as the forwarder copies them: a rendered pack is
 * one run, read without an object per entry (a pack holds hundreds).
 */
export interface EntryRun {
  kind: ForwardMessage['kind'];
  workspace_id: string;
  /** Each line's tag (data only: for tag filters). */
  tags?: string[];
  /** Each entry's JSON object text, without its `id`. */
  lines: string[];
}

/**
 * The run of a rendered pack, or undefined when the header is not one or the lines do not match
 * it. The entries are copied as the producers rendered them (only Fleetstream's functions may send
 * to the queue): each line's shape is checked, and with `parseEntries` each is parsed too.
 */
const readRenderedPack = (body: string, newline: number, parseEntries: boolean): EntryRun | undefined => {
  const header = ForwardEntriesHeaderSchema.safeParse(parseJson(body.slice(0, newline)));
  if (!header.success) return undefined;
  const { workspace_id, of, count, tags } = header.data;
  const lines = body.slice(newline + 1).split('\n');
  if (lines.length !== count || (of === 'data' ? tags?.length !== count : tags !== undefined)) return undefined;
  for (const line of lines) if (!isEntry(line, parseEntries)) return undefined;
  return { kind: of, workspace_id, ...(of === 'data' ? { tags } : {}), lines };
};

/** Entries rendered one by one (a body from before rendering) as runs of consecutive entries of one workspace and kind. */
const runsOf = (entries: RenderedEntry[]): EntryRun[] => {
  const runs: EntryRun[] = [];
  for (const { kind, workspace_id, tag, json } of entries) {
    let run = runs.at(-1);
    if (!run || run.kind !== kind || run.workspace_id !== workspace_id)
      runs.push((run = { kind, workspace_id, ...(kind === 'data' ? { tags: [] } : {}), lines: [] }));
    run.lines.push(json);
    if (kind === 'data') run.tags!.push(tag!);
  }
  return runs;
};

/**
 * The entries a forward-queue body carries, in order, as runs: a rendered pack's as they are (one
 * run), or, for a body from before rendering (a JSON pack or a single message), its messages checked
 * and rendered. Undefined when the body is neither: it can never be delivered. `parseEntries` parses
 * each line of a rendered pack as well (the forwarder asks on a redelivery, so that a pack whose
 * POSTs a receiver can never accept is told apart from a receiver that is failing).
 */
export const readForwardRuns = (body: string, { parseEntries = false } = {}): EntryRun[] | undefined => {
  const newline = body.indexOf('\n');
  if (newline >= 0) {
    const run = readRenderedPack(body, newline, parseEntries);
    return run && [run];
  }
  const result = ForwardQueueMessageSchema.safeParse(parseJson(body));
  if (!result.success) return undefined;
  return runsOf((result.data.kind === 'pack' ? result.data.entries : [result.data]).map(renderEntry));
};

/** The entries a forward-queue body carries, one by one (`readForwardRuns`, flattened). */
export const readForwardBody = (body: string, options: { parseEntries?: boolean } = {}): RenderedEntry[] | undefined =>
  readForwardRuns(body, options)?.flatMap(({ kind, workspace_id, tags, lines }) =>
    lines.map((json, i): RenderedEntry => ({ kind, workspace_id, ...(tags ? { tag: tags[i] } : {}), json })),
  );
