import { createHash } from 'node:crypto';
import type { Db } from '../../shared/clients';
import type { Device } from '../../schemas/device';
import type { PageQuery } from '../../schemas/list';
import type { StreamedList } from '../../shared/json-stream';
import { getDevicesByIds, readTaggedDeviceIds } from '../../stores/device-tag-index';
import { readDevicesOfWorkspace, type DeviceRecord } from '../../stores/device-store';
import { identitiesOfDevices, readIdentitiesOfWorkspace } from '../../stores/identity-store';
import type { Keyed } from '../../stores/items';
import { collection } from '../../stores/keys';
import { getWorkspaceOfAccount, type WorkspaceRecord } from '../../stores/workspace-store';
import { fleetNameCache, identityJoin, toDevice } from './device-answers';
import { mergeKeyed, pageSizeOf, paginate, startOf } from './lists';
import { matchesQuery, planSearch, printQuery, type Query, type SearchableDevice } from './query';

/** What a search asks for: devices matching `query` (all when none), in `fleetIds` (all fleets when none). */
export interface DeviceSearch {
  query?: Query;
  fleetIds?: string[];
}

// Device IDs read from the index per BatchGetItem round of an unpaged stream.
const INDEX_BATCH = 100;

/**
 * The name of a search's list, as its cursors carry it: the plain list's (`devices/<wks>`, as v3
 * clients' cursors hold) or, with a query or fleets, one bound to them (a digest of the query's
 * canonical text and the fleets), so that a cursor of one search is refused by another.
 */
const listNameOf = (workspaceId: string, { query, fleetIds }: DeviceSearch) => {
  const base = `devices/${workspaceId}`;
  if (!query) return base;
  const digest = createHash('sha256')
    .update(JSON.stringify([printQuery(query), [...new Set(fleetIds ?? [])].sort()]))
    .digest('base64url')
    .slice(0, 16);
  return `${base}?q=${digest}`;
};

/**
 * How many devices the next read of a one-pass search evaluates, so that its first page costs
 * about what its matches need: the rest of the page at the match rate seen so far, and a fifth
 * more; 4× the last read while nothing matched; nothing ahead once the page is full. A stream
 * without a page reads DynamoDB's 1 MB pages. With `handOverBelow`, a read after which fewer than
 * that share of the devices read so far matched reads nothing more, and `handedOver()` says so: the
 * search goes on from its index.
 */
const readSizer = (pageSize: number | undefined, keep: (item: Record<string, unknown>) => boolean, handOverBelow?: number) => {
  let evaluatedSoFar = 0;
  let matched = 0;
  let handedOver = false;
  const grow = (items: Array<Record<string, unknown>>, evaluated: number) => {
    if (pageSize === undefined) return undefined;
    const last = Math.max(evaluated, 1);
    evaluatedSoFar += last;
    matched += items.filter(keep).length;
    const missing = pageSize - matched;
    if (missing <= 0) return 0;
    if (handOverBelow !== undefined && matched < evaluatedSoFar * handOverBelow) {
      handedOver = true;
      return 0;
    }
    return matched ? Math.ceil(((missing * evaluatedSoFar) / matched) * 1.2) : last * 4;
  };
  return { grow, handedOver: () => handedOver };
};

/**
 * The share of the devices read that must match for a page of an indexed query to be read in one
 * pass rather than from the index (docs/api.md, "How a search is answered"): at a half, one pass
 * reads at most about two devices per match, in Queries; the index reads one entry and gets one
 * device per match by BatchGetItem, which costs about two Query items on DynamoDB Local and, on
 * AWS, a read unit per device (a Query reads about eight small devices per unit).
 */
export const ONE_PASS_SHARE = 0.5;
/** Devices a page of an indexed query reads first in one pass, to see what share of them match. */
export const PROBE_DEVICES = 100;

type Match = Keyed<DeviceRecord>;
/** A round of a search's matches. */
interface Found {
  devices: Match[];
}

/**
 * One pass over the workspace's devices after `after`: DynamoDB filters the fleets, `keep` the
 * rest; each read sized by the matches so far. With `handOverBelow` (a page of an indexed query),
 * the first read is a probe of {@link PROBE_DEVICES}, and the pass stops once too few of the
 * devices read match: `handedOver()` then says after which sort key the index goes on.
 */
const onePass = (
  db: Db,
  workspaceId: string,
  keep: (device: DeviceRecord) => boolean,
  read: { after?: string; pageSize?: number; fleetIds?: string[]; handOverBelow?: number },
) => {
  const { after, pageSize, fleetIds, handOverBelow } = read;
  const sizer = readSizer(pageSize, (item) => keep(item as unknown as DeviceRecord), handOverBelow);
  let handedOver: { after: string | undefined } | undefined;
  async function* pages(): AsyncGenerator<Found> {
    let last = after;
    const first = handOverBelow !== undefined && pageSize !== undefined ? Math.min(pageSize, PROBE_DEVICES) : pageSize;
    for await (const page of readDevicesOfWorkspace(db, workspaceId, { after, pageSize: first, grow: sizer.grow, fleetIds })) {
      last = page.at(-1)?.sk ?? last;
      yield { devices: page.filter(({ value }) => keep(value)) };
      if (sizer.handedOver()) {
        // Every device up to `last` has been read (a fleet filter may have read a few more, which the index then reads again).
        handedOver = { after: last };
        return;
      }
    }
  }
  return { pages: pages(), handedOver: () => handedOver };
};

