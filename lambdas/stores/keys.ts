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
 * | schedule clock  | WKS#<wks>      | CLOCK           |
 * | job             | DEV#<dev>      | JOB#<name>      |
 * | FOTA            | DEV#<dev>      | FOTA            |
 * | open condition  | DEV#<dev>      | COND#<uuid>     |
 * | API key (meta)  | WKS#<wks>      | APIKEY#<key>    |
 * | API key (hash)  | APIKEY#<sha256>| APIKEY          |
 * | device identity | WKS#<wks>      | IDN#<dev>#<idn> |
 * | integration     | WKS#<wks>      | INT#<int>       |
 * | firmware version| WKS#<wks>      | FW#<fw>#<ver>   |
 * | data export     | WKS#<wks>      | EXPORT#<exp>    |
 * | delivery ledger | DELIVERY#<msg> | DELIVERY        |
 * | console user    | USER#<sub>     | USER            |
 * | usage of a day  | WKS#<wks>      | USAGE#<date>    |
 * | request counter | RATE#<who>#<s> | RATE            |
 *
 * Workspaces hang under their account, so reading one with the caller's account can only find
 * the caller's own: isolation is in the key, not in a filter.
 *
 * Global secondary indexes: `sweep` (REGISTRY_SWEEP_INDEX) finds the minute sweep's due work;
 * `firmware-use` (REGISTRY_FIRMWARE_USE_INDEX) finds the FOTA that use a firmware version.
 */
export interface ItemKey {
  pk: string;
  sk: string;
}

export const accountKey = (accountId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: 'ACCOUNT' });
export const workspaceKey = (accountId: string, workspaceId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: `WKS#${workspaceId}` });
export const fleetKey = (workspaceId: string, fleetId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `FLT#${fleetId}` });
export const deviceKey = (workspaceId: string, deviceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `DEV#${deviceId}` });
/** The workspace's scheduling clock: fleet-wide schedulings advance it, device moves check it (stores/fleet-history.ts). */
export const scheduleClockKey = (workspaceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: 'CLOCK' });
export const deviceLocatorKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: 'DEVICE' });
/** Sort keys of jobs start with this; the registry stream's filter and readers of its records use it. */
export const JOB_SORT_KEY_PREFIX = 'JOB#';
/** The sort key of a FOTA (a prefix of itself, as the registry stream's filter takes it). */
export const FOTA_SORT_KEY_PREFIX = 'FOTA';
export const jobKey = (deviceId: string, name: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `${JOB_SORT_KEY_PREFIX}${name}` });
export const fotaKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: FOTA_SORT_KEY_PREFIX });
/** A condition a device opened over MQTT (`condition` on `j/up`), by the device's own uuid. */
export const conditionKey = (deviceId: string, uuid: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `COND#${uuid}` });
export const apiKeyMetaKey = (workspaceId: string, keyId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `APIKEY#${keyId}` });
export const apiKeyHashKey = (hash: string): ItemKey => ({ pk: `APIKEY#${hash}`, sk: 'APIKEY' });
export const identityKey = (workspaceId: string, deviceId: string, identityId: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `IDN#${deviceId}#${identityId}`,
});
export const integrationKey = (workspaceId: string, integrationId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `INT#${integrationId}` });
/** A registered firmware version (its image is the S3 object `<wks>/<fw>/<ver>`). Firmware IDs and versions never hold "#". */
export const firmwareKey = (workspaceId: string, firmwareId: string, version: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `FW#${firmwareId}#${version}` });
/** A data export of a workspace (its file is the S3 object `exports/<wks>/<exp>.<format>`). */
export const exportKey = (workspaceId: string, exportId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `EXPORT#${exportId}` });
/** Which integrations already received a forward message that is being retried (by its first SQS message ID). */
/** A console user (Cognito `sub`) → the account it belongs to. */
export const userKey = (sub: string): ItemKey => ({ pk: `USER#${sub}`, sk: 'USER' });
export const deliveryKey = (messageId: string): ItemKey => ({ pk: `DELIVERY#${messageId}`, sk: 'DELIVERY' });
/** A workspace's usage counters of one UTC day (`YYYY-MM-DD`): text order is day order. */
export const usageKey = (workspaceId: string, day: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `USAGE#${day}` });
/**
 * The requests one caller (an API key's ID, or a console user's `user:<sub>`) made in one second
 * (epoch seconds): a partition per caller and second, so that a busy key's counters spread.
 */
