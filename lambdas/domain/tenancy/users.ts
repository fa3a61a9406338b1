import type { Db } from '../../shared/clients';
import { UnauthorizedError } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import { createAccountForUser, getUserAccount, linkUserToAccount, type UserRecord } from '../../stores/user-store';
import { initialAccountCounts } from '../../stores/limits-store';
import { newWorkspace } from './workspaces';

/** A signed-in console user, as the user pool names it. */
export interface PoolUser {
  /** The user's `sub`: stable for the user's life, unlike the e-mail address. */
  sub: string;
  email: string;
}

const isTransactionCanceled = (error: unknown) => (error as Error)?.name === 'TransactionCanceledException';

/**
 * The account of a console user, created on first call with its first workspace (named after the
 * user's e-mail) and that workspace's `default` fleet. Idempotent: a second call, or two calls at
 * once, return the same account, and only one account is ever created per user.
 */
export const ensureUserAccount = async (db: Db, user: PoolUser): Promise<UserRecord> => {
  const existing = await getUserAccount(db, user.sub);
  if (existing) return existing;
  const created_at = nowIso();
  const account = { id: newId('acc'), name: user.email, created_at, ...initialAccountCounts() };
  const { workspace, fleet } = newWorkspace(account.id, { name: 'default', description: `First workspace of ${user.email}` });
  const record: UserRecord = { sub: user.sub, email: user.email, account_id: account.id, created_at };
  try {
    await createAccountForUser(db, record, account, workspace, fleet);
    return record;
  } catch (error) {
    // Another run made the user's account first: it is the one.
    const winner = isTransactionCanceled(error) ? await getUserAccount(db, user.sub) : undefined;
    if (winner) return winner;
    throw error;
  }
};

/**
 * Makes a user a member of an existing account unless it already has one (the local runtime's
 * first user joins the bootstrap account, so that it sees what the dev API key sees).
 * Returns the user's account, whichever it is.
 */
export const addUserToAccount = async (db: Db, user: PoolUser, accountId: string): Promise<UserRecord> => {
  const existing = await getUserAccount(db, user.sub);
  if (existing) return existing;
  const record: UserRecord = { sub: user.sub, email: user.email, account_id: accountId, created_at: nowIso() };
  try {
    await linkUserToAccount(db, record);
    return record;
  } catch (error) {
    const winner = isTransactionCanceled(error) ? await getUserAccount(db, user.sub) : undefined;
    if (winner) return winner;
    throw error;
  }
};

/**
 * The caller a verified session stands for: the user's account, with no bound workspace.
 * @throws UnauthorizedError when the user has no account (its sign-up trigger has not run).
 */
export const authenticateUser = async (db: Db, sub: string): Promise<Caller> => {
  const user = await getUserAccount(db, sub);
  if (!user) throw new UnauthorizedError('This user has no account yet: sign in again to create it.');
  return { accountId: user.account_id, userId: sub };
};
