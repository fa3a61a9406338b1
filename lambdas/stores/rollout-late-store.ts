import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { JobStatus } from '../schemas/job';
import type { ItemKey } from './keys';
import { CHANGE_COUNTERS } from './keys';
import { counterUpdate } from './rollout-counter-store';

const RETRYABLE = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);
const MAX_ATTEMPTS = 6;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A late device's job or FOTA item of a continuous rollout, as stored (stores/job-store.ts storedJobItem, storedFotaItem). */
export type LateItem = ItemKey & { status: JobStatus; workspace_id: string; rollout_id: string; scheduled_at: string };

/**
 * Gives a device that matched a continuous rollout late its job or FOTA, counted in the rollout in
 * the same transaction (+1 to its total and to the item's state, on one of the change counters):
 * only when the device holds no item of that name, or one scheduled before the rollout
 * (`scheduled_at` below the rollout's, which the late item carries too). So a device the rollout
 * already reached, by its snapshot or by an earlier (or retried) stream batch, and a device
 * scheduled again since, are left as they are, and counted once.
 * @returns whether the item was written.
 */
export const putLateItem = async (db: Db, item: LateItem, at: string): Promise<boolean> => {
  const count = counterUpdate(
    db,
    { workspace_id: item.workspace_id, rollout_id: item.rollout_id, total: 1, counts: { [item.status]: 1 } },
    Math.floor(Math.random() * CHANGE_COUNTERS),
    at,
  );
  for (let attempt = 1; ; attempt++) {
    try {
      await db.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: db.table,
                Item: item,
                ConditionExpression: 'attribute_not_exists(pk) OR scheduled_at < :at',
                ExpressionAttributeValues: { ':at': item.scheduled_at },
              },
            },
            count,
          ],
        }),
      );
      return true;
    } catch (error) {
      const codes = ((error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? []).map((r) => r.Code ?? 'None');
      if (codes[0] === 'ConditionalCheckFailed') return false;
      if (attempt >= MAX_ATTEMPTS || !codes.some((code) => RETRYABLE.has(code))) throw error;
      await pause(Math.random() * Math.min(1000, 20 * 2 ** attempt));
    }
  }
};