export const requestCounterKey = (caller: string, second: number): ItemKey => ({ pk: `RATE#${caller}#${second}`, sk: 'RATE' });

/** A global secondary index of a table, as data: the stack and both local runtimes create it from this. */
export interface IndexDefinition {
  readonly name: string;
  /** String attributes: an item lacking either is not in the index (sparse). */
  readonly partitionKey: string;
  readonly sortKey: string;
  /** KEYS_ONLY: the index holds the table's keys and its own; a reader gets the item itself. */
  readonly projection: 'KEYS_ONLY';
}

/**
 * The registry's sparse index of due work (DESIGN §11): only items that carry both `sweep_pk` and
 * `sweep_sk` are in it (queued devices of rate-limited rollouts, jobs and FOTA with a deadline,
 * rollouts that need work), so the minute sweep queries what is due, never scans. Keys only: a
 * small, cheap index whose writes cost one unit per entry; the sweep reads the items it acts on.
 */
export const REGISTRY_SWEEP_INDEX: IndexDefinition = { name: 'sweep', partitionKey: 'sweep_pk', sortKey: 'sweep_sk', projection: 'KEYS_ONLY' };

/** The partition of the sweep index that holds due entries (one today; more spread a hot one's writes). */
export const SWEEP_DUE_PARTITION = 'DUE#0';

/**
 * The sweep index attributes of an entry due at `dueAt` (ms since the epoch): the sort key starts
 * with the due time in ISO 8601 UTC (fixed width, so text order is time order), then `suffix`
 * when one is given (`#…`, to tell apart entries due in the same millisecond).
 */
export const sweepEntry = (dueAt: number, suffix = '', partition = SWEEP_DUE_PARTITION) => ({
  [REGISTRY_SWEEP_INDEX.partitionKey]: partition,
  [REGISTRY_SWEEP_INDEX.sortKey]: `${new Date(dueAt).toISOString()}${suffix}`,
});

/**
 * The registry's sparse index of the FOTA that use a registered firmware version: a FOTA scheduled
 * for one carries `firmware_ref` (FIRMWARE_REF of the version), and its `status` is the sort key,
 * so that "is a FOTA that has not ended using it?" is a few keys-only queries of one partition,
 * one per state, never a scan. FOTA of versions never registered are not in it.
 */
export const REGISTRY_FIRMWARE_USE_INDEX: IndexDefinition = { name: 'firmware-use', partitionKey: 'firmware_ref', sortKey: 'status', projection: 'KEYS_ONLY' };

/** The `firmware_ref` of a FOTA scheduled for a registered firmware version (REGISTRY_FIRMWARE_USE_INDEX). */
export const firmwareRefOf = (workspaceId: string, firmwareId: string, version: string) => `${workspaceId}#${firmwareId}#${version}`;

/** What kind of item a key names, for readers of the table's change stream: a job, a FOTA, or another item. */
export const itemKindOf = (key: ItemKey): 'job' | 'fota' | undefined => {
  if (!key.pk.startsWith('DEV#')) return undefined;
  if (key.sk.startsWith(JOB_SORT_KEY_PREFIX)) return 'job';
  return key.sk === FOTA_SORT_KEY_PREFIX ? 'fota' : undefined;
};

/** Partition and sort-key prefix of a collection. */
export const collection = {
  workspacesOfAccount: (accountId: string) => ({ pk: `ACC#${accountId}`, prefix: 'WKS#' }),
  fleetsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'FLT#' }),
  devicesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'DEV#' }),
  jobsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: JOB_SORT_KEY_PREFIX }),
  conditionsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: 'COND#' }),
  apiKeysOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'APIKEY#' }),
  // Identities sit in their workspace's partition so that listing devices reads them in one query.
  identitiesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'IDN#' }),
  identitiesOfDevice: (workspaceId: string, deviceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: `IDN#${deviceId}#` }),
  integrationsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'INT#' }),
  firmwaresOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'FW#' }),
  usageOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'USAGE#' }),
  exportsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'EXPORT#' }),
};
