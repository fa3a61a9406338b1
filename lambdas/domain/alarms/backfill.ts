import type { Db } from '../../shared/clients';
import { settleAll } from '../../shared/settle';
import {
  advanceBackfill,
  deleteBackfill,
  getBackfill,
  openConditionsOfDevice,
  putBackfill,
  readDevicePage,
  type DueBackfill,
} from '../../stores/alarm-backfill-store';
import { getAlarmRuleOfWorkspace } from '../../stores/alarm-rule-store';
import { putTimerIfAbsent } from '../../stores/alarm-timer-store';
import { conditionOpenId, targetReader, type DetectedRule, type DetectionDeps } from './detection';
import { ALARM_RULES_CACHE_MS } from './rule-cache';
import { silentSince, type SeenDevice } from './silent-tags';

/** Devices a backfill reads a page (one strongly consistent Query). */
export const BACKFILL_PAGE = 100;
/** How long a backfill may run in one sweep run: the rest waits for the next run, a minute later. */
export const BACKFILL_RUN_MS = 30_000;
// Devices of a page whose timers are written at once.
const DEVICE_CONCURRENCY = 16;

type Device = Record<string, unknown> & { id: string; account_id: string; fleet_id: string };

/**
 * Starts the backfill of a rule just created or enabled (or given a new target): the devices it
 * targets already get the timers their state asks for, from the minute sweep. Due once the
 * detection's caches of rules have seen the rule ({@link ALARM_RULES_CACHE_MS}), so that a change
 * of a device after the backfill read it is the stream's to follow. A `threshold` rule has no
 * timers: nothing to backfill.
 */
export const startBackfill = async (db: Db, rule: Pick<DetectedRule, 'id' | 'kind' | 'enabled' | 'workspace_id' | 'account_id'>, now = Date.now()) => {
  if (!rule.enabled || rule.kind === 'threshold') return;
  await putBackfill(db, { workspace_id: rule.workspace_id, account_id: rule.account_id, rule_id: rule.id }, now + ALARM_RULES_CACHE_MS);
};

/**
 * The timers one device needs under a rule, as the detection would have started them: a device
 * disconnected → its `offline` timer from its disconnection; one that has published → its
 * `silent` timer from its last point (on the rule's tag when it names one); its open conditions on
 * the rule's tag → a `condition` timer from their start (or the alarm at once for 0 s). Put only
 * where none is (the stream's own, started meanwhile, stays); the sweep reads the device again
 * when the timer is due, so a timer of a state that changed meanwhile ends without an alarm.
 */
const backfillDevice = async <R extends DetectedRule>(deps: DetectionDeps<R>, rule: R, device: Device) => {
  const timer = { workspace_id: rule.workspace_id, account_id: device.account_id, device_id: device.id, rule_id: rule.id };
  const dueAt = (since: string) => Date.parse(since) + rule.for_seconds * 1000;
  if (rule.kind === 'offline') {
    if (device.connected !== false || typeof device.last_disconnected_at !== 'string') return 0;
    await putTimerIfAbsent(deps.db, { ...timer, kind: 'offline', since: device.last_disconnected_at }, dueAt(device.last_disconnected_at));
    return 1;
  }
  if (rule.kind === 'silent') {
    if (typeof device.last_seen_at !== 'string') return 0;
    const since = silentSince(rule, device as SeenDevice) ?? device.last_seen_at;
    await putTimerIfAbsent(deps.db, { ...timer, kind: 'silent', since }, dueAt(since));
    return 1;
  }
  let written = 0;
  for (const condition of await openConditionsOfDevice(deps.db, device.id)) {
    if (rule.tag !== null && rule.tag !== condition.tag) continue;
    written += 1;
    if (rule.for_seconds === 0)
      await deps.open(
        rule,
        { workspace_id: rule.workspace_id, fleet_id: device.fleet_id, device_id: device.id },
        {
          details: { condition_uuid: condition.uuid, start: condition.start },
          transitionId: conditionOpenId(rule.id, device.id, condition.uuid, condition.start),
        },
      );
    else await putTimerIfAbsent(deps.db, { ...timer, kind: 'condition', since: condition.start, condition_uuid: condition.uuid }, dueAt(condition.start));
  }
  return written;
};

/**
 * One run's part of a rule's backfill (its entry due in an alarm timer partition): while the
 * rule exists and is enabled (read strongly consistent: a rule disabled or deleted stops it), it
 * reads the workspace's devices a page at a time from its cursor, writes the timers of those the
 * rule targets (fleets, group, `q`, as the detection matches them), and moves the cursor past the
 * page, over the entry it read (a backfill restarted meanwhile, by the rule disabled and enabled
 * again, is left to its new start); until the devices end (the backfill ends) or the run's time
 * does (it goes on at the next run). A failed page is done again at the next run: every write is
 * put-if-absent or a transition by ID.
 * @returns the devices read and the timers written (or alarms opened).
 */
export const runBackfill = async <R extends DetectedRule>(deps: DetectionDeps<R>, due: DueBackfill, deadline: number) => {
  const clock = deps.now ?? Date.now;
  const done = { devices: 0, timers: 0 };
  const backfill = await getBackfill(deps.db, due.workspaceId, due.ruleId);
  if (!backfill || backfill.sweep_sk !== due.seen) return done;
  const rule = (await getAlarmRuleOfWorkspace(deps.db, due.workspaceId, due.ruleId)) as R | undefined;
  if (!rule?.enabled || rule.kind === 'threshold') {
    await deleteBackfill(deps.db, due);
    return done;
  }
  const targets = targetReader(deps.db);
  let { after } = backfill;
  let seen = due.seen;
  const stop = Math.min(deadline, clock() + BACKFILL_RUN_MS);
  for (;;) {
    const { devices, next } = await readDevicePage(deps.db, due.workspaceId, after, BACKFILL_PAGE);
    const results = await settleAll(devices as Device[], DEVICE_CONCURRENCY, async (device) =>
      (await targets(rule, device)) ? backfillDevice(deps, rule, device) : 0,
    );
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    done.devices += devices.length;
    for (const r of results) if (r.status === 'fulfilled') done.timers += r.value;
    if (next === undefined) {
      await deleteBackfill(deps.db, { ...due, seen });
      return done;
    }
    const moved = await advanceBackfill(deps.db, { ...due, seen }, next, clock());
    if (moved === undefined) return done;
    seen = moved;
    after = next;
    if (clock() >= stop) return done;
  }
};
