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
 * | state execution | DEV#<dev>      | STATEROL#<rol>  |
 * | counted change  | DEV#<dev>      | CNT#<event id>  |
 * | superseded job  | DEV#<dev>      | ROLLED#<rol>#<job or FOTA sort key> |
 * | rollout         | WKS#<wks>      | ROLLOUT#<rol>   |
 * | rollout counter | WKS#<wks>      | ROLLOUT#<rol>#C<n> |
 * | its continuous rollouts | WKS#<wks> | CONTINUOUS  |
 * | open condition  | DEV#<dev>      | COND#<uuid>     |
 * | alarm timer     | DEV#<dev>      | ALARMTIMER#<alr> |
 * | auth. sample    | DEV#<dev>      | AUTHSAMPLE      |
 * | device event    | DEV#<dev>      | EVT#<ts>#<type> |
 * | API key (meta)  | WKS#<wks>      | APIKEY#<key>    |
 * | API key (hash)  | APIKEY#<sha256>| APIKEY          |
 * | device identity | WKS#<wks>      | IDN#<dev>#<idn> |
 * | tag index entry | WKS#<wks>      | TAG#<key>#<len>#<value>#<dev> |
 * | integration     | WKS#<wks>      | INT#<int>       |
 * | group           | WKS#<wks>      | GRP#<grp>       |
 * | alarm rule      | WKS#<wks>      | ALARMRULE#<alr> |
 * | alarm backfill  | WKS#<wks>      | ALARMBACKFILL#<alr> |
 * | alarm           | WKS#<wks>      | ALARM#<alm>     |
 * | open alarm count| WKS#<wks>      | ALARMCOUNT#<nn> (16 shards) |
 * | open alarm guard| ALARMOPEN#<alr>#<dev> | ALARMOPEN |
 * | alarm transition| ALARMTX#<transition id> | ALARMTX |
 * | firmware version| WKS#<wks>      | FW#<fw>#<ver>   |
 * | data export     | WKS#<wks>      | EXPORT#<exp>    |
 * | delivery ledger | DELIVERY#<msg> | DELIVERY        |
 * | alarm notification sent | ALARMSENT#<transition> | <part> (`webhook`, `email#<address>`) |
 * | delivery log    | INTLOG#<wks>#<int> | <at>#<uuid> |
 * | console user    | USER#<sub>     | USER            |
 * | usage of a day  | WKS#<wks>      | USAGE#<date>    |
 * | request counter | RATE#<who>#<s> | RATE            |
 *
 * Workspaces hang under their account, so reading one with the caller's account can only find
 * the caller's own: isolation is in the key, not in a filter.
 *
 * Global secondary indexes (REGISTRY_INDEXES): `sweep` (REGISTRY_SWEEP_INDEX) finds the minute
 * sweep's due work, a rollout's devices by state and a workspace's alarms that are not closed; `firmware-use` (REGISTRY_FIRMWARE_USE_INDEX)
 * finds the FOTA that use a firmware version.
 */
export interface ItemKey {
  pk: string;
  sk: string;
}

