import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalCognito } from './cognito-local';
import type { Bootstrap } from './runtime-types';

/**
 * The first account, its workspace and API key, in the registry table (`table`, or REGISTRY_TABLE). With a data folder it is remembered in
 * `bootstrap.json` there (the key's secret is kept only as a hash in the table), so that a
 * restart prints the same key.
 */
export const bootstrap = async (dataDir: string | undefined, devApiKey: string | undefined, table?: string): Promise<Bootstrap> => {
  const { createAccount } = await import('../lambdas/domain/tenancy/accounts');
  const { authenticateApiKey } = await import('../lambdas/domain/tenancy/api-keys');
  const { documentClient, registryDb: defaultDb } = await import('../lambdas/shared/clients');
  // A named table (the cloud assembly's) is used as named, whatever REGISTRY_TABLE said when env.ts loaded.
  const db = table ? { doc: documentClient(new DynamoDBClient({})), table } : undefined;
  const registryDb = () => db ?? defaultDb();
  const file = dataDir && join(dataDir, 'bootstrap.json');
  const remembered = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Bootstrap) : undefined;
  const wanted = devApiKey ?? remembered?.api_key;
  if (wanted) {
    const caller = await authenticateApiKey(registryDb(), wanted).catch(() => undefined);
    if (caller) return { account_id: caller.accountId, workspace_id: caller.workspaceId, api_key: wanted };
  }
  const account = await createAccount(registryDb(), { name: 'local', apiKey: devApiKey });
  const result = { account_id: account.account_id, workspace_id: account.workspace_id, api_key: account.api_key };
  if (file) writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`, { mode: 0o600 });
  return result;
};

const DEFAULT_USER_EMAIL = 'admin@fleetstream.local';

/** A password the pool's policy accepts (≥ 12 characters with lower and upper case and digits). */
const randomPassword = () => `Fs-${randomBytes(12).toString('base64url')}-a1A`;

/**
 * The first console user: created (confirmed, with a permanent password) on the first start, found
 * again on the next (its password is remembered beside the pool in the data folder; a given
 * password replaces it), and made a member of the bootstrap account (in the registry table
 * `table`, or REGISTRY_TABLE).
 */
export const ensureFirstUser = async (
  cognito: LocalCognito,
  accountId: string,
  wanted: { email?: string; password?: string },
  dataDir: string | undefined,
  table?: string,
) => {
  const { addUserToAccount } = await import('../lambdas/domain/tenancy/users');
  const { documentClient, registryDb: defaultDb } = await import('../lambdas/shared/clients');
  // A named table (the cloud assembly's) is used as named, whatever REGISTRY_TABLE said when env.ts loaded.
  const registryDb = () => (table ? { doc: documentClient(new DynamoDBClient({})), table } : defaultDb());
  const file = dataDir && join(dataDir, 'first-user.json');
  const remembered = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { email: string; password: string }) : undefined;
  const email = wanted.email ?? remembered?.email ?? DEFAULT_USER_EMAIL;
  const password = wanted.password ?? (remembered?.email === email ? remembered.password : undefined) ?? randomPassword();
  const UserPoolId = cognito.userPoolId;
  type Attributes = { Name: string; Value: string }[];
  let user = await cognito.call<{ Username: string; UserAttributes: Attributes }>('AdminGetUser', { UserPoolId, Username: email }).catch(() => undefined);
  if (!user) {
    await cognito.call('AdminCreateUser', {
      UserPoolId,
      Username: email,
      MessageAction: 'SUPPRESS',
      TemporaryPassword: password,
      UserAttributes: [
        { Name: 'email', Value: email },
        { Name: 'email_verified', Value: 'true' },
      ],
    });
    user = await cognito.call('AdminGetUser', { UserPoolId, Username: email });
  }
  await cognito.call('AdminSetUserPassword', { UserPoolId, Username: email, Password: password, Permanent: true });
  const sub = user!.UserAttributes.find((a) => a.Name === 'sub')!.Value;
  await addUserToAccount(registryDb(), { sub, email }, accountId);
  if (file) writeFileSync(file, `${JSON.stringify({ email, password }, null, 2)}\n`, { mode: 0o600 });
  return { email, password, sub };
};
