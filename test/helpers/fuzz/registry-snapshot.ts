/**
 * The whole registry table of a running local stack, read back with Scan: every account's
 * workspaces, fleets, devices, identities, jobs, FOTA, rollouts, keys, integrations, groups and exports, including what no
 * listing shows (key hashes, another account's items). "A 4xx changes nothing" is checked by
 * comparing two of these, which costs one paginated Scan instead of dozens of listings.
 */
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { findRuntime } from '../../../local/runtime-file';

type Item = Record<string, AttributeValue>;

// Written by the forwarder in the background as deliveries succeed or fail, whatever the API is asked.
const VOLATILE_INTEGRATION_FIELDS = ['last_delivery_at', 'last_error_at', 'last_error', 'consecutive_failures', 'failing_since'];
// Written by the registry stream's consumer in the background, after a write the API answered:
// rollout counters, counted-change marks, what a replaced job was in its rollout, and a rollout's
// outcome (completed, aborted; with its sweep entry, and without its next deadline once completed).
// The sweep, which writes too, does not run during the fuzz (SWEEP_INTERVAL_SECONDS).
const BOOKKEEPING = /^(CNT#|ROLLED#|ROLLOUT#[^#]+#C\d+$)/;
const VOLATILE_ROLLOUT_FIELDS = ['outcome', 'updated_at', 'sweep_pk', 'sweep_sk', 'next_deadline_at'];
// What an export is made with; the rest its runs write in the background, whatever the API is asked.
const EXPORT_FIELDS = new Set(['pk', 'sk', 'workspace_id', 'id', 'account_id', 'format', 'filters', 'key', 'created_at']);

// A device's daily count of the requests that stand for `j/up` messages (the status, a job's or a
// FOTA's result): each request counts, whatever its answer, as a key's per-second requests do.
const REQUEST_COUNTER_FIELDS = ['up_messages_claimed', 'up_messages_day'];
/**
 * Written after the request that caused them: `last_seen_at` by the ingest (at most once a minute),
 * `firmware_version` by the registry stream from a FOTA's `done` event (docs/api.md).
 */
const INGEST_FIELDS = ['last_seen_at', 'firmware_version'];

/** A snapshot: each item's JSON text by its key. */
export type Snapshot = Map<string, string>;

const keyOf = (item: Item) => `${item.pk?.S}|${item.sk?.S}`;

/** Reads the table's endpoint and name from the runtime file that `npm start` writes in its data folder. */
export const registryReader = (dataDir: string) => {
  const { env } = findRuntime(dataDir) as { env: Record<string, string> };
  const client = new DynamoDBClient({
    endpoint: env.AWS_ENDPOINT_URL_DYNAMODB,
    region: env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
  });
  const table = env.REGISTRY_TABLE ?? 'fleetstream-registry';

  const snapshot = async (): Promise<Snapshot> => {
    const items: Snapshot = new Map();
    let start: Item | undefined;
    do {
      // Strongly consistent: the write of the request just answered must be seen.
      const page = await client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
      for (const item of page.Items ?? []) {
        if (item.pk?.S?.startsWith('DELIVERY#')) continue; // the forwarder's delivery ledger
        if (item.pk?.S?.startsWith('INTLOG#')) continue; // the webhooks' delivery logs, written by the forwarder too
        // The alarm notifier's marks of what it sent, written in the background after a transition
        // an earlier request told (a rule disabled or deleted closes its alarms), and its error on a rule.
        if (item.pk?.S?.startsWith('ALARMSENT#')) continue;
        // A rule's backfill (docs/alarms.md): written by its creation, deleted by the minute sweep later.
        if (item.sk?.S?.startsWith('ALARMBACKFILL#')) continue;
        if (item.sk?.S?.startsWith('ALARMRULE#')) delete item.last_notification_error;
        // What every request the API admits writes, whatever its answer: the keys' per-second request
        // counters and the workspaces' usage counters (docs/limits.md).
        if (item.pk?.S?.startsWith('RATE#') || item.sk?.S?.startsWith('USAGE#')) continue;
        if (item.sk?.S?.startsWith('INT#')) for (const f of VOLATILE_INTEGRATION_FIELDS) delete item[f];
        if (item.sk?.S === 'DEVICE') for (const f of REQUEST_COUNTER_FIELDS) delete item[f];
        // a device of a workspace (WKS#…|DEV#…)
        if (item.sk?.S?.startsWith('DEV#')) for (const f of INGEST_FIELDS) delete item[f];
        // The devices' event logs: written by the registry stream after the request that caused an
        // event, and for a device's refused requests too, by design (docs/api.md).
        if (item.sk?.S?.startsWith('EVT#')) continue;
        if (BOOKKEEPING.test(item.sk?.S ?? '')) continue;
        if (item.sk?.S?.startsWith('ROLLOUT#')) for (const f of VOLATILE_ROLLOUT_FIELDS) delete item[f];
        if (item.sk?.S?.startsWith('EXPORT#')) for (const f of Object.keys(item)) if (!EXPORT_FIELDS.has(f)) delete item[f];
        items.set(keyOf(item), JSON.stringify(Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)))));
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  };

  return { snapshot, close: () => client.destroy() };
};

/** The attributes two versions of an item differ in, each as it was and as it is (cut short). */
const changedAttributes = (was: string, is: string) => {
  const [a, b] = [JSON.parse(was) as Record<string, unknown>, JSON.parse(is) as Record<string, unknown>];
  return [...new Set([...Object.keys(a), ...Object.keys(b)])]
    .filter((name) => JSON.stringify(a[name]) !== JSON.stringify(b[name]))
    .map((name) => `${name}: ${JSON.stringify(a[name] ?? null).slice(0, 100)} → ${JSON.stringify(b[name] ?? null).slice(0, 100)}`)
    .join('; ');
};

/** What changed between two snapshots, one line per item (at most `max`); empty when nothing did. */
export const diffSnapshots = (before: Snapshot, after: Snapshot, max = 6): string[] => {
  const lines: string[] = [];
  for (const [key, value] of after) {
    if (!before.has(key)) lines.push(`added ${key}: ${value.slice(0, 300)}`);
    else if (before.get(key) !== value) lines.push(`changed ${key}: ${changedAttributes(before.get(key)!, value)}`);
  }
  for (const key of before.keys()) if (!after.has(key)) lines.push(`removed ${key}`);
  return lines.length > max ? [...lines.slice(0, max), `… and ${lines.length - max} more`] : lines;
};
