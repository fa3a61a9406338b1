/** A statement of an identity-based policy, its values resolved. */
export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: unknown;
}

/** What IAM decides for one action on one resource. */
export type Decision = 'allow' | 'explicit-deny' | 'implicit-deny';

const list = (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat());

/** IAM's wildcard match: `*` any run of characters, `?` one; actions ignore case, resources do not. */
export const wildcardMatch = (pattern: string, value: string, ignoreCase = false) => {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, ignoreCase ? 'is' : 's').test(value);
};

const appliesTo = (statement: PolicyStatement, action: string, resource: string) => {
  const actionMatches = statement.NotAction
    ? !list(statement.NotAction).some((p) => wildcardMatch(p, action, true))
    : list(statement.Action).some((p) => wildcardMatch(p, action, true));
  const resourceMatches = statement.NotResource
    ? !list(statement.NotResource).some((p) => wildcardMatch(p, resource))
    : list(statement.Resource).some((p) => wildcardMatch(p, resource));
  return actionMatches && resourceMatches;
};

/** The one condition the local check reads: `ForAllValues:StringLike` on `dynamodb:LeadingKeys`, alone. */
const leadingKeyPatterns = (condition: unknown): string[] | undefined => {
  const operators = condition as Record<string, Record<string, string | string[]>>;
  const keys = operators['ForAllValues:StringLike'];
  if (Object.keys(operators).length !== 1 || !keys || Object.keys(keys).length !== 1 || !keys['dynamodb:LeadingKeys']) return undefined;
  return list(keys['dynamodb:LeadingKeys']);
};

/** A condition of `StringEquals` alone (`ses:FromAddress`, say): its keys and the values each may take. */
const stringEqualsOf = (condition: unknown): Record<string, string[]> | undefined => {
  const operators = condition as Record<string, Record<string, string | string[]>>;
  const keys = operators.StringEquals;
  if (Object.keys(operators).length !== 1 || !keys) return undefined;
  return Object.fromEntries(Object.entries(keys).map(([key, values]) => [key, list(values)]));
};

/**
 * Whether a statement applies to a request, as far as its condition goes. The conditions the
 * stack's role policies use are read: `ForAllValues:StringLike` on `dynamodb:LeadingKeys`, the
 * partition keys a batch write names (`leadingKeys`), each matching one of the patterns; and
 * `StringEquals` on keys the request sets (`context`: `ses:FromAddress` of a SendEmail). A
 * condition the local check cannot decide (another key or operator, or a request whose keys it did
 * not read) is taken the strict way: an Allow as not applying, a Deny as applying, so that the
 * local check never allows what AWS might refuse.
 */
const conditionHolds = (statement: PolicyStatement, leadingKeys: readonly string[] | undefined, context: Readonly<Record<string, string>> | undefined) => {
  if (statement.Condition === undefined) return true;
  const equals = stringEqualsOf(statement.Condition);
  if (equals && context && Object.keys(equals).every((key) => context[key] !== undefined))
    return Object.entries(equals).every(([key, values]) => values.includes(context[key]));
  const patterns = leadingKeyPatterns(statement.Condition);
  if (patterns === undefined || leadingKeys === undefined) return statement.Effect === 'Deny';
  return leadingKeys.every((key) => patterns.some((pattern) => wildcardMatch(pattern, key)));
};

/**
 * Evaluates identity-based policy statements as IAM does for one principal: an explicit Deny wins,
 * then any Allow, else the implicit deny; a statement applies when its condition holds
 * (`conditionHolds`).
 */
export const evaluate = (
  statements: readonly PolicyStatement[],
  action: string,
  resource: string,
  leadingKeys?: readonly string[],
  context?: Readonly<Record<string, string>>,
): Decision => {
  const matching = statements.filter((s) => appliesTo(s, action, resource) && conditionHolds(s, leadingKeys, context));
  if (matching.some((s) => s.Effect === 'Deny')) return 'explicit-deny';
  return matching.some((s) => s.Effect === 'Allow') ? 'allow' : 'implicit-deny';
};

/** One action on one resource, as a request asks for it. */
export interface Access {
  action: string;
  resource: string;
  /** For DynamoDB: the table, and the index when one is queried. */
  table?: string;
  index?: string;
  /** For DynamoDB's batch writes: the partition keys (`pk`, the stack's tables' key) of the items written. */
  leadingKeys?: string[];
  /** The condition keys the request sets, as IAM reads them (`ses:FromAddress`). */
  context?: Record<string, string>;
}

/** A recorded call: which function, what it asked for, and what the policy said. */
export interface CallRecord extends Access {
  function: string;
  decision: Decision;
}

/** A permission a role grants: one action pattern on one resource pattern. */
export interface Grant {
  function: string;
  action: string;
  resource: string;
}

/**
 * The Allow grants of each function that no recorded call used. Actions the function's code
 * never issues itself (CloudWatch Logs, which the Lambda service writes for it) are left out.
 */
export const unusedGrants = (roles: Record<string, readonly PolicyStatement[]>, calls: readonly CallRecord[], ignore: RegExp = /^logs:/): Grant[] =>
  grantsOf(roles, ignore).filter(
    (g) =>
      !calls.some(
        (c) => c.function === g.function && c.decision === 'allow' && wildcardMatch(g.action, c.action, true) && wildcardMatch(g.resource, c.resource),
      ),
  );

/** Every action on every resource each role's Allow statements grant (`logs:` left out: the runtime writes logs, not the functions). */
export const grantsOf = (roles: Record<string, readonly PolicyStatement[]>, ignore: RegExp = /^logs:/): Grant[] =>
  Object.entries(roles).flatMap(([fn, statements]) =>
    statements
      .filter((statement) => statement.Effect === 'Allow')
      .flatMap((statement) =>
        list(statement.Action)
          .filter((action) => !ignore.test(action))
          .flatMap((action) => list(statement.Resource).map((resource) => ({ function: fn, action, resource }))),
      ),
  );
