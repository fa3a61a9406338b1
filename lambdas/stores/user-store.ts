import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import type { AccountRecord } from './account-store';
import type { FleetRecord } from './fleet-store';
import { putNew, strip } from './items';
import { accountKey, userKey } from './keys';
import { workspaceWithDefaultFleetWrites, type WorkspaceRecord } from './workspace-store';

/** A console user (a Cognito user, by its `sub`) and the account it belongs to. */
export interface UserRecord {
  sub: string;
  email: string;
  account_id: string;
  created_at: string;
}

/** The account a console user belongs to, or undefined when it has none yet. */
export const getUserAccount = async (db: Db, sub: string) => {
  const { Item } = await db.doc.send(new GetCommand({ TableName: db.table, Key: userKey(sub), ConsistentRead: true }));
  return Item ? strip<UserRecord>(Item) : undefined;
};

/**
 * Creates a user's account with its first workspace and default fleet, all or nothing; the user
 * item is written only if absent, so a second run for the same user (a retried trigger) fails
 * the whole transaction and leaves the first account alone.
 */
export const createAccountForUser = async (db: Db, user: UserRecord, account: AccountRecord, workspace: WorkspaceRecord, fleet: FleetRecord) => {
  await db.doc.send(
    new TransactWriteCommand({
      TransactItems: [
        putNew(db, userKey(user.sub), user),
        putNew(db, accountKey(account.id), account),
        ...workspaceWithDefaultFleetWrites(db, workspace, fleet),
      ],
    }),
  );
};

/** Links a user to an existing account, only if the user has none yet (the local first user → the bootstrap account). */
export const linkUserToAccount = async (db: Db, user: UserRecord) => {
  await db.doc.send(new TransactWriteCommand({ TransactItems: [putNew(db, userKey(user.sub), user)] }));
};
