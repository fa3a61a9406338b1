/**
 * Hourly rollups of the `dynamodb` backend, and the stamps of sealed hours that a late write puts
 * so that their rollups are computed again.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../shared/clients';
import { putAll } from '../items';
import type { Row } from './dynamodb-rows';
import { HOUR_MS, hourKey, rollupPartition, SEALED_AFTER_MS, STAMP_LIFETIME_DAYS, STAMP_MARGIN_MS, stampPartition, TIMESERIES_TTL_ATTRIBUTE } from './keys';
import type { HourRollup, RollupRow, RollupStore, RollupVersion } from './types';

/** A rollup's rows as its `r` attribute holds them: `[device_id, count, sum, min, max, skipped]`, a sum past a double's range as text. */
type RowJson = [string, number, number | string, number | string, number | string, number];
const finiteOrText = (n: number) => (Number.isFinite(n) ? n : String(n));

/** All pages of a Query of one partition's hours in [fromHour, toHour). */
const queryHours = async (
  db: Db,
  pk: string,
  fromHour: number,
  toHour: number,
  { consistent = false, projection }: { consistent?: boolean; projection?: string },
) => {
  const items: Array<Record<string, unknown>> = [];
  let ExclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await db.doc.send(
      new QueryCommand({
        TableName: db.table,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':pk': pk, ':from': hourKey(fromHour), ':to': hourKey(toHour - HOUR_MS) },
        ...(projection ? { ProjectionExpression: projection } : {}),
        ConsistentRead: consistent,
        ExclusiveStartKey,
      }),
    );
    items.push(...(page.Items ?? []));
    ExclusiveStartKey = page.LastEvaluatedKey;
  } while (ExclusiveStartKey);
  return items;
};

/** A rollup item holds at most this much: an hour with more devices than fit is never kept. */
const ROLLUP_MAX_BYTES = 300 * 1024;

const versionOf = (item: Record<string, unknown>): RollupVersion => ({
  hour: Date.parse(item.sk as string),
  retentionVersion: item.v as number,
  ...(typeof item.s === 'string' ? { stamp: item.s } : {}),
});

export const rollupStore = (db: Db, writeConcurrency: number): RollupStore => ({
  async stampsOfHours(workspaceId, fromHour, toHour) {
    if (fromHour >= toHour) return new Map();
    const items = await queryHours(db, stampPartition(workspaceId), fromHour, toHour, { consistent: true });
    return new Map(items.map((item) => [Date.parse(item.sk as string), { token: item.t as string, pending: item.p === true }]));
  },

  async versionsOfField(workspaceId, fieldHash, fromHour, toHour) {
    if (fromHour >= toHour) return new Map();
    const items = await queryHours(db, rollupPartition(workspaceId, fieldHash), fromHour, toHour, { projection: 'sk, v, s' });
    return new Map(items.map((item) => [Date.parse(item.sk as string), versionOf(item)]));
  },

  async rollupsOfField(workspaceId, fieldHash, fromHour, toHour) {
    if (fromHour >= toHour) return new Map();
    const items = await queryHours(db, rollupPartition(workspaceId, fieldHash), fromHour, toHour, {});
    return new Map(
      items.map((item): [number, HourRollup] => {
        const rows = (JSON.parse(item.r as string) as RowJson[]).map(
          ([device_id, count, sum, min, max, skipped]): RollupRow => ({ device_id, count, sum: Number(sum), min: Number(min), max: Number(max), skipped }),
        );
        return [Date.parse(item.sk as string), { ...versionOf(item), rows, expires: item[TIMESERIES_TTL_ATTRIBUTE] as number }];
      }),
    );
  },

  async keepRollups(workspaceId, fieldHash, rollups) {
    const items = [];
    const tooLarge: number[] = [];
    for (const { hour, stamp, retentionVersion, rows, expires } of rollups) {
      const r = JSON.stringify(
        rows.map((row): RowJson => [row.device_id, row.count, finiteOrText(row.sum), finiteOrText(row.min), finiteOrText(row.max), row.skipped]),
      );
      if (Buffer.byteLength(r) > ROLLUP_MAX_BYTES) {
        tooLarge.push(hour);
        continue;
      }
      items.push({
        pk: rollupPartition(workspaceId, fieldHash),
        sk: hourKey(hour),
        v: retentionVersion,
        r,
        ...(stamp === undefined ? {} : { s: stamp }),
        [TIMESERIES_TTL_ATTRIBUTE]: expires,
      });
    }
    await putAll(db, items, writeConcurrency);
    return tooLarge;
  },
});

/** The sealed hours (as a clock reading `now` sees them) that rows hold points in, by workspace. */
export const sealedHoursOf = (rows: Iterable<Pick<Row, 'workspace_id' | 'ms'>>, now: number) => {
  const sealedBefore = now - SEALED_AFTER_MS + STAMP_MARGIN_MS;
  const hours = new Map<string, Set<number>>();
  for (const row of rows) {
    const hour = Math.floor(row.ms / HOUR_MS) * HOUR_MS;
    if (hour + HOUR_MS > sealedBefore) continue;
    const of = hours.get(row.workspace_id) ?? new Set<number>();
    hours.set(row.workspace_id, of.add(hour));
  }
  return hours;
};

/**
 * Stamps hours with a fresh token (one per call), pending or final, in one request per 25 hours.
 * Stamps expire STAMP_LIFETIME_DAYS after they are put.
 */
export const stampHours = async (db: Db, hours: Map<string, Set<number>>, pending: boolean, now: number, writeConcurrency: number) => {
  if (!hours.size) return;
  const t = randomUUID();
  const expires = Math.ceil(now / 1000) + STAMP_LIFETIME_DAYS * 86_400;
  const items = [...hours].flatMap(([workspaceId, of]) =>
    [...of].map((hour) => ({ pk: stampPartition(workspaceId), sk: hourKey(hour), t, ...(pending ? { p: true } : {}), [TIMESERIES_TTL_ATTRIBUTE]: expires })),
  );
  await putAll(db, items, writeConcurrency);
};
