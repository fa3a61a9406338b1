import { createAccount } from '../../lambdas/domain/tenancy/accounts';
import type { Db } from '../../lambdas/shared/clients';
import type { Caller } from '../../lambdas/shared/http';

/** A new account with its first workspace; the caller is its bootstrap key. */
export const newAccount = async (db: Db, name = 'test') => {
  const account = await createAccount(db, { name });
  const caller = { accountId: account.account_id, workspaceId: account.workspace_id, keyId: account.api_key_id } satisfies Caller;
  return { ...account, caller };
};
