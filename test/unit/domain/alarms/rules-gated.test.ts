import type { Db } from '../../../../lambdas/shared/clients';
import { rulesGatedBy } from '../../../../lambdas/domain/alarms/rule-cache';

/** A registry that fails any request: what a reader that sends none may be given. */
const noRequests = new Proxy({} as Db, {
  get: () => {
    throw new Error('a request was sent');
  },
});

describe('alarm rules behind the settings a path reads anyway', () => {
  it('answers no rule, and sends no request, for a workspace whose settings say it never had one', async () => {
    const asked: string[] = [];
    const rules = rulesGatedBy(async (accountId, workspaceId) => {
      asked.push(`${accountId}/${workspaceId}`);
      return { alarm_rules_version: 0 };
    });
    await expect(rules({ db: noRequests }, { account_id: 'acc-1', workspace_id: 'wks-1' })).resolves.toEqual([]);
    await expect(rules({ db: noRequests }, { account_id: 'acc-1', workspace_id: 'wks-2' })).resolves.toEqual([]);
    expect(asked).toEqual(['acc-1/wks-1', 'acc-1/wks-2']);
  });

  it('reads the rules of a workspace that has had one', async () => {
    const rules = rulesGatedBy(async () => ({ alarm_rules_version: 3 }));
    await expect(rules({ db: noRequests }, { account_id: 'acc-1', workspace_id: 'wks-1' })).rejects.toThrow('a request was sent');
  });
});