/** The records of the workspace's devices matching a search, page by page in ID order, after the sort key `after`. */
async function* matchingRecords(
  db: Db,
  workspaceId: string,
  search: DeviceSearch,
  after: string | undefined,
  pageSize: number | undefined,
): AsyncGenerator<Found> {
  const { query, fleetIds } = search;
  const fleets = fleetIds?.length ? new Set(fleetIds) : undefined;
  const keep = (device: DeviceRecord) => (!fleets || fleets.has(device.fleet_id)) && (!query || matchesQuery(query, device as SearchableDevice));
  const plan = planSearch(query);
  let from = after;
  if (plan.kind === 'scan' || pageSize !== undefined) {
    // One pass; for a page of an indexed query, one that hands over to the index when few devices match.
    const pass = onePass(db, workspaceId, keep, { after, pageSize, fleetIds, handOverBelow: plan.kind === 'index' ? ONE_PASS_SHARE : undefined });
    yield* pass.pages;
    const handedOver = pass.handedOver();
    if (plan.kind === 'scan' || !handedOver) return;
    from = handedOver.after;
  }
  yield* indexedRecords(db, workspaceId, plan, keep, from, pageSize);
}

/** The records of the devices the index names for `plan` after the sort key `after`, each checked by `keep`, in ID order. */
async function* indexedRecords(
  db: Db,
  workspaceId: string,
  plan: { key: string; values: string[] },
  keep: (device: DeviceRecord) => boolean,
  after: string | undefined,
  pageSize: number | undefined,
): AsyncGenerator<Found> {
  const afterDevice = after?.slice(collection.devicesOfWorkspace(workspaceId).prefix.length);
  const ids = mergeKeyed(plan.values.map((value) => readTaggedDeviceIds(db, workspaceId, plan.key, value, { afterDevice, pageSize })));
  let batch: Array<Keyed<string>> = [];
  const fetch = async (entries: Array<Keyed<string>>): Promise<Found> => {
    const records = await getDevicesByIds<DeviceRecord>(
      db,
      workspaceId,
      entries.map((e) => e.value),
    );
    // An entry whose device is gone or no longer holds the tag (a leftover) is dropped by the check.
    const devices = entries.flatMap(({ sk, value }) => {
      const device = records.get(value);
      return device && keep(device) ? [{ sk, value: device }] : [];
    });
    return { devices };
  };
  // A page's devices in one round (its BatchGetItem calls at once), then rounds of INDEX_BATCH.
  let size = pageSize ?? INDEX_BATCH;
  let last: string | undefined;
  for await (const entry of ids) {
    if (entry.sk === last) continue; // a device under two values of the key: only a leftover entry does that
    last = entry.sk;
    batch.push(entry);
    if (batch.length < size) continue;
    yield await fetch(batch);
    batch = [];
    size = INDEX_BATCH;
  }
  if (batch.length) yield await fetch(batch);
}

/**
 * The workspace's devices matching a search, oldest first (ID order), streamed and paged as the
 * device list is (`limit`, `cursor`, `next`), with their fleet names and identities. Read from the
 * index when the query has a clause of strings on a tag or the firmware version (`tags.k = "v"`,
 * `firmware_version IN (…)`), in one pass otherwise (query/plan.ts). The caller has checked that the workspace is the caller's and
 * the fleets are its own; only the workspace's partition is ever read, so no other account's
 * device can match. `workspace` is its record, or its ID (its name is then read once, by the
 * first device's account).
 * @throws ValidationError when the cursor is not one of this search.
 */
export const searchDevices = async (db: Db, workspace: WorkspaceRecord | string, search: DeviceSearch, page: PageQuery = {}): Promise<StreamedList<Device>> => {
  const workspaceId = typeof workspace === 'string' ? workspace : workspace.id;
  const list = listNameOf(workspaceId, search);
  const { prefix } = collection.devicesOfWorkspace(workspaceId);
  const after = startOf(list, page, prefix);
  const fleetIds = search.fleetIds?.length ? search.fleetIds : undefined;
  let record = typeof workspace === 'string' ? undefined : workspace;
  const names = fleetNameCache(db, workspaceId);
  const recordOf = async (device: DeviceRecord) =>
    (record ??= (await getWorkspaceOfAccount(db, device.account_id, workspaceId)) ?? ({ name: '' } as WorkspaceRecord));
  async function* source(): AsyncGenerator<Keyed<Device>> {
    if (!search.query) {
      // The plain list (a page of v3's list, or a fleet's): its identities in one parallel pass.
      const identities = identityJoin(readIdentitiesOfWorkspace(db, workspaceId, after?.slice(prefix.length), pageSizeOf(page)));
      try {
        for await (const devices of readDevicesOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page), fleetIds })) {
          await names.learn(devices.map((d) => d.value));
          for (const { sk, value } of devices)
            yield { sk, value: toDevice(value, names.of(value.fleet_id), await recordOf(value), await identities.of(value.id)) };
        }
      } finally {
        await identities.close();
      }
      return;
    }
    for await (const found of matchingRecords(db, workspaceId, { ...search, fleetIds }, after, pageSizeOf(page))) {
      const { devices } = found;
      if (!devices.length) continue;
      // Their identities from the device items themselves (a Query only for devices written before they listed them).
      const [identities] = await Promise.all([
        identitiesOfDevices(
          db,
          workspaceId,
          devices.map((d) => d.value),
        ),
        names.learn(devices.map((d) => d.value)),
      ]);
      for (const { sk, value } of devices) yield { sk, value: toDevice(value, names.of(value.fleet_id), await recordOf(value), identities.get(value.id)) };
    }
  }
  return paginate(list, source(), page);
};
