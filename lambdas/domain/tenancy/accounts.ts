import type { Db } from '../../shared/clients';
import { newId, nowIso } from '../../shared/ids';
import { createAccountWithWorkspace } from '../../stores/account-store';
import { initialAccountCounts } from '../../stores/limits-store';
import { newApiKey } from './api-keys';
import { newWorkspace } from './workspaces';

export interface NewAccountInput {
  name: string;
  workspaceName?: string;
  keyName?: string;
  /** Use this secret for the first key (the local runtime's FLEETSTREAM_DEV_API_KEY). */
  apiKey?: string;
}

/**
 * Creates an account, its first workspace (with its default fleet) and an API key bound to it,
 * all in one transaction. Returns the key's secret, shown only here.
 */
export const createAccount = async (db: Db, input: NewAccountInput) => {
  const created_at = nowIso();
  const account = { id: newId('acc', created_at), name: input.name, created_at, ...initialAccountCounts() };
  const { workspace, fleet } = newWorkspace(account.id, { name: input.workspaceName ?? 'default', description: '' }, { apiKeys: 1 });
  const { record, secret } = newApiKey(account.id, workspace.id, { name: input.keyName ?? 'bootstrap' }, input.apiKey);
  await createAccountWithWorkspace(db, account, workspace, fleet, record);
  return { account_id: account.id, workspace_id: workspace.id, default_fleet_id: fleet.id, api_key_id: record.id, api_key: secret };
};
