/**
 * One partition of a read: its Query, its pages as they come, and the points of each item (a pack
 * unpacked, or a point of the layout before packs) that the read selects.
 */
import { QueryCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../../shared/clients';
import { addMicros, compareTime, type Time } from '../../shared/timestamps';
import type { StoredPoint } from './dynamodb-dedup';
import type { PackBody } from './dynamodb-packing';
import { KEY_MS } from './dynamodb-rows';
import { isPackKey, keyTime, keyTimeOf, legacyVersionOf, PACK_SPAN_MICROS } from './keys';
import type { TimeseriesRange } from './types';

/** An item as a Query returns it: a pack, or a point of the layout before packs. */
export interface Item {
  sk: string;
  p?: string;
  device_id?: string;
  tag?: string;
  fleet_id?: string;
  timestamp_in?: string;
  payload?: string;
}

/** Items per Query page once a partition is known to hold more. */
const PAGE_MAX = 1000;

const itemNames = { '#sk': 'sk', '#p': 'p', '#device': 'device_id', '#tag': 'tag', '#fleet': 'fleet_id', '#in': 'timestamp_in', '#payload': 'payload' };

/** Bounds of a query: included start, excluded end (none: unbounded). */
export interface Range {
  start?: Time;
  end?: Time;
}

/**
 * The Query of one partition: sort keys from `PACK_SPAN_MICROS` before the start (a pack that
 * starts there may hold points after it) to the end. Legacy point items are filtered by device,
 * tag and fleet here; packs are filtered as they are unpacked.
 */
export const partitionQuery = (db: Db, pk: string, range: Range, selection: TimeseriesRange, order: 'asc' | 'desc'): QueryCommandInput => {
  const names: Record<string, string> = { ...itemNames, '#pk': 'pk' };
  const values: Record<string, unknown> = { ':pk': pk };
  const conditions: string[] = [];
  if (range.start) {
    const from = addMicros(range.start, -PACK_SPAN_MICROS);
    values[':start'] = keyTime(from.ms < KEY_MS.min ? { ms: KEY_MS.min, us: 0 } : from);
    conditions.push('#sk >= :start');
  }
  if (range.end) {
    // A sort key never equals a bare key time, so `sk < end` keeps exactly the items before it.
    values[':end'] = keyTime(range.end);
    conditions.push('#sk < :end');
  }
  const key = conditions.length === 2 ? ' AND #sk BETWEEN :start AND :end' : conditions.length ? ` AND ${conditions[0]}` : '';
  const filters: string[] = [];
  const isOneOf = (name: string, prefix: string, list?: readonly string[]) => {
    if (!list?.length) return;
    for (const [i, value] of list.entries()) values[`:${prefix}${i}`] = value;
    filters.push(`(attribute_exists(#p) OR ${name} IN (${list.map((_, i) => `:${prefix}${i}`).join(', ')}))`);
  };
  isOneOf('#device', 'd', selection.devices);
  isOneOf('#tag', 't', selection.tags);
  isOneOf('#fleet', 'f', selection.fleets);
  return {
    TableName: db.table,
    KeyConditionExpression: `#pk = :pk${key}`,
    ...(filters.length ? { FilterExpression: filters.join(' AND ') } : {}),
    ProjectionExpression: Object.keys(itemNames).join(', '),
    ...(selection.consistent ? { ConsistentRead: true } : {}),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ScanIndexForward: order === 'asc',
  };
};

/**
 * The items of one partition, in sort-key order, a page at a time. The next page is requested as
 * soon as one arrives, so that the network overlaps the caller's work; at most two pages are held.
 * Pages start small, so that the first record comes quickly, and double up to PAGE_MAX.
 */
export async function* partitionPages(db: Db, input: QueryCommandInput, firstLimit: number): AsyncGenerator<Item[]> {
  let limit = firstLimit;
  const fetch = (ExclusiveStartKey: Record<string, unknown> | undefined, Limit: number): Promise<QueryCommandOutput> => {
    const page = db.doc.send(new QueryCommand({ ...input, ExclusiveStartKey, Limit }));
    // Observed now so that a failure while the caller is busy is not an unhandled rejection; the
    // caller still sees it when it awaits the page.
    page.catch(() => undefined);
    return page;
  };
  let pending: Promise<QueryCommandOutput> | undefined = fetch(undefined, firstLimit);
  while (pending) {
    const page: QueryCommandOutput = await pending;
    limit = Math.min(PAGE_MAX, limit * 2);
    pending = page.LastEvaluatedKey ? fetch(page.LastEvaluatedKey, limit) : undefined;
    if (page.Items?.length) yield page.Items as Item[];
  }
}

/** The devices, tags and fleets a read keeps (undefined: all). */
export interface Filters {
  devices?: Set<string>;
  tags?: Set<string>;
  fleets?: Set<string>;
}

export const filtersOf = (selection: TimeseriesRange): Filters => {
  const set = (list?: string[]) => (list?.length ? new Set(list) : undefined);
  return { devices: set(selection.devices), tags: set(selection.tags), fleets: set(selection.fleets) };
};

/** The points of an item that the read selects. */
export const pointsOf = (item: Item, range: Range, { devices, tags, fleets }: Filters): StoredPoint[] => {
  const selected = (p: StoredPoint) =>
    (!range.start || compareTime(p, range.start) >= 0) &&
    (!range.end || compareTime(p, range.end) < 0) &&
    (!devices || devices.has(p.device_id)) &&
    (!tags || tags.has(p.tag)) &&
    (!fleets || fleets.has(p.fleet_id));
  if (item.p !== undefined && isPackKey(item.sk)) {
    const earliest = keyTimeOf(item.sk)!;
    const body = JSON.parse(item.p) as PackBody;
    const points: StoredPoint[] = [];
    for (const [device, fleet, tag, after, inMs, sequence, tail, payload] of body.r) {
      const us = earliest.us + after;
      const point: StoredPoint = {
        ms: earliest.ms + Math.floor(us / 1000),
        us: us % 1000,
        device_id: body.d[device],
        tag,
        fleet_id: body.f[fleet],
        inMs: earliest.ms + inMs,
        sequence,
        tail,
        payload,
      };
      if (selected(point)) points.push(point);
    }
    return points;
  }
  // A point item of the layout before packs.
  const point: StoredPoint = {
    ...keyTimeOf(item.sk)!,
    device_id: item.device_id!,
    tag: item.tag!,
    fleet_id: item.fleet_id!,
    ...legacyVersionOf(item.sk),
    payload: JSON.parse(item.payload!),
    arrived: item.timestamp_in,
  };
  return selected(point) ? [point] : [];
};