export const accountKey = (accountId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: 'ACCOUNT' });
export const workspaceKey = (accountId: string, workspaceId: string): ItemKey => ({ pk: `ACC#${accountId}`, sk: `WKS#${workspaceId}` });
export const fleetKey = (workspaceId: string, fleetId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `FLT#${fleetId}` });
/** Device items' sort keys begin so (and no other item's: a locator's is `DEVICE`). */
export const DEVICE_SORT_KEY_PREFIX = 'DEV#';
export const deviceKey = (workspaceId: string, deviceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `${DEVICE_SORT_KEY_PREFIX}${deviceId}` });
/** The workspace's scheduling clock: fleet-wide schedulings advance it, device moves check it (stores/fleet-history.ts). */
export const scheduleClockKey = (workspaceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: 'CLOCK' });
export const deviceLocatorKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: 'DEVICE' });
/** Sort keys of jobs start with this; the registry stream's filter and readers of its records use it. */
export const JOB_SORT_KEY_PREFIX = 'JOB#';
/** The sort key of a FOTA (a prefix of itself, as the registry stream's filter takes it). */
export const FOTA_SORT_KEY_PREFIX = 'FOTA';
/** A device's record in a fleet-wide desired-state rollout (kind `state`): one per device and rollout, the job item's sibling. */
export const STATE_EXECUTION_SORT_KEY_PREFIX = 'STATEROL#';
export const stateExecutionKey = (deviceId: string, rolloutId: string): ItemKey => ({
  pk: `DEV#${deviceId}`,
  sk: `${STATE_EXECUTION_SORT_KEY_PREFIX}${rolloutId}`,
});
export const jobKey = (deviceId: string, name: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `${JOB_SORT_KEY_PREFIX}${name}` });
export const fotaKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: FOTA_SORT_KEY_PREFIX });
/** A condition a device opened over MQTT (`condition` on `j/up`), by the device's own uuid. */
export const conditionKey = (deviceId: string, uuid: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `COND#${uuid}` });
/** A condition the device closed, by its uuid: where a retried close (or a late open) finds the record it ended. */
export const closedConditionKey = (deviceId: string, uuid: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `CONDC#${uuid}` });
/** A close that came over MQTT before its opening (a standard queue keeps no order), by its uuid: kept until the opening comes. */
export const earlyCloseKey = (deviceId: string, uuid: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `CONDE#${uuid}` });
/** Sort keys of the workspace's condition records start with this (then the start, so a Query backwards reads newest first). */
export const CONDITION_SORT_KEY_PREFIX = 'COND#';
/** A condition's record in its workspace's partition (stores/condition-store.ts): open or closed, by its start, device and uuid. */
export const conditionRecordKey = (workspaceId: string, start: string, deviceId: string, uuid: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `${CONDITION_SORT_KEY_PREFIX}${sortableTs(start)}#${deviceId}#${uuid}`,
});
/** Sort keys of a device's copies of its condition records start with this (then the start). */
export const DEVICE_CONDITION_SORT_KEY_PREFIX = 'CONDH#';
/** The device's copy of a condition's record, in its partition: what a list of one device's conditions reads. */
export const deviceConditionRecordKey = (deviceId: string, start: string, uuid: string): ItemKey => ({
  pk: `DEV#${deviceId}`,
  sk: `${DEVICE_CONDITION_SORT_KEY_PREFIX}${sortableTs(start)}#${uuid}`,
});
/** Sort keys of a device's alarm timers start with this. */
export const ALARM_TIMER_SORT_KEY_PREFIX = 'ALARMTIMER#';
/** The timer of one alarm rule on one device (stores/alarm-timer-store.ts): at most one per rule and device. */
export const alarmTimerKey = (deviceId: string, ruleId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `${ALARM_TIMER_SORT_KEY_PREFIX}${ruleId}` });
/** The minute of the last `authentication` event forwarded for an unverified token naming a device (one a minute). */
/** Sort keys of a device's event log start with this (newest last: `ts` is RFC 3339 with microseconds). */
export const DEVICE_EVENT_SORT_KEY_PREFIX = 'EVT#';
/** One event of a device's event log (stores/device-event-store.ts), by its `ts` and type: a retry rewrites the same item. */
export const deviceEventKey = (deviceId: string, ts: string, type: string): ItemKey => ({
  pk: `DEV#${deviceId}`,
  sk: `${DEVICE_EVENT_SORT_KEY_PREFIX}${sortableTs(ts)}#${type}`,
});
/**
 * An event `ts` in one width, microseconds (`…15.915Z` → `…15.915000Z`, a whole second →
 * `….000000Z`), so that text order is time order whichever door stamped it. Other forms are kept.
 */
