/**
 * Lambda's event filtering, as an event source mapping's `FilterCriteria` states it: each filter
 * is a JSON pattern; a record reaches the function when any filter matches it. A pattern names
 * fields of the record; a leaf is a list of matchers, any of which may match (a literal string,
 * number or null, `prefix`, `suffix`, `equals-ignore-case`, `anything-but`, `numeric`, `exists`,
 * `wildcard`), and `$or` holds alternative patterns. A record's list matches when one of its items
 * does. An operator this file does not know fails the start, rather than letting records through.
 * https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
 */

type Matcher = (value: unknown, present: boolean) => boolean;

const escapeRegExp = (text: string) => text.replace(/[.+^${}()|[\]\\?]/g, '\\$&');

const isScalar = (value: unknown) => value === null || ['string', 'number', 'boolean'].includes(typeof value);

/** One comparison of a `numeric` list: `[">", 0, "<=", 5]` is both. */
const NUMERIC: Record<string, (a: number, b: number) => boolean> = {
  '=': (a, b) => a === b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

/** The matcher of one item of a leaf list. @throws Error for an operator Lambda's filters do not have here */
const matcherOf = (rule: unknown): Matcher => {
  if (isScalar(rule)) return (value, present) => present && value === rule;
  if (!rule || typeof rule !== 'object' || Array.isArray(rule)) throw new Error(`filter rule ${JSON.stringify(rule)}: not a value or an operator`);
  const entries = Object.entries(rule as Record<string, unknown>);
  if (entries.length !== 1) throw new Error(`filter rule ${JSON.stringify(rule)}: one operator per rule`);
  const [operator, arg] = entries[0];
  const text = (value: unknown): value is string => typeof value === 'string';
  switch (operator) {
    case 'prefix':
      return (value) => text(value) && value.startsWith(String(arg));
    case 'suffix':
      return (value) => text(value) && value.endsWith(String(arg));
    case 'equals-ignore-case':
      return (value) => text(value) && value.toLowerCase() === String(arg).toLowerCase();
    case 'wildcard': {
      const pattern = new RegExp(`^${String(arg).split('*').map(escapeRegExp).join('.*')}$`, 's');
      return (value) => text(value) && pattern.test(value);
    }
    case 'exists':
      return (_value, present) => present === arg;
    case 'anything-but': {
      // A list, one value, or one operator (`{"anything-but": {"prefix": "x"}}`): the field must be there and not match.
      const inner = Array.isArray(arg) ? arg.map(matcherOf) : [matcherOf(arg)];
      return (value, present) => present && !inner.some((m) => m(value, true));
    }
    case 'numeric': {
      const list = arg as unknown[];
      const checks: Array<(n: number) => boolean> = [];
      for (let i = 0; i < list.length; i += 2) {
        const compare = NUMERIC[String(list[i])];
        if (!compare || typeof list[i + 1] !== 'number') throw new Error(`filter rule ${JSON.stringify(rule)}: bad numeric comparison`);
        checks.push((n) => compare(n, list[i + 1] as number));
      }
      return (value) => typeof value === 'number' && checks.every((check) => check(value));
    }
    default:
      throw new Error(`filter rule ${JSON.stringify(rule)}: the operator ${operator} does not run here`);
  }
};

type Predicate = (record: unknown) => boolean;

/** A pattern object as a predicate on the object at the same place in the record. */
const compilePattern = (pattern: Record<string, unknown>): Predicate => {
  const checks: Predicate[] = [];
  for (const [key, rule] of Object.entries(pattern)) {
    if (key === '$or') {
      const alternatives = (rule as Array<Record<string, unknown>>).map(compilePattern);
      checks.push((record) => alternatives.some((p) => p(record)));
      continue;
    }
    if (Array.isArray(rule)) {
      const matchers = rule.map(matcherOf);
      checks.push((record) => {
        const present = Boolean(record && typeof record === 'object' && key in (record as object));
        const value = present ? (record as Record<string, unknown>)[key] : undefined;
        // A list in the record matches when one of its items does.
        const values = Array.isArray(value) ? value : [value];
        return values.some((v) => matchers.some((m) => m(v, present)));
      });
    } else if (rule && typeof rule === 'object') {
      const inner = compilePattern(rule as Record<string, unknown>);
      checks.push((record) => {
        const value = record && typeof record === 'object' ? (record as Record<string, unknown>)[key] : undefined;
        return Array.isArray(value) ? value.some(inner) : inner(value ?? {});
      });
    } else {
      throw new Error(`filter pattern field ${key}: a leaf must be a list of rules`);
    }
  }
  return (record) => checks.every((check) => check(record));
};

/**
 * The predicate of an event source mapping's `FilterCriteria` (`{Filters: [{Pattern: "<json>"}]}`):
 * a record passes when any filter's pattern matches it; every record passes without filters.
 * @throws Error for a pattern that is not JSON, or uses an operator that does not run here
 */
export const eventFilterOf = (criteria: { Filters?: Array<{ Pattern: string }> } | undefined): ((record: unknown) => boolean) | undefined => {
  const filters = criteria?.Filters ?? [];
  if (!filters.length) return undefined;
  const patterns = filters.map((f) => compilePattern(JSON.parse(f.Pattern) as Record<string, unknown>));
  return (record) => patterns.some((p) => p(record));
};
