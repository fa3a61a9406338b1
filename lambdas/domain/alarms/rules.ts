import type { Db } from '../../shared/clients';
import { ConflictError, NotFoundError, ValidationError, type ErrorDetail } from '../../shared/errors';
import type { Caller } from '../../shared/http';
import { newId, nowIso } from '../../shared/ids';
import type { StreamedList } from '../../shared/json-stream';
import { FOR_SECONDS_MIN_TIMED, type AlarmRule, type CreateAlarmRuleBody, type UpdateAlarmRuleBody } from '../../schemas/alarms';
import type { PageQuery } from '../../schemas/list';
import {
  deleteAlarmRule as removeAlarmRule,
  getAlarmRuleOfWorkspace,
  putAlarmRule,
  readAlarmRulesOfWorkspace,
  replaceAlarmRule,
  type AlarmRuleRecord,
} from '../../stores/alarm-rule-store';
import { collection } from '../../stores/keys';
import { quota, release } from '../limits/limits';
import { requireFleets } from '../registry/fleets';
import { requireGroup } from '../registry/groups';
import { mapKeyed, pageSizeOf, paginate, startOf } from '../registry/lists';
import { parseQuery } from '../registry/query';
import { requireWorkspace } from '../tenancy/workspaces';
import { closeAlarmsOfRule, type AlarmDeps } from './alarms';
import { startBackfill } from './backfill';

/** A rule as the API answers it: its stored public fields. */
export const toAlarmRule = ({ account_id: _a, workspace_id: _w, ...rule }: AlarmRuleRecord): AlarmRule => rule;

/** What the kind-dependent checks read of a rule, as it would be stored. */
type RuleShape = Pick<AlarmRule, 'kind' | 'tag' | 'field' | 'op' | 'value' | 'clear_value' | 'for_seconds'>;

const THRESHOLD_ONLY = ['field', 'op', 'value', 'clear_value'] as const;

/**
 * What is wrong with a rule for its kind (spec/fleet-state.md §4), each problem naming its body
 * field: offline and silent wait at least a minute; only a threshold rule compares, and it needs
 * field, op and value, with its clear_value on the side that ends the alarm; an offline rule
 * watches no tag.
 */
export const ruleProblems = (rule: RuleShape): ErrorDetail[] => {
  const problems: ErrorDetail[] = [];
  const at = (field: string, message: string) => problems.push({ field: `body.${field}`, message });
  if ((rule.kind === 'offline' || rule.kind === 'silent') && rule.for_seconds < FOR_SECONDS_MIN_TIMED)
    at('for_seconds', `Must be at least ${FOR_SECONDS_MIN_TIMED} for an ${rule.kind} rule.`);
  if (rule.kind === 'offline' && rule.tag !== null) at('tag', 'An offline rule watches no tag.');
  if (rule.kind !== 'threshold') {
    for (const field of THRESHOLD_ONLY) if (rule[field] !== null) at(field, `Only a threshold rule takes ${field}.`);
    return problems;
  }
  for (const field of ['field', 'op', 'value'] as const) if (rule[field] === null) at(field, 'Required for a threshold rule.');
  if (rule.op !== null && rule.value !== null && rule.clear_value !== null) {
    const above = rule.op === '>' || rule.op === '>=';
    if (above && rule.clear_value > rule.value) at('clear_value', `Must not be above value (${rule.value}) for op ${rule.op}: the alarm clears below it.`);
    if (!above && rule.clear_value < rule.value) at('clear_value', `Must not be below value (${rule.value}) for op ${rule.op}: the alarm clears above it.`);
  }
  return problems;
};

const refuse = (problems: ErrorDetail[]) => {
  if (problems.length) throw new ValidationError(`Invalid body: ${problems.map((p) => p.field).join(', ')}.`, { details: problems });
};

/**
 * A rule's target checked as a scheduling's is: its fleets and group are the workspace's (another
 * account's are 404), its query parses (400 naming `body.target.q`).
 * @throws NotFoundError, ValidationError.
 */