export const sortableTs = (ts: string) => {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(ts);
  return match ? `${match[1]}.${(match[2] ?? '').padEnd(6, '0')}Z` : ts;
};
export const authenticationSampleKey = (deviceId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: 'AUTHSAMPLE' });
export const apiKeyMetaKey = (workspaceId: string, keyId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `APIKEY#${keyId}` });
export const apiKeyHashKey = (hash: string): ItemKey => ({ pk: `APIKEY#${hash}`, sk: 'APIKEY' });
export const identityKey = (workspaceId: string, deviceId: string, identityId: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `IDN#${deviceId}#${identityId}`,
});
export const integrationKey = (workspaceId: string, integrationId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `INT#${integrationId}` });
/** A group (a saved query) of a workspace: in its partition, so that deleting the workspace's partition removes it. */
export const groupKey = (workspaceId: string, groupId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `GRP#${groupId}` });
/** An alarm rule of a workspace: in its partition, read whole by the rules' cache; the notifier writes its `last_notification_error` by this key too. */
export const alarmRuleKey = (workspaceId: string, ruleId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `ALARMRULE#${ruleId}` });
/** Sort keys of alarm rules' backfills start with this. */
export const ALARM_BACKFILL_SORT_KEY_PREFIX = 'ALARMBACKFILL#';
/** A rule's backfill (stores/alarm-backfill-store.ts): its cursor over the workspace's devices, in the alarm timers' sweep partitions. */
export const alarmBackfillKey = (workspaceId: string, ruleId: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `${ALARM_BACKFILL_SORT_KEY_PREFIX}${ruleId}`,
});
/** An alarm (open, acknowledged or closed): in its workspace's partition, its ID sorting it by when it opened. */
export const alarmKey = (workspaceId: string, alarmId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `ALARM#${alarmId}` });
/**
 * One of the 16 shards (by alarm ID) of a workspace's counts of alarms not closed, by severity:
 * an alarm's open adds one to its shard in its transaction, its close takes it away in its own.
 */
export const alarmCountKey = (workspaceId: string, shard: number): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `ALARMCOUNT#${String(shard).padStart(2, '0')}`,
});
/** What the partition keys of a rule's open-alarm guards begin with: the device ID follows. */
export const openAlarmGuardsOfRule = (ruleId: string) => `ALARMOPEN#${ruleId}#`;
/**
 * The guard of a rule's alarm on a device that is not closed: at most one exists, since an alarm
 * opens only in the transaction that creates it and closes in the one that deletes it. Found by
 * rule and device alone (the detection closes by them).
 */
export const openAlarmGuardKey = (ruleId: string, deviceId: string): ItemKey => ({ pk: `${openAlarmGuardsOfRule(ruleId)}${deviceId}`, sk: 'ALARMOPEN' });
/** The sweep-index partition of a workspace's alarms that are not closed (their guards' entries, sorted by alarm ID). */
export const unclosedAlarmsPartition = (workspaceId: string) => `ALARMS#${workspaceId}`;
/** The record of an alarm transition by its transition ID: a retried batch or sweep finds it and writes nothing twice. */
export const alarmTransitionKey = (transitionId: string): ItemKey => ({ pk: `ALARMTX#${transitionId}`, sk: 'ALARMTX' });
/** A registered firmware version (its image is the S3 object `<wks>/<fw>/<ver>`). Firmware IDs and versions never hold "#". */
export const firmwareKey = (workspaceId: string, firmwareId: string, version: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `FW#${firmwareId}#${version}`,
});
/** A data export of a workspace (its file is the S3 object `exports/<wks>/<exp>.<format>`). */
export const exportKey = (workspaceId: string, exportId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `EXPORT#${exportId}` });
/** Which integrations already received a forward message that is being retried (by its first SQS message ID). */
/** A console user (Cognito `sub`) → the account it belongs to. */
export const userKey = (sub: string): ItemKey => ({ pk: `USER#${sub}`, sk: 'USER' });
export const deliveryKey = (messageId: string): ItemKey => ({ pk: `DELIVERY#${messageId}`, sk: 'DELIVERY' });
/**
 * The mark that one part of an alarm transition's notification was sent (its webhook event, or
 * its e-mail to one address), by the transition's id: a redelivered transition sends it no more.
 */
