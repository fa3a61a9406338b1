/**
 * Packs: the items that hold a write's rows, one workspace and retention each, in key order,
 * within a span of time and a size.
 */
import { digest8 } from '../../shared/digest';
import { microsBetween, type Time } from '../../shared/timestamps';
import { compare } from './dynamodb-dedup';
import type { Row } from './dynamodb-rows';
import { expiresAt, keyTime, PACK_SPAN_MICROS, packKey, TIMESERIES_TTL_ATTRIBUTE } from './keys';

/**
 * What a pack's `p` attribute holds: the devices and fleets once, then one row per point, in key
 * order: `[device index, fleet index, tag, µs after the pack's earliest point, timestamp_in as ms
 * after the earliest point's millisecond, sequence, tail, payload]`.
 */
export interface PackBody {
  d: string[];
  f: string[];
  r: Array<[number, number, string, number, number, number, string, unknown]>;
}

/**
 * A pack's largest size: four write units (one per started KB). Larger packs would write the same
 * units per byte, but a read that wants few points of a pack reads all of it.
 */
const PACK_MAX_BYTES = 4096;

/** The bytes DynamoDB counts for a string attribute: its name and its UTF-8 value. */
const attributeBytes = (name: string, value: string) => Buffer.byteLength(name) + Buffer.byteLength(value);

/** A pack being filled: its rows in key order, its dictionaries, and the size its item will have. */
export class PackBuilder {
  readonly rows: Row[] = [];
  private readonly devices = new Map<string, number>();
  private readonly fleets = new Map<string, number>();
  /** Bytes of the item so far, as DynamoDB counts them: keys, attribute names and the body's JSON. */
  bytes: number;

  constructor(
    readonly workspaceId: string,
    readonly earliest: Time,
    readonly retentionDays: number | undefined,
  ) {
    this.bytes =
      attributeBytes('pk', `TS#${workspaceId}#0`) +
      attributeBytes('sk', `${keyTime(earliest)}#!${'0'.repeat(16)}`) +
      attributeBytes('p', '{"d":[],"f":[],"r":[]}') +
      // A number counts its name and about one byte per two digits, plus one: 10 digits of seconds.
      (retentionDays === undefined ? 0 : Buffer.byteLength(TIMESERIES_TTL_ATTRIBUTE) + 6);
  }

  /** Whether a row lies within the pack's span. */
  spans(row: Row) {
    return microsBetween(this.earliest, row) < PACK_SPAN_MICROS;
  }

  /** The bytes a row adds: its JSON and a comma, and its device and fleet when they are new to the pack. */
  cost(row: Row) {
    const named = (map: Map<string, number>, name: string) => (map.has(name) ? 0 : Buffer.byteLength(JSON.stringify(name)) + 1);
    const json = this.rowJson(row, this.devices.get(row.device_id) ?? this.devices.size, this.fleets.get(row.fleet_id) ?? this.fleets.size);
    return Buffer.byteLength(json) + 1 + named(this.devices, row.device_id) + named(this.fleets, row.fleet_id);
  }

  add(row: Row) {
    this.bytes += this.cost(row);
    if (!this.devices.has(row.device_id)) this.devices.set(row.device_id, this.devices.size);
    if (!this.fleets.has(row.fleet_id)) this.fleets.set(row.fleet_id, this.fleets.size);
    this.rows.push(row);
  }

  private rowJson(row: Row, device: number, fleet: number) {
    const after = microsBetween(this.earliest, row);
    return `[${device},${fleet},${JSON.stringify(row.tag)},${after},${row.inMs - this.earliest.ms},${row.sequence},${JSON.stringify(row.tail)},${row.payloadJson}]`;
  }

  /**
   * The pack's item: its ID is a digest of its points, so that the same write rewrites the same
   * item. Under a retention it expires with its latest point, and not before its latest arrival.
   */
  item() {
    const rows = this.rows.map((row) => this.rowJson(row, this.devices.get(row.device_id)!, this.fleets.get(row.fleet_id)!));
    const body = `{"d":${JSON.stringify([...this.devices.keys()])},"f":${JSON.stringify([...this.fleets.keys()])},"r":[${rows.join(',')}]}`;
    const packId = `${digest8(body)}${digest8(`${this.workspaceId}\n${keyTime(this.earliest)}\n${body}`)}`;
    const item: { pk: string; sk: string; p: string; [TIMESERIES_TTL_ATTRIBUTE]?: number } = { ...packKey(this.workspaceId, this.earliest, packId), p: body };
    if (this.retentionDays !== undefined) {
      const latest = this.rows[this.rows.length - 1].ms;
      item[TIMESERIES_TTL_ATTRIBUTE] = expiresAt(latest, this.retentionDays, Math.max(...this.rows.map((r) => r.inMs)));
    }
    return item;
  }
}

/**
 * Packs of rows: per workspace and retention (an item has one expiry), in key order, each within
 * PACK_SPAN_MICROS and PACK_MAX_BYTES.
 */
export const packRows = (rows: Row[]) => {
  const byWorkspace = new Map<string, Row[]>();
  for (const row of rows) {
    const group = `${row.workspace_id}\n${row.retentionDays ?? ''}`;
    const of = byWorkspace.get(group);
    if (of) of.push(row);
    else byWorkspace.set(group, [row]);
  }
  const packs: PackBuilder[] = [];
  for (const ofWorkspace of byWorkspace.values()) {
    ofWorkspace.sort(compare);
    const { workspace_id: workspaceId, retentionDays } = ofWorkspace[0];
    let pack: PackBuilder | undefined;
    for (const row of ofWorkspace) {
      if (!pack?.spans(row) || pack.bytes + pack.cost(row) > PACK_MAX_BYTES) {
        pack = new PackBuilder(workspaceId, row, retentionDays);
        packs.push(pack);
      }
      pack.add(row);
    }
  }
  return packs;
};
