import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { InitializeMiddleware } from '@smithy/types';
import { getWorkspaceUsage, recordUsage, usageBuffer, UsageTally } from '../../../lambdas/domain/limits/usage';
import { documentClient, type Db } from '../../../lambdas/shared/clients';
import { newAccount } from '../../helpers/callers';
import { freshTable } from '../../helpers/db';

let db: Db;
beforeAll(async () => {
  db = await freshTable();
});

const DAY = '2026-04-01';
const at = Date.parse(`${DAY}T12:00:00Z`);

/** One count of `counter` for a workspace on DAY. */
const one = (workspaceId: string, counter: 'api_requests' | 'webhook_deliveries' = 'api_requests', n = 1) => {
  const tally = new UsageTally();
  tally.add(workspaceId, at, { [counter]: n });
  return tally;
};

const totalsOf = async (account: Awaited<ReturnType<typeof newAccount>>) =>
  (await getWorkspaceUsage(db, account.caller, account.workspace_id, { start: DAY, end: DAY })).totals;

/** The same table through a client whose first `failures` UpdateItem calls are refused as a throttled table refuses them. */
const failingFirst = (failures: number): Db => {
  const client = new DynamoDBClient({ maxAttempts: 1 });
  let left = failures;
  const middleware: InitializeMiddleware<any, any> = (next, context) => async (args) => {
    if (context.commandName === 'UpdateItemCommand' && left > 0) {
      left -= 1;
      throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });
    }
    return next(args);
  };
  client.middlewareStack.add(middleware, { step: 'initialize', name: 'throttleFirst' });
  return { doc: documentClient(client), table: db.table };
};

describe('usage counters on DynamoDB Local', () => {
  it('adds a batch’s counts per workspace and day, and answers every day of a range with the totals', async () => {
    const [a, b] = [await newAccount(db), await newAccount(db)];
    const tally = new UsageTally();
    tally.add(a.workspace_id, at, { points_in: 10, points_stored: 8, points_refused: 2 });
    tally.add(a.workspace_id, at + 24 * 3600_000, { points_in: 1, points_stored: 1 });
    tally.add(b.workspace_id, at, { webhook_failures: 3 });

    expect(await recordUsage(db, tally)).toEqual([]);
    await recordUsage(db, one(a.workspace_id, 'webhook_deliveries', 4));

    const usage = await getWorkspaceUsage(db, a.caller, a.workspace_id, { start: '2026-03-31', end: '2026-04-02' });
    expect(usage.days.map((d) => [d.date, d.points_in, d.points_stored, d.points_refused, d.webhook_deliveries])).toEqual([
      ['2026-03-31', 0, 0, 0, 0],
      ['2026-04-01', 10, 8, 2, 4],
      ['2026-04-02', 1, 1, 0, 0],
    ]);
    expect(usage.totals).toEqual({
      points_in: 11,
      points_stored: 9,
      points_refused: 2,
      api_requests: 0,
      webhook_deliveries: 4,
      webhook_failures: 0,
      events_in: 0,
      events_refused: 0,
      up_messages_in: 0,
      up_messages_refused: 0,
    });
    expect((await totalsOf(b)).webhook_failures).toBe(3);
  });

  it('tries a write again past a passing throttle, and answers the days it could not write', async () => {
    const account = await newAccount(db);

    expect(await recordUsage(failingFirst(2), one(account.workspace_id, 'api_requests', 5))).toEqual([]);
    const failed = await recordUsage(failingFirst(10), one(account.workspace_id, 'api_requests', 7));

    expect(failed).toEqual([{ workspaceId: account.workspace_id, day: DAY, counts: expect.objectContaining({ api_requests: 7 }) }]);
    expect((await totalsOf(account)).api_requests).toBe(5);
  });
});

describe('a container’s buffer of counts', () => {
  it('writes at once after a quiet spell, keeps what comes within flushMs, and writes it with the first add after', async () => {
    const account = await newAccount(db);
    let now = 0;
    const buffer = usageBuffer(db, { flushMs: 10_000, now: () => now });

    await buffer.add(one(account.workspace_id));
    const first = (await totalsOf(account)).api_requests;
    now = 4_000;
    await buffer.add(one(account.workspace_id));
    await buffer.add(one(account.workspace_id));
    const kept = (await totalsOf(account)).api_requests;
    now = 10_000;
    await buffer.add(one(account.workspace_id));

    expect([first, kept, (await totalsOf(account)).api_requests]).toEqual([1, 1, 4]);
    now = 12_000;
    await buffer.add(one(account.workspace_id));
    await buffer.flush();
    expect((await totalsOf(account)).api_requests).toBe(5);
  });

  it('keeps a day whose write failed for the next write, counting it once', async () => {
    const account = await newAccount(db);
    let now = 0;
    const buffer = usageBuffer(failingFirst(4), { flushMs: 1000, now: () => now });

    await buffer.add(one(account.workspace_id, 'webhook_deliveries', 2));
    const afterFailure = (await totalsOf(account)).webhook_deliveries;
    now = 1000;
    await buffer.add(one(account.workspace_id, 'webhook_deliveries', 3));

    expect([afterFailure, (await totalsOf(account)).webhook_deliveries]).toEqual([0, 5]);
  });
});
