/**
 * Key builders of the registry table (single-table design). Every item has `pk` and `sk`:
 *
 * | item            | pk             | sk              |
 * |-----------------|----------------|-----------------|
 * | account         | ACC#<acc>      | ACCOUNT         |
 * | workspace       | ACC#<acc>      | WKS#<wks>       |
 * | fleet           | WKS#<wks>      | FLT#<flt>       |
 * | device          | WKS#<wks>      | DEV#<dev>       |
 * | device locator  | DEV#<dev>      | DEVICE          |
 * | job             | DEV#<dev>      | JOB#<name>      |
 * | FOTA            | DEV#<dev>      | FOTA            |
 * | API key (meta)  | WKS#<wks>      | APIKEY#<key>    |
 * | API key (hash)  | APIKEY#<sha256>| APIKEY          |
 * | device identity | WKS#<wks>      | IDN#<dev>#<idn> |
 * | integration     | WKS#<wks>      | INT#<int>       |
 * | delivery ledger | DELIVERY#<msg> | DELIVERY        |
 *
 * Workspaces hang under their account, so reading one with the caller's account can only find
 * the caller's own: isolation is in the key, not in a filter.
 */
export interface ItemKey {
  pk: string;
  sk: string;
}

export const accountKey = (accountId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: 'ACCOUNT' });
export const workspaceKey = (accountId: string, workspaceId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: `WKS#${workspaceId}` });
export const fleetKey = (workspaceId: string, fleetId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `FLT#${fleetId}` });
export const deviceKey = (workspaceId: string, deviceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `DEV#${deviceId}` });
export const deviceLocatorKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: 'DEVICE' });
export const jobKey = (deviceId: string, name: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `JOB#${name}` });
export const fotaKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: 'FOTA' });
export const apiKeyMetaKey = (workspaceId: string, keyId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `APIKEY#${keyId}` });
export const apiKeyHashKey = (hash: string): ItemKey => ({ pk: `APIKEY#${hash}`, sk: 'APIKEY' });
export const identityKey = (workspaceId: string, deviceId: string, identityId: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `IDN#${deviceId}#${identityId}`,
});
export const integrationKey = (workspaceId: string, integrationId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `INT#${integrationId}` });
/** Which integrations already received a forward message that is being retried (by its first SQS message ID). */
export const deliveryKey = (messageId: string): ItemKey => ({ pk: `DELIVERY#${messageId}`, sk: 'DELIVERY' });

/** Partition and sort-key prefix of a collection. */
export const collection = {
  workspacesOfAccount: (accountId: string) => ({ pk: `ACC#${accountId}`, prefix: 'WKS#' }),
  fleetsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'FLT#' }),
  devicesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'DEV#' }),
  jobsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: 'JOB#' }),
  apiKeysOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'APIKEY#' }),
  // Identities sit in their workspace's partition so that listing devices reads them in one query.
  identitiesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'IDN#' }),
  identitiesOfDevice: (workspaceId: string, deviceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: `IDN#${deviceId}#` }),
  integrationsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'INT#' }),
};