const checkTarget = async (db: Db, workspaceId: string, target: AlarmRule['target']) => {
  if (target.fleets.length) await requireFleets(db, workspaceId, target.fleets, 'body.target.fleets');
  if (target.group !== null) {
    try {
      await requireGroup(db, workspaceId, target.group);
    } catch (error) {
      if (error instanceof NotFoundError)
        throw new NotFoundError(error.message, { details: [{ field: 'body.target.group', message: 'No such group.' }], cause: error });
      throw error;
    }
  }
  if (target.q !== null) {
    try {
      parseQuery(target.q);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      const message = error.details[0]?.message ?? error.message;
      throw new ValidationError(`Invalid body: body.target.q ${message}`, { details: [{ field: 'body.target.q', message }], cause: error });
    }
  }
};

const targetOf = (given: CreateAlarmRuleBody['target']): AlarmRule['target'] => ({
  fleets: [...new Set(given?.fleets ?? [])],
  group: given?.group ?? null,
  q: given?.q ?? null,
});

const notifyOf = (given: CreateAlarmRuleBody['notify']): AlarmRule['notify'] => ({
  emails: [...new Set(given?.emails ?? [])],
  integrations: given?.integrations ?? true,
});

/** A threshold rule's clear_value defaults to its value (no hysteresis). */
const withClearValue = <T extends Pick<AlarmRule, 'kind' | 'value' | 'clear_value'>>(rule: T): T =>
  rule.kind === 'threshold' && rule.clear_value === null ? { ...rule, clear_value: rule.value } : rule;

/**
 * A rule of the workspace, as stored.
 * @throws NotFoundError when the workspace holds no such rule.
 */
export const requireAlarmRule = async (db: Db, workspaceId: string, ruleId: string) => {
  const rule = await getAlarmRuleOfWorkspace(db, workspaceId, ruleId);
  if (!rule) throw new NotFoundError(`Alarm rule ${ruleId} not found.`);
  return rule;
};

/**
 * Creates an alarm rule, within the workspace's quota of rules, and starts its backfill (domain/alarms/backfill.ts).
 * @throws NotFoundError when the workspace, a fleet or the group of its target is not the caller's.
 * @throws ValidationError naming the body field a kind refuses (nothing is written).
 * @throws QuotaExceededError when the workspace holds its limit of rules.
 */
export const createAlarmRule = async (db: Db, caller: Caller, workspaceId: string, input: CreateAlarmRuleBody) => {
  const workspace = await requireWorkspace(db, caller, workspaceId);
  const at = nowIso();
  const rule: AlarmRuleRecord = withClearValue({
    id: newId('alr', at),
    name: input.name,
    kind: input.kind,
    severity: input.severity,
    target: targetOf(input.target ?? undefined),
    tag: input.tag ?? null,
    field: input.field ?? null,
    op: input.op ?? null,
    value: input.value ?? null,
    clear_value: input.clear_value ?? null,
    for_seconds: input.for_seconds,
    notify: notifyOf(input.notify),
    enabled: input.enabled,
    created_at: at,
    updated_at: at,
    last_notification_error: null,
    account_id: caller.accountId,
    workspace_id: workspaceId,
  });
  refuse(ruleProblems(rule));
  await checkTarget(db, workspaceId, rule.target);
  await putAlarmRule(db, rule, quota(db, workspace, 'alarm_rules'));
  // The devices it targets already (disconnected, silent, with a condition open) are the backfill's.
  await startBackfill(db, rule);
  return toAlarmRule(rule);
};

/**
 * The workspace's rules, oldest first (ID order), streamed; a page of them when `page` asks.
 * @throws NotFoundError when the workspace is not the caller's.
 */
