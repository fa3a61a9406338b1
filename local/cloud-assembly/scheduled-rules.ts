import { startSchedule, type RunningSchedule } from '../scheduler';
import type { ScheduledRuleSpec } from './events';
import type { MayInvoke } from './policies';
import { ACCOUNT, type RunContext } from './run-context';
import { targetOf } from './template';

/**
 * Starts the scheduled rules: each enabled rule fires its targets at its rate (or the test's
 * interval), one run at a time; EventBridge invokes a function only with its resource policy's leave.
 * @throws Error when the options change the sweep's interval and the template names no sweep rule
 */
export const startScheduledRules = (run: RunContext, rules: ScheduledRuleSpec[], mayInvoke: MayInvoke): RunningSchedule[] => {
  const { options, log, stops, template, region, physical, lambdas, invokeRefusals } = run;
  const sweepRuleId = targetOf(template.Outputs?.RolloutSweepRuleName?.Value);
  if (options.sweepIntervalSeconds !== undefined && !sweepRuleId)
    throw new Error("The template has no RolloutSweepRuleName output: cannot change the sweep's interval.");
  const schedules: RunningSchedule[] = [];
  for (const rule of rules) {
    const ruleArn = physical.get(rule.id)!.attributes.Arn;
    if (!rule.enabled) {
      log(`rule ${rule.id} is disabled: it never fires`);
      continue;
    }
    const intervalMs = rule.id === sweepRuleId && options.sweepIntervalSeconds ? options.sweepIntervalSeconds * 1000 : rule.intervalMs;
    for (const target of rule.targets) {
      const refusal = mayInvoke(target.functionId, ruleArn, 'events.amazonaws.com')
        ? undefined
        : `EventBridge may not invoke ${target.functionId}: no AWS::Lambda::Permission for events.amazonaws.com on rule ${rule.id}`;
      if (refusal) {
        invokeRefusals.push(`${rule.id} (${rule.expression}): ${refusal}`);
        log(`${refusal}: every firing of the rule fails (FailedInvocations)`);
      } else log(`rule ${rule.id} (${rule.expression}${intervalMs === rule.intervalMs ? '' : `, here every ${intervalMs / 1000} s`}) → ${target.functionId}…`);
      const lambda = lambdas.get(target.functionId)!;
      const running = startSchedule({
        rule: physical.get(rule.id)!.ref,
        function: target.functionId,
        intervalMs,
        ruleArn,
        region,
        account: ACCOUNT,
        refusal,
        clockAheadMs: rule.id === sweepRuleId ? (options.sweepClockAheadSeconds ?? 0) * 1000 : 0,
        invoke: (event) => lambda.invoke(target.input ?? event),
        onError: options.onScheduleError,
      });
      schedules.push(running);
      stops.push(running.stop);
    }
  }
  return schedules;
};