export const alarmNotificationSentKey = (transitionId: string, part: string): ItemKey => ({ pk: `ALARMSENT#${transitionId}`, sk: part });
/** One webhook POST in an integration's delivery log (`at`: the POST's start, ISO 8601: text order is time order). */
export const deliveryLogKey = (workspaceId: string, integrationId: string, at: string, id: string): ItemKey => ({
  pk: `INTLOG#${workspaceId}#${integrationId}`,
  sk: `${at}#${id}`,
});
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
 * The registry's one sparse index (DESIGN §11): only items that carry both `sweep_pk` and
 * `sweep_sk` are in it, four kinds of entries, one pair per item:
 * - a rollout's devices (every job or FOTA item of a rollout, and what a later scheduling left of
 *   one it replaced): partition `RD#<rollout>#<shard>`, sort key `<status>#<time>#<device>`, so that
 *   one state of one rollout is a key range (the devices list, the sweep's releases, cancels and
 *   timeouts);
 * - a job or FOTA of no rollout with a deadline, while it is open: partition `DUE#T<shard>`, sort
 *   key its deadline;
 * - a rollout with work due (a release, a deadline, a cancel, a seal): partition `DUE#R`, sort key
 *   when;
 * - an alarm timer (an offline, silent or condition rule's `for_seconds` on one device):
 *   partition `DUE#A<shard>`, sort key its due time then `#<workspace>`; a rule's backfill
 *   (`ALARMBACKFILL#<alr>`, in its workspace's partition) shares those partitions (shard by rule);
 * - an alarm that is not closed (its guard, `ALARMOPEN#<alr>#<dev>`, which lives exactly as long):
 *   partition `ALARMS#<workspace>` ({@link unclosedAlarmsPartition}), sort key the alarm's ID, so
 *   that the open and acknowledged alarms list reads no closed one.
 * The minute sweep queries what is due, never scans. Keys only: a small, cheap index whose writes
 * cost one unit per entry (each index also slows every write of DynamoDB Local severalfold: one
 * index serves the three). A reader gets the items it needs from the table.
 */
export const REGISTRY_SWEEP_INDEX: IndexDefinition = { name: 'sweep', partitionKey: 'sweep_pk', sortKey: 'sweep_sk', projection: 'KEYS_ONLY' };

/**
 * Partitions a per-device index entry spreads over (a rollout's devices, deadlines): an index
 * partition takes about 1,000 writes/s and a hot index throttles the table's own writes
 * (back-pressure), while a fleet-wide scheduling writes ~10,000 items/s, each with an entry. 16
 * partitions take 16,000/s, above the registry's warm 10,000; a reader queries all 16.
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations
 */
export const INDEX_SHARDS = 16;

/** Which of the INDEX_SHARDS partitions a device's entries go to: FNV-1a of its ID, so always the same. */
export const shardOfDevice = (deviceId: string, shards = INDEX_SHARDS) => {
  let hash = 0x811c9dc5;
  for (let i = 0; i < deviceId.length; i++) hash = Math.imul(hash ^ deviceId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % shards;
};

/** The sweep-index partition of a deadline (a job or FOTA of no rollout): one of INDEX_SHARDS, by device. */
export const deadlinePartition = (shard: number) => `DUE#T${String(shard).padStart(2, '0')}`;

/** Every deadline partition, as the sweep reads them. */
export const DEADLINE_PARTITIONS: readonly string[] = Array.from({ length: INDEX_SHARDS }, (_, k) => deadlinePartition(k));

/**
 * The sweep-index partition of alarm timers (stores/alarm-timer-store.ts): one of INDEX_SHARDS, by
 * device, as deadlines (10,000 devices disconnecting at once write their timers in a burst).
 */
export const alarmTimerPartition = (shard: number) => `DUE#A${String(shard).padStart(2, '0')}`;

/** Every alarm timer partition, as the sweep reads them. */
export const ALARM_TIMER_PARTITIONS: readonly string[] = Array.from({ length: INDEX_SHARDS }, (_, k) => alarmTimerPartition(k));

/** The sweep-index partition of rollouts with work due (one entry per rollout: never hot). */
export const ROLLOUT_DUE_PARTITION = 'DUE#R';

/**
 * The sweep index attributes of an entry due at `dueAt` (ms since the epoch) in `partition`: the
 * sort key is the due time in ISO 8601 UTC (fixed width, so text order is time order), then
 * `suffix` when one is given.
 */
export const sweepEntry = (dueAt: number, partition: string, suffix = '') => ({
  [REGISTRY_SWEEP_INDEX.partitionKey]: partition,
  [REGISTRY_SWEEP_INDEX.sortKey]: `${new Date(dueAt).toISOString()}${suffix}`,
});

/**
 * The registry's sparse index of the FOTA that use a registered firmware version: a FOTA scheduled
 * for one carries `firmware_ref` (the version's, in the device's shard: {@link firmwareUseRef}),
 * and its `status` is the sort key, so that "is a FOTA that has not ended using it?" is one
 * keys-only query per shard, never a scan. FOTA of versions never registered are not in it.
 */
export const REGISTRY_FIRMWARE_USE_INDEX: IndexDefinition = { name: 'firmware-use', partitionKey: 'firmware_ref', sortKey: 'status', projection: 'KEYS_ONLY' };

/** A registered firmware version's reference: `<workspace>#<firmware>#<version>`. */
export const firmwareRefOf = (workspaceId: string, firmwareId: string, version: string) => `${workspaceId}#${firmwareId}#${version}`;

/**
 * The `firmware_ref` a device's FOTA of a registered version carries: the version's reference in
 * the device's shard (one of INDEX_SHARDS), so that a fleet-wide FOTA of 100,000 devices writes 16
 * index partitions, not one (REGISTRY_FIRMWARE_USE_INDEX). FOTA written before carry the
 * reference alone.
 */
export const firmwareUseRef = (firmwareRef: string, deviceId: string) => `${firmwareRef}#${String(shardOfDevice(deviceId)).padStart(2, '0')}`;

/** Every `firmware_ref` a FOTA of the version may carry: each shard's, and the reference alone (FOTA written before shards). */
export const firmwareUseRefs = (firmwareRef: string) => [
  firmwareRef,
  ...Array.from({ length: INDEX_SHARDS }, (_, shard) => `${firmwareRef}#${String(shard).padStart(2, '0')}`),
];

/**
 * The registry's TTL attribute (seconds since the epoch), which the stack's table and both local
 * runtimes' tables expire items by: the forwarder's delivery ledger (integration-store.ts), the
 * rollout count ledger (rollout-counter-store.ts), the webhooks' delivery logs (delivery-log-store.ts), the rate counters of each key's seconds
 * (request-counter-store.ts), the devices' sampled authentication minutes
 * (authentication-sample-store.ts), the devices' event logs (device-event-store.ts), exports past their lifetime (domain/data/export-requests.ts and
 * export-runs.ts) and the marks of sent alarm notifications (alarm-notification-store.ts) write their expiry in it.
 */
export const REGISTRY_TTL_ATTRIBUTE = 'ttl';

/** Every index of the registry, in the order they were added (a deploy adds one per update). */
export const REGISTRY_INDEXES: readonly IndexDefinition[] = [REGISTRY_SWEEP_INDEX, REGISTRY_FIRMWARE_USE_INDEX];

/** The sweep-index partition of one shard of a rollout's devices. */
export const rolloutDevicesPartition = (rolloutId: string, shard: number) => `RD#${rolloutId}#${String(shard).padStart(2, '0')}`;

/**
 * The sort key of a device in a rollout's index partition: its state, the time it reached it
 * (queued: when scheduled, so snapshot order is device ID order; pending and in progress: when it
 * was released, the time its deadline counts from; ended: when it ended), and the device.
 */
export const rolloutDeviceSortKey = (status: string, time: string, deviceId: string) => `${status}#${time}#${deviceId}`;

/** What a rollout device's index sort key says: its state, that time, the device. */
export const readRolloutDeviceSortKey = (sortKey: string) => {
  const [status, time, deviceId] = sortKey.split('#');
  return { status, time, deviceId };
};

/** The sweep index attributes of a device of a rollout, in a state since `time`. */
export const rolloutDevicesEntry = (rolloutId: string, deviceId: string, status: string, time: string) => ({
  [REGISTRY_SWEEP_INDEX.partitionKey]: rolloutDevicesPartition(rolloutId, shardOfDevice(deviceId)),
  [REGISTRY_SWEEP_INDEX.sortKey]: rolloutDeviceSortKey(status, time, deviceId),
});

/** A rollout of a workspace: the record of one fleet-wide scheduling. */
export const ROLLOUT_SORT_KEY_PREFIX = 'ROLLOUT#';
/** The list of a workspace's continuous rollouts and their targets, which the registry stream reads (continuous-rollout-store.ts). */
export const continuousRolloutsKey = (workspaceId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: 'CONTINUOUS' });
export const rolloutKey = (workspaceId: string, rolloutId: string): ItemKey => ({ pk: `WKS#${workspaceId}`, sk: `${ROLLOUT_SORT_KEY_PREFIX}${rolloutId}` });

/**
 * Counter items a rollout's counts are spread over, so that concurrent transactions seldom meet on
 * one: the registry stream's batches pick one of the first CHANGE_COUNTERS; the scheduling's
 * writes in flight (WRITE_CONCURRENCY at most) each use the one after those of its slot.
 */
export const CHANGE_COUNTERS = 8;
export const schedulingCounter = (slot: number) => CHANGE_COUNTERS + slot;
export const rolloutCounterKey = (workspaceId: string, rolloutId: string, shard: number): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `${ROLLOUT_SORT_KEY_PREFIX}${rolloutId}#C${shard}`,
});

