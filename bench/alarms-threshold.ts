/**
 * The threshold half of `npm run bench:alarms`: the data path's AWS requests per 1,000 points
 * with and without a `threshold` rule, measured side by side on one runtime, in the traffic shapes
 * of `npm run bench:requests` (bench/data-path-scenario.ts; local/request-counter.ts). Each shape
 * runs twice, in a fresh workspace each time: without any alarm rule, then with one `threshold`
 * rule on every device's `temperature` points (`value` > 1000: no point crosses it, so what is
 * measured is what the rule costs the points, not its transitions). The target: the rule
 * adds at most 2 %.
 */
import { isAwsRequest, sumBy } from '../local/request-counter';
import type { LocalRuntime } from '../local/runtime';
import { measureDataPath, stageOf, type DataPathResult, type TrafficShape } from './data-path-scenario';
import { printTable } from './stats';

/** `npm run bench:requests`' shapes (bench/requests.ts), scaled by `scale` (messages per device). */
const shapes = (scale: number): Record<string, TrafficShape> => ({
  'https-100': { door: 'https', devices: 10, pointsPerMessage: 100, messagesPerDevice: Math.max(1, Math.round(5 * scale)) },
  'https-10': { door: 'https', devices: 20, pointsPerMessage: 10, messagesPerDevice: Math.max(1, Math.round(10 * scale)) },
  'mqtt-1': { door: 'mqtt', devices: 20, pointsPerMessage: 1, messagesPerDevice: Math.max(1, Math.round(50 * scale)) },
});

/** The data path's AWS requests per 1,000 points, its empty receives (which follow the clock, not the points) left out. */
const dataPathPer1000 = (result: DataPathResult) => {
  const rows = result.rows.filter((row) => isAwsRequest(row) && stageOf(row) === 'data path');
  const requests = rows.reduce((sum, row) => sum + row.requests - row.empty, 0);
  return (requests * 1000) / result.points;
};

/** The ingest Lambda's DynamoDB requests on the registry per 1,000 points, by operation: where a rule's reads would show. */
const ingestRegistryReads = (result: DataPathResult) =>
  Object.fromEntries(
    sumBy(
      result.rows.filter((row) => row.caller === 'ingest' && row.service === 'DynamoDB' && !row.resource.includes('timeseries')),
      ['operation'],
    ).map((row) => [row.operation, (row.requests * 1000) / result.points]),
  );

/**
 * What the rule's evaluation adds, per 1,000 points: the ingest's registry requests of the kinds it
 * makes (reads, and writes at transitions: none here) beyond the run without the rule. UpdateItem,
 * which it never makes (the points' quotas, usage and `last_seen_at` are), is left out: its count
 * follows how the points fell into batches, which differs from run to run.
 */
const addedByRule = (without: Record<string, number>, withIt: Record<string, number>) =>
  ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'DeleteItem', 'TransactWriteItems'].reduce(
    (sum, op) => sum + Math.max(0, (withIt[op] ?? 0) - (without[op] ?? 0)),
    0,
  );

const format = (reads: Record<string, number>) =>
  Object.entries(reads)
    .map(([op, n]) => `${op} ${n.toFixed(2)}`)
    .join(', ') || 'none';

/**
 * Measures each shape without and with a threshold rule, prints the figures and the ratio.
 * @returns by shape, the data path's requests with the rule's added, over those without it.
 */
export const measureThresholdCost = async (runtime: LocalRuntime, { scale = 1, log }: { scale?: number; log: (line: string) => void }) => {
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${runtime.base_url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-api-key': runtime.api_key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return response.json();
  };
  const withRule = async (workspaceId: string) => {
    await api('POST', `/workspaces/${workspaceId}/alarm-rules`, {
      name: 'too hot',
      kind: 'threshold',
      severity: 'major',
      tag: 'temperature',
      field: 'value',
      op: '>',
      value: 1000,
    });
  };
  const rows = [];
  const ratios: Record<string, number> = {};
  for (const [name, shape] of Object.entries(shapes(scale))) {
    log(`threshold: ${name} without a rule…`);
    const without = await measureDataPath(runtime, shape);
    log(`threshold: ${name} with a threshold rule…`);
    const withIt = await measureDataPath(runtime, shape, { prepare: withRule });
    const a = dataPathPer1000(without);
    const b = dataPathPer1000(withIt);
    const added = addedByRule(ingestRegistryReads(without), ingestRegistryReads(withIt));
    ratios[name] = (a + added) / a;
    rows.push({
      shape: `${name} (${without.points} points)`,
      'without a rule': a.toFixed(1),
      'with a threshold rule': b.toFixed(1),
      'added by the rule': `${added.toFixed(2)} (+${((added / a) * 100).toFixed(2)} %; target ≤ 2 %)`,
      'ingest registry requests without': format(ingestRegistryReads(without)),
      'ingest registry requests with': format(ingestRegistryReads(withIt)),
    });
  }
  printTable('bench:alarms threshold: the data path’s AWS requests per 1,000 points (empty receives left out)', rows);
  console.log(
    'The totals differ by how points fell into SQS batches (UpdateItem, receives, deletes); "added by the rule" counts the requests of the kinds only its evaluation adds. Its reads are per container and time (the rules every 10 s, a device’s state every 60 s), so a longer run spreads them over more points.',
  );
  return ratios;
};
