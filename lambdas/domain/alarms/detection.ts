import type { Db } from '../../shared/clients';
import { NotFoundError } from '../../shared/errors';
import { isTargeted } from '../fleet-ops/fleet-targets';
import { requireGroup } from '../registry/groups';
import { parseQuery, type Query } from '../registry/query';
import type { AlarmRuleRecord } from '../../stores/alarm-rule-store';
import type { TransactItem } from '../../stores/limits-store';
import { alarmDeps, closeAlarm, openAlarm } from './alarms';
import { rulesOfWorkspace } from './rule-cache';

/** An alarm rule as the detection reads it (the fields of stores/alarm-rule-store.ts's record it uses). */
export interface DetectedRule {
  id: string;
  kind: 'condition' | 'offline' | 'silent' | 'threshold';
  for_seconds: number;
  enabled: boolean;
  tag: string | null;
  target: { fleets: string[]; group: string | null; q: string | null };
  workspace_id: string;
  account_id: string;
}

/** Which workspace's rules: the workspace item is under its account. */
export interface RulesOwner {
  account_id: string;
  workspace_id: string;
}

/** Where an alarm opens: the device and its fleet, in its workspace. */
export interface DetectedPlace {
  workspace_id: string;
  fleet_id: string;
  device_id: string;
}

/**
 * What the detection (the registry stream's device changes, the minute sweep) needs: the registry,
 * a workspace's enabled rules (cached per container: domain/alarms/rule-cache.ts), and the
 * alarms' transitions, each written once per `transitionId` (domain/alarms/alarms.ts).
 */
export interface DetectionDeps<R extends DetectedRule = DetectedRule> {
  db: Db;
  /** The time (ms since the epoch): `Date.now`, or a test's clock ahead. */
  now?: () => number;
  rules: (owner: RulesOwner) => Promise<readonly R[]>;
  /** Opens an alarm once per `transitionId`, if `requires`' conditions hold (a transaction's ConditionCheck items). */
  open: (rule: R, place: DetectedPlace, transition: { details: Record<string, unknown>; transitionId: string; requires?: TransactItem[] }) => Promise<unknown>;
  close: (ruleId: string, deviceId: string, transition: { transitionId: string; details?: Record<string, unknown> }) => Promise<unknown>;
}

/**
 * A reader of rules' target queries for one batch or run: a group's query is read once (a group
 * deleted under a rule targets nothing), a `q` parsed once.
 */
export const targetReader = (db: Db) => {
  const groups = new Map<string, Promise<Query | null>>();
  const texts = new Map<string, Query>();
  const groupQuery = (workspaceId: string, groupId: string) => {
    const key = `${workspaceId}\n${groupId}`;
    let query = groups.get(key);
    if (!query) {
      query = requireGroup(db, workspaceId, groupId).then(
        (group) => parseQuery(group.query),
        (error: unknown) => {
          if (error instanceof NotFoundError) return null;
          throw error;
        },
      );
      groups.set(key, query);
    }
    return query;
  };
  const textQuery = (q: string) => {
    let query = texts.get(q);
    if (!query) texts.set(q, (query = parseQuery(q)));
    return query;
  };
  /** Whether the rule targets the device (as its item reads): its fleets, its group's query and its `q`, all together. */
  return async (rule: DetectedRule, device: Record<string, unknown> & { fleet_id: string }) => {
    const { fleets, group, q } = rule.target;
    if (!isTargeted(fleets, q ? textQuery(q) : undefined, device, device.fleet_id)) return false;
    if (!group) return true;
    const query = await groupQuery(rule.workspace_id, group);
    return query !== null && isTargeted([], query, device, device.fleet_id);
  };
};

/** The transition ID of a condition alarm's open: once per condition (a uuid opened again at another start is another). */
export const conditionOpenId = (ruleId: string, deviceId: string, uuid: string, start: string) => `condition:${ruleId}:${deviceId}:${uuid}:${start}`;

/** The enabled rules of a kind among a workspace's rules. */
export const rulesOfKind = <R extends DetectedRule>(rules: readonly R[], kind: DetectedRule['kind']) => rules.filter((r) => r.enabled && r.kind === kind);

/**
 * The detection's dependencies in a Lambda: the container's cache of rules (at most one read of the
 * workspace item per 10 s), and the alarms' transitions, told on the notifications queue.
 */
export const detectionDeps = (db: Db): DetectionDeps<AlarmRuleRecord> => {
  const alarms = alarmDeps(db);
  return {
    db,
    rules: (owner) => rulesOfWorkspace({ db }, owner),
    open: (rule, place, transition) => openAlarm(alarms, rule, place, transition),
    close: (ruleId, deviceId, transition) => closeAlarm(alarms, ruleId, deviceId, transition),
  };
};