/** The mark that one registry stream record (by its event ID) is counted in its rollouts' counts. */
export const countedChangeKey = (deviceId: string, eventId: string): ItemKey => ({ pk: `DEV#${deviceId}`, sk: `CNT#${eventId}` });

/** What a device's job or FOTA was in a rollout once a later scheduling replaced it (the item's sort key after the rollout). */
export const supersededKey = (deviceId: string, rolloutId: string, itemSortKey: string): ItemKey => ({
  pk: `DEV#${deviceId}`,
  sk: `ROLLED#${rolloutId}#${itemSortKey}`,
});

/** What kind of item a key names, for readers of the table's change stream: a job, a FOTA, a state rollout's device, or another item. */
export const itemKindOf = (key: ItemKey): 'job' | 'fota' | 'state' | undefined => {
  if (!key.pk.startsWith('DEV#')) return undefined;
  if (key.sk.startsWith(JOB_SORT_KEY_PREFIX)) return 'job';
  if (key.sk.startsWith(STATE_EXECUTION_SORT_KEY_PREFIX)) return 'state';
  return key.sk === FOTA_SORT_KEY_PREFIX ? 'fota' : undefined;
};

/** Sort keys of the devices' tag index entries start with this (stores/device-tag-index.ts). */
export const TAG_INDEX_SORT_KEY_PREFIX = 'TAG#';
/**
 * The sort-key prefix of the tag index entries of one tag (`key` = `value`): the value's length
 * comes before it, so that no value is a prefix of another's entries (values may hold `#`); the
 * device ID follows, so that the entries of a tag are in device ID order, as the device list.
 */