export const listAlarmRules = async (db: Db, caller: Caller, workspaceId: string, page: PageQuery = {}): Promise<StreamedList<AlarmRule>> => {
  await requireWorkspace(db, caller, workspaceId);
  const list = `alarm-rules/${workspaceId}`;
  const after = startOf(list, page, collection.alarmRulesOfWorkspace(workspaceId).prefix);
  return paginate(list, mapKeyed(readAlarmRulesOfWorkspace(db, workspaceId, { after, pageSize: pageSizeOf(page) }), toAlarmRule), page);
};

/** @throws NotFoundError when the workspace or the rule is not the caller's. */
export const getAlarmRule = async (db: Db, caller: Caller, workspaceId: string, ruleId: string) => {
  await requireWorkspace(db, caller, workspaceId);
  return toAlarmRule(await requireAlarmRule(db, workspaceId, ruleId));
};

/** A rule with a change applied (null clears), its clear_value following its value when it had none of its own. */
const changed = (rule: AlarmRuleRecord, change: UpdateAlarmRuleBody, at: string): AlarmRuleRecord => {
  const { target, notify, ...rest } = change;
  const next: AlarmRuleRecord = { ...rule, ...rest, updated_at: at };
  if (target !== undefined) next.target = targetOf(target ?? undefined);
  if (notify !== undefined) next.notify = notifyOf(notify);
  // A clear_value that only followed value follows it on.
  if (change.value !== undefined && change.clear_value === undefined && rule.clear_value === rule.value) next.clear_value = null;
  return withClearValue(next);
};

/**
 * Changes a rule (any field but its kind). Disabling it closes its alarms that are not closed;
 * enabling it, or giving it another target, starts its backfill (domain/alarms/backfill.ts).
 * @throws NotFoundError when the workspace, the rule, or a fleet or group of its new target is not the caller's.
 * @throws ValidationError naming the body field its kind refuses (nothing is written).
 * @throws ConflictError when it changed meanwhile.
 */
export const updateAlarmRule = async (deps: AlarmDeps, caller: Caller, workspaceId: string, ruleId: string, change: UpdateAlarmRuleBody) => {
  await requireWorkspace(deps.db, caller, workspaceId);
  const rule = await requireAlarmRule(deps.db, workspaceId, ruleId);
  const next = changed(rule, change, nowIso());
  refuse(ruleProblems(next));
  if (change.target !== undefined) await checkTarget(deps.db, workspaceId, next.target);
  if (!(await replaceAlarmRule(deps.db, rule, next))) throw new ConflictError(`Alarm rule ${ruleId} changed meanwhile: read it again and retry.`);
  if (!next.enabled) await closeAlarmsOfRule(deps, workspaceId, ruleId, 'rule_disabled');
  // Enabled again, or watching other devices: those in the state it watches now are the backfill's.
  else if (!rule.enabled || change.target !== undefined) await startBackfill(deps.db, next);
  return toAlarmRule(next);
};

/**
 * Deletes a rule and answers it as it was: it is disabled first (no alarm of it opens any more), its alarms close, then it
 * goes with its place in the quota; a retried DELETE finishes what a failed one began.
 * @throws NotFoundError when the workspace or the rule is not the caller's.
 */
export const deleteAlarmRule = async (deps: AlarmDeps, caller: Caller, workspaceId: string, ruleId: string) => {
  const workspace = await requireWorkspace(deps.db, caller, workspaceId);
  const original = await requireAlarmRule(deps.db, workspaceId, ruleId);
  let rule = original;
  if (rule.enabled) {
    const disabled = { ...rule, enabled: false, updated_at: nowIso() };
    if (!(await replaceAlarmRule(deps.db, rule, disabled))) throw new ConflictError(`Alarm rule ${ruleId} changed meanwhile: retry.`);
    rule = disabled;
  }
  await closeAlarmsOfRule(deps, workspaceId, ruleId, 'rule_deleted');
  await removeAlarmRule(deps.db, rule, release(deps.db, workspace, 'alarm_rules'));
  return toAlarmRule(original);
};
