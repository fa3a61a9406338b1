import { countUpItem } from '../../../lambdas/stores/limits-store';
import type { Db } from '../../../lambdas/shared/clients';

const db = { table: 'registry' } as Db;
const key = { pk: 'ACC#acc-1', sk: 'WKS#wks-1' };
const update = (item: ReturnType<typeof countUpItem>) => (item as { Update: Record<string, unknown> }).Update;

describe('the transaction item that counts a create against a quota', () => {
  it('adds one to a count of what the workspace holds, while it is below the limit and the limits read still hold', () => {
    expect(update(countUpItem(db, key, 'identities', { max: 5, rev: 3, found: { kind: 'counting' } }))).toEqual({
      TableName: 'registry',
      Key: key,
      UpdateExpression: 'ADD #count :one',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting_at) AND #count < :max AND limits_rev = :rev',
      ExpressionAttributeNames: { '#count': 'identities_count' },
      ExpressionAttributeValues: { ':one': 1, ':max': 5, ':rev': 3 },
    });
  });

  it('starts a count that is not there from what the holder was found to hold, provided no create started it meanwhile', () => {
    expect(
      update(countUpItem(db, { pk: 'ACC#acc-1', sk: 'ACCOUNT' }, 'workspaces_per_account', { max: 5, found: { kind: 'start', counted: 2 } })),
    ).toMatchObject({
      UpdateExpression: 'SET #count = :count',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(deleting_at) AND attribute_not_exists(#count) AND attribute_not_exists(limits_rev)',
      ExpressionAttributeNames: { '#count': 'workspaces_count' },
      ExpressionAttributeValues: { ':count': 3 },
    });
  });

  it('counts a quota per day on the day it counts, and starts a later day afresh at one (never an earlier one)', () => {
    const today = { max: 2, found: { kind: 'counting' } as const, today: '2026-05-01' };
    const fresh = { max: 2, found: { kind: 'new-day' } as const, today: '2026-05-02' };

    expect(update(countUpItem(db, key, 'exports_per_day', today))).toMatchObject({
      UpdateExpression: 'ADD #count :one',
      ConditionExpression:
        'attribute_exists(pk) AND attribute_not_exists(deleting_at) AND #day = :today AND #count < :max AND attribute_not_exists(limits_rev)',
      ExpressionAttributeNames: { '#count': 'exports_today', '#day': 'exports_day' },
      ExpressionAttributeValues: { ':today': '2026-05-01', ':one': 1, ':max': 2 },
    });
    expect(update(countUpItem(db, key, 'rollouts_per_day', fresh))).toMatchObject({
      UpdateExpression: 'SET #day = :today, #count = :one',
      ConditionExpression:
        'attribute_exists(pk) AND attribute_not_exists(deleting_at) AND (attribute_not_exists(#day) OR #day < :today) AND attribute_not_exists(limits_rev)',
      ExpressionAttributeNames: { '#count': 'rollouts_today', '#day': 'rollouts_day' },
    });
  });
});