export const tagIndexPrefix = (key: string, value: string) => `${TAG_INDEX_SORT_KEY_PREFIX}${key}#${value.length}#${value}#`;
/** A device's entry in the tag index of one of its tags (tag keys never hold `#`). */
export const tagIndexKey = (workspaceId: string, deviceId: string, key: string, value: string): ItemKey => ({
  pk: `WKS#${workspaceId}`,
  sk: `${tagIndexPrefix(key, value)}${deviceId}`,
});

/** Partition and sort-key prefix of a collection. */
export const collection = {
  workspacesOfAccount: (accountId: string) => ({ pk: `ACC#${accountId}`, prefix: 'WKS#' }),
  fleetsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'FLT#' }),
  devicesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'DEV#' }),
  jobsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: JOB_SORT_KEY_PREFIX }),
  stateExecutionsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: STATE_EXECUTION_SORT_KEY_PREFIX }),
  conditionsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: 'COND#' }),
  conditionsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: CONDITION_SORT_KEY_PREFIX }),
  conditionRecordsOfDevice: (deviceId: string) => ({ pk: `DEV#${deviceId}`, prefix: DEVICE_CONDITION_SORT_KEY_PREFIX }),
  apiKeysOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'APIKEY#' }),
  // Identities sit in their workspace's partition so that listing devices reads them in one query.
  identitiesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'IDN#' }),
  identitiesOfDevice: (workspaceId: string, deviceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: `IDN#${deviceId}#` }),
  integrationsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'INT#' }),
  groupsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'GRP#' }),
  alarmRulesOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'ALARMRULE#' }),
  alarmsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'ALARM#' }),
  deliveriesOfIntegration: (workspaceId: string, integrationId: string) => ({ pk: `INTLOG#${workspaceId}#${integrationId}`, prefix: '' }),
  firmwaresOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'FW#' }),
  usageOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'USAGE#' }),
  rolloutsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: ROLLOUT_SORT_KEY_PREFIX }),
  /** A rollout's item and its counter items (rollout IDs have one length: no other rollout's key starts so). */
  rolloutWithCounters: (workspaceId: string, rolloutId: string) => ({ pk: `WKS#${workspaceId}`, prefix: `${ROLLOUT_SORT_KEY_PREFIX}${rolloutId}` }),
  exportsOfWorkspace: (workspaceId: string) => ({ pk: `WKS#${workspaceId}`, prefix: 'EXPORT#' }),
};
