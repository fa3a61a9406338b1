import { resourcesOfType, targetOf, type CfnTemplate } from './template';

/**
 * The template's EventBridge rules as the cloud-assembly runtime runs them: scheduled rules
 * (`ScheduleExpression` with `rate(…)`) on the default bus, whose targets are Lambda functions of
 * the template. Each property is honoured, or has no effect here and is named as such; anything
 * else (an event pattern, a cron expression, another bus, a target that is not a function of the
 * template, an input path or transformer) stops the start, so that no rule is silently left out.
 */

/** A target of a rule: a function of the template, and the constant input it is sent, if any. */
export interface RuleTargetSpec {
  id: string;
  functionId: string;
  /** The target's `Input` (constant JSON), sent instead of the scheduled event. */
  input?: unknown;
}

/** A scheduled rule of the template, read and checked. */
export interface ScheduledRuleSpec {
  /** The rule's logical ID. */
  id: string;
  expression: string;
  intervalMs: number;
  /** `State: DISABLED`: the rule exists but never fires. */
  enabled: boolean;
  targets: RuleTargetSpec[];
}

// The properties read below, and those that change nothing about when and what a scheduled rule
// invokes here (its name, its description, the role of targets other than Lambda).
const RULE_KNOWN = new Set(['EventPattern', 'EventBusName', 'ScheduleExpression', 'State', 'Targets', 'Name', 'Description', 'RoleArn']);
// A Lambda target's retry policy and dead-letter queue are about EventBridge failing to deliver, which
// does not happen here; a role is for targets other than Lambda (Lambda checks its resource policy).
const TARGET_KNOWN = new Set(['Id', 'Arn', 'Input', 'RetryPolicy', 'DeadLetterConfig', 'RoleArn']);

const UNITS_MS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/**
 * The interval of an EventBridge rate expression, in milliseconds: `rate(value unit)` with a
 * positive whole value and a unit of minute(s), hour(s) or day(s), singular exactly when the value
 * is 1, as EventBridge requires.
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html
 * @throws Error for a cron expression (not run here) or a malformed rate
 */
export const rateIntervalMs = (expression: string): number => {
  if (/^cron\(/.test(expression)) throw new Error(`${expression}: cron expressions do not run here (rate expressions only).`);
  const match = /^rate\(([1-9]\d*) (minute|hour|day)(s?)\)$/.exec(expression);
  if (!match) throw new Error(`${expression} is not a rate expression EventBridge accepts (rate(1 minute), rate(5 minutes), …).`);
  const [, value, unit, plural] = match;
  if ((value === '1') !== (plural === '')) throw new Error(`${expression}: EventBridge wants the unit singular for 1 and plural otherwise.`);
  return Number(value) * UNITS_MS[unit];
};

/**
 * Every AWS::Events::Rule of the template, checked: scheduled rules only, each target a function
 * of the template (its `Arn` a `Fn::GetAtt [fn, Arn]` or `Ref` of it).
 * @throws Error naming the rule and what does not run here
 */
export const scheduledRulesOf = (template: CfnTemplate): ScheduledRuleSpec[] =>
  resourcesOfType(template, 'AWS::Events::Rule').map(([id, rule]) => {
    const props = rule.Properties ?? {};
    if (props.EventPattern !== undefined) throw new Error(`Rule ${id}: event patterns do not run here (scheduled rules only).`);
    if (props.EventBusName !== undefined && props.EventBusName !== 'default')
      throw new Error(`Rule ${id}: EventBusName ${JSON.stringify(props.EventBusName)} does not run here (scheduled rules are on the default bus).`);
    if (typeof props.ScheduleExpression !== 'string') throw new Error(`Rule ${id} has no ScheduleExpression.`);
    const state = props.State ?? 'ENABLED';
    if (state !== 'ENABLED' && state !== 'DISABLED') throw new Error(`Rule ${id}: State ${state} does not run here.`);
    for (const key of Object.keys(props)) if (!RULE_KNOWN.has(key)) throw new Error(`Rule ${id}: ${key} does not run here.`);
    const intervalMs = (() => {
      try {
        return rateIntervalMs(props.ScheduleExpression);
      } catch (error) {
        throw new Error(`Rule ${id}: ${(error as Error).message}`);
      }
    })();
    const targets = ((props.Targets ?? []) as Array<Record<string, any>>).map((target): RuleTargetSpec => {
      for (const key of Object.keys(target)) if (!TARGET_KNOWN.has(key)) throw new Error(`Rule ${id}, target ${target.Id}: ${key} does not run here.`);
      const functionId = targetOf(target.Arn);
      if (!functionId || template.Resources[functionId]?.Type !== 'AWS::Lambda::Function') {
        throw new Error(
          `Rule ${id}, target ${target.Id}: ${JSON.stringify(target.Arn)} is not a Lambda function of the template (only Lambda targets run here).`,
        );
      }
      return { id: String(target.Id), functionId, ...(target.Input !== undefined ? { input: JSON.parse(target.Input) } : {}) };
    });
    return { id, expression: props.ScheduleExpression, intervalMs, enabled: state === 'ENABLED', targets };
  });
