import type { Db } from '../../shared/clients';
import { ttlCache } from '../../shared/ttl-cache';
import { ALARM_RULES_VERSION, listAlarmRulesOfWorkspace, type AlarmRuleRecord } from '../../stores/alarm-rule-store';
import { getWorkspaceOfAccount } from '../../stores/workspace-store';

/** How long a container relies on what it read of a workspace's rules: a rule's change reaches the detection within this. */
export const ALARM_RULES_CACHE_MS = 10_000;

/** Workspaces whose rules a container remembers at most. */
const CACHED_WORKSPACES_MAX = 10_000;

/** Which workspace: the workspace item is under its account. */
export interface RulesOwner {
  account_id: string;
  workspace_id: string;
}

interface Cached {
  version: number;
  rules: AlarmRuleRecord[];
}

/**
 * A container's cache of workspaces' enabled alarm rules (DESIGN §16): every `ttlMs` at most, one
 * read of the workspace item for its `alarm_rules_version`, and the rules read again only when it
 * moved. A workspace that never had a rule costs that one read and no more.
 */
export const alarmRulesCache = (db: Db, { ttlMs = ALARM_RULES_CACHE_MS, now }: { ttlMs?: number; now?: () => number } = {}) => {
  const known = new Map<string, Cached>();
  const read = ttlCache(
    async (key: string): Promise<AlarmRuleRecord[]> => {
      const [accountId, workspaceId] = key.split('\n');
      const workspace = await getWorkspaceOfAccount(db, accountId, workspaceId, { consistent: false });
      const version = Number((workspace as Record<string, unknown> | undefined)?.[ALARM_RULES_VERSION] ?? 0);
      const cached = known.get(key);
      if (cached && cached.version === version) return cached.rules;
      const rules = version === 0 ? [] : (await listAlarmRulesOfWorkspace(db, workspaceId)).filter((rule) => rule.enabled);
      if (known.size >= CACHED_WORKSPACES_MAX) known.delete(known.keys().next().value!);
      known.set(key, { version, rules });
      return rules;
    },
    { ttlMs, max: CACHED_WORKSPACES_MAX, now },
  );
  return (owner: RulesOwner) => read(`${owner.account_id}\n${owner.workspace_id}`);
};

let containerCache: ReturnType<typeof alarmRulesCache> | undefined;

/**
 * The enabled alarm rules of a workspace, as this container last read them (at most
 * {@link ALARM_RULES_CACHE_MS} old): what the detection (ingest, sweep) evaluates.
 */
export const rulesOfWorkspace = (deps: { db: Db }, owner: RulesOwner) => (containerCache ??= alarmRulesCache(deps.db))(owner);

/**
 * {@link rulesOfWorkspace} behind a workspace's settings that a path reads anyway (the ingest's,
 * cached): a workspace whose `alarm_rules_version` is 0 never had a rule, and costs no request.
 */
export const rulesGatedBy =
  (settings: (accountId: string, workspaceId: string) => Promise<{ alarm_rules_version?: number } | undefined>): typeof rulesOfWorkspace =>
  async (deps, owner) =>
    (await settings(owner.account_id, owner.workspace_id))?.alarm_rules_version ? rulesOfWorkspace(deps, owner) : [];
