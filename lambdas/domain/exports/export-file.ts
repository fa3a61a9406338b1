import { EXPORT_LIFETIME_DAYS } from '../../buckets';
import { exportsBucket } from '../../shared/env';
import type { ExportRecord } from '../../stores/export-store';
import type { ObjectRef } from '../../stores/object-store';

/** A day in milliseconds. */
export const DAY_MS = 86_400_000;

/** Where an export's file is: its key in the exports bucket. */
export const fileOf = (record: Pick<ExportRecord, 'key'>): ObjectRef => ({ bucket: exportsBucket(), key: record.key });

/** A time (ms since the epoch) as ISO 8601 text. */
export const isoOf = (ms: number) => new Date(ms).toISOString();

/** When an export that has ended is gone: its lifetime after it ended. */
export const expiryOf = (endedMs: number) => endedMs + EXPORT_LIFETIME_DAYS * DAY_MS;
