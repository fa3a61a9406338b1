/**
 * The points of a write, checked and turned into rows: each with its time, arrival and dedup tail,
 * ready to be packed.
 */
import { digest8 } from '../../shared/digest';
import { PayloadTooLargeError, ValidationError, type ErrorDetail } from '../../shared/errors';
import { isCloudStamp, parseTime, type Time } from '../../shared/timestamps';
import type { StoredPoint } from './dynamodb-dedup';
import { KEY_PART } from './keys';
import type { PointToStore } from './types';

// DynamoDB limits: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html
const ITEM_MAX_BYTES = 400 * 1024;
/** Largest `sequence`: a point's place in its request. */
const SEQUENCE_MAX = 9999;
/** A cloud-stamped point's origin: hex digits (`PointToStore.origin`). */
const ORIGIN = /^[0-9a-f]{8,32}$/;
/** What a pack adds to a point beyond its payload, at most: keys, names, IDs, tag, numbers. */
const POINT_OVERHEAD_BYTES = 1024;

export interface Row extends StoredPoint {
  workspace_id: string;
  payloadJson: string;
  /** The workspace's retention when written (days); undefined: kept. */
  retentionDays?: number;
}

/** Key times run from year 0000 to 9999. */
export const KEY_MS = { min: Date.parse('0000-01-01T00:00:00Z'), max: Date.parse('9999-12-31T23:59:59.999Z') };
const inKeyRange = (t?: Time): t is Time => t !== undefined && t.ms >= KEY_MS.min && t.ms <= KEY_MS.max;

/**
 * The points of a write as rows, checked all at once so that a bad point stores nothing.
 * @throws ValidationError naming each bad field; PayloadTooLargeError when a point could not fit an item.
 */
export const toRows = (points: PointToStore[]): Row[] => {
  const details: ErrorDetail[] = [];
  const oversize: ErrorDetail[] = [];
  const rows = points.map((point, i): Row => {
    const bad = (field: string, message: string) => details.push({ field: `points[${i}].${field}`, message });
    for (const field of ['workspace_id', 'fleet_id', 'device_id', 'tag'] as const) {
      if (typeof point[field] !== 'string' || !KEY_PART.test(point[field])) bad(field, 'Must be 1 to 128 letters, digits, "_", "." or "-".');
    }
    const time = typeof point.timestamp_device === 'string' ? parseTime(point.timestamp_device) : undefined;
    const arrival = typeof point.timestamp_in === 'string' ? parseTime(point.timestamp_in) : undefined;
    if (!inKeyRange(time)) bad('timestamp_device', 'Must be an RFC 3339 date in years 0000–9999.');
    if (!inKeyRange(arrival)) bad('timestamp_in', 'Must be an RFC 3339 date in years 0000–9999.');
    const payloadJson = JSON.stringify(point.payload) as string | undefined;
    if (payloadJson === undefined) bad('payload', 'Must be a JSON value.');
    const sequence = point.sequence ?? 0;
    if (!Number.isInteger(sequence) || sequence < 0 || sequence > SEQUENCE_MAX) bad('sequence', `Must be an integer from 0 to ${SEQUENCE_MAX}.`);
    const cloud = time !== undefined && isCloudStamp(time);
    if (cloud && (typeof point.origin !== 'string' || !ORIGIN.test(point.origin))) bad('origin', 'A cloud-stamped point needs its origin: 8 to 32 hex digits.');
    const retention = point.retention_days;
    if (retention !== undefined && (!Number.isInteger(retention) || retention < 1)) bad('retention_days', 'Must be a whole number of days, at least 1.');
    if (payloadJson !== undefined && Buffer.byteLength(payloadJson) + POINT_OVERHEAD_BYTES > ITEM_MAX_BYTES) {
      oversize.push({ field: `points[${i}].payload`, message: 'The point is larger than a DynamoDB item (400 KB).' });
    }
    return {
      workspace_id: point.workspace_id,
      device_id: point.device_id,
      tag: point.tag,
      fleet_id: point.fleet_id,
      ms: time?.ms ?? 0,
      us: time?.us ?? 0,
      inMs: arrival?.ms ?? 0,
      sequence,
      tail: cloud ? (point.origin ?? '') : digest8(payloadJson ?? ''),
      payload: point.payload,
      payloadJson: payloadJson ?? '',
      retentionDays: retention,
    };
  });
  if (details.length) throw new ValidationError(`Invalid data points: ${details.map((d) => d.field).join(', ')}.`, { details });
  if (oversize.length) throw new PayloadTooLargeError('Data points too large to store.', { details: oversize });
  return rows;
};
