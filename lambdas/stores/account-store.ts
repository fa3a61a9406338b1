import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Db } from '../shared/clients';
import { apiKeyWrites, type ApiKeyRecord } from './api-key-store';
import type { FleetRecord } from './fleet-store';
import { putNew } from './items';
import type { AccountLimitFields } from './limits-store';
import { accountKey } from './keys';
import { workspaceWithDefaultFleetWrites, type WorkspaceRecord } from './workspace-store';

/** An account as stored: its own fields, and its count and limits of workspaces. */
export interface AccountRecord extends AccountLimitFields {
  id: string;
  name: string;
  created_at: string;
}

/** Creates an account with its first workspace, default fleet and API key, all or nothing. */
export const createAccountWithWorkspace = async (db: Db, account: AccountRecord, workspace: WorkspaceRecord, fleet: FleetRecord, key: ApiKeyRecord) => {
  await db.doc.send(
    new TransactWriteCommand({
      TransactItems: [putNew(db, accountKey(account.id), account), ...workspaceWithDefaultFleetWrites(db, workspace, fleet), ...apiKeyWrites(db, key)],
    }),
  );
};
