/**
 * The small part of IoT Core's rule SQL (version 2016-03-23) that topic rules of a template may use
 * here: `SELECT <items> FROM '<topic filter>' [WHERE <a> = <b> [AND …]]`, where an item is `*` (the
 * JSON payload's fields) or one of `encode(*, 'base64')`, `topic()`, `topic(n)`, `timestamp()`,
 * `clientid()` with `AS <name>`, and a WHERE compares those functions or string literals with `=`
 * or `<>`, or tests one with `startswith(<a>, <b>)`. Anything else (another function or operator, a field path, OR) is refused when the rule
 * is read, so a rule this runtime cannot evaluate stops the start instead of being evaluated wrongly.
 * https://docs.aws.amazon.com/iot/latest/developerguide/iot-sql-reference.html
 */

/** What a rule's SELECT sees of one publish. */
export interface RuleInput {
  topic: string;
  payload: Buffer;
  /** When the broker received it, Unix milliseconds (`timestamp()`). */
  receivedAt: number;
  clientId?: string;
}

/** A parsed statement: the topic filter of its FROM, whether its WHERE holds, and the message its SELECT makes of a publish. */
export interface RuleStatement {
  topicFilter: string;
  /**
   * Whether the WHERE clause holds for a publish (true without one). A comparison with an undefined
   * value (a `topic(n)` beyond the topic's levels, no client ID) is undefined, which is not true:
   * the rule does not act, as on IoT Core.
   */
  where: (input: RuleInput) => boolean;
  /**
   * The SELECT's result for one publish.
   * @throws Error when the publish cannot be evaluated (`*` over a payload that is not a JSON object)
   */
  select: (input: RuleInput) => Record<string, unknown>;
}

/** SQL this runtime does not evaluate: the message names the part. */
export class UnsupportedSqlError extends Error {
  constructor(sql: string, part: string) {
    super(
      `IoT SQL ${JSON.stringify(sql)}: ${part} is not supported by the cloud-assembly runtime (SELECT of *, encode(*, 'base64'), topic(), topic(n), timestamp(), clientid() AS <name> FROM '<topic>', WHERE comparing them or 'strings' with = or <>, or startswith(a, b), joined by AND, only)`,
    );
    this.name = 'UnsupportedSqlError';
  }
}

const STATEMENT = /^\s*SELECT\s+(.+?)\s+FROM\s+'([^']+)'\s*(.*?)\s*;?\s*$/is;
const ALIASED = /^(.+?)\s+AS\s+([A-Za-z_][A-Za-z0-9_]*)$/is;
const WHERE = /^WHERE\s+(.+)$/is;
const COMPARISON = /^(.+?)\s*(=|<>)\s*(.+)$/s;
const STRING_LITERAL = /^'([^']*)'$/;
const STARTSWITH = /^startswith\s*\((.*)\)$/is;

type Expression = (input: RuleInput) => unknown;

/** The functions of the subset, by their normalized text (spaces removed, lower case). */
const FUNCTIONS: Array<[RegExp, (match: RegExpExecArray) => Expression]> = [
  [/^encode\(\*,'base64'\)$/, () => (input) => input.payload.toString('base64')],
  [/^topic\(\)$/, () => (input) => input.topic],
  // topic(n): the n-th level of the topic, from 1; undefined (left out) beyond its last level.
  [/^topic\((\d+)\)$/, (m) => (input) => input.topic.split('/')[Number(m[1]) - 1]],
  [/^timestamp\(\)$/, () => (input) => input.receivedAt],
  [/^clientid\(\)$/, () => (input) => input.clientId],
];

/** A function of the subset, or undefined. */
const functionOf = (text: string): Expression | undefined => {
  const normalized = text.replace(/\s+/g, '').toLowerCase();
  for (const [pattern, build] of FUNCTIONS) {
    const match = pattern.exec(normalized);
    if (match) return build(match);
  }
  return undefined;
};

/**
 * The WHERE clause's test: comparisons of functions or string literals joined by AND.
 * @throws UnsupportedSqlError for anything else
 */
const whereOf = (sql: string, clause: string): RuleStatement['where'] => {
  const condition = WHERE.exec(clause)?.[1];
  if (!condition) throw new UnsupportedSqlError(sql, `"${clause}"`);
  const operand = (text: string): Expression => {
    const literal = STRING_LITERAL.exec(text.trim());
    if (literal) return () => literal[1];
    const fn = functionOf(text);
    if (!fn) throw new UnsupportedSqlError(sql, `the WHERE operand "${text.trim()}"`);
    return fn;
  };
  const tests = condition.split(/\s+AND\s+/i).map((part) => {
    // startswith(a, b): whether the string a begins with the string b; undefined (not true) when either is not a string.
    const prefixed = STARTSWITH.exec(part.trim());
    if (prefixed) {
      const args = splitItems(prefixed[1]);
      if (args.length !== 2) throw new UnsupportedSqlError(sql, `the condition "${part.trim()}"`);
      const [text, prefix] = args.map(operand);
      return (input: RuleInput) => {
        const [a, b] = [text(input), prefix(input)];
        return typeof a === 'string' && typeof b === 'string' && a.startsWith(b);
      };
    }
    const comparison = COMPARISON.exec(part.trim());
    if (!comparison || /\s(OR|NOT)\s/i.test(` ${part} `)) throw new UnsupportedSqlError(sql, `the condition "${part.trim()}"`);
    const [left, right] = [operand(comparison[1]), operand(comparison[3])];
    const equal = comparison[2] === '=';
    return (input: RuleInput) => {
      const [a, b] = [left(input), right(input)];
      if (a === undefined || b === undefined) return false;
      return (a === b) === equal;
    };
  });
  return (input) => tests.every((test) => test(input));
};

/** Splits the SELECT list on the commas that are not inside parentheses or quotes. */
const splitItems = (list: string) => {
  const items: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (const char of list) {
    if (char === "'") quoted = !quoted;
    if (!quoted && char === '(') depth += 1;
    if (!quoted && char === ')') depth -= 1;
    if (!quoted && depth === 0 && char === ',') {
      items.push(current.trim());
      current = '';
    } else current += char;
  }
  items.push(current.trim());
  return items;
};

/**
 * Parses a rule's SQL.
 * @throws UnsupportedSqlError for anything outside the subset, and for another SQL version
 */
export const parseRuleSql = (sql: string, version = '2015-10-08'): RuleStatement => {
  if (version !== '2016-03-23') throw new UnsupportedSqlError(sql, `SQL version ${version}`);
  const statement = STATEMENT.exec(sql);
  if (!statement) throw new UnsupportedSqlError(sql, 'this statement');
  const [, list, topicFilter, rest] = statement;
  const where = rest ? whereOf(sql, rest) : () => true;
  const parts: Array<{ star: true } | { name: string; value: Expression }> = splitItems(list).map((item) => {
    if (item === '*') return { star: true as const };
    const aliased = ALIASED.exec(item);
    if (!aliased) throw new UnsupportedSqlError(sql, `the item "${item}" (an item other than * needs AS <name>)`);
    const value = functionOf(aliased[1]);
    if (!value) throw new UnsupportedSqlError(sql, `the expression "${aliased[1]}"`);
    return { name: aliased[2], value };
  });
  return {
    topicFilter,
    where,
    select: (input) => {
      const result: Record<string, unknown> = {};
      for (const part of parts) {
        if ('star' in part) {
          let payload: unknown;
          try {
            payload = JSON.parse(input.payload.toString('utf8'));
          } catch {
            payload = undefined;
          }
          if (!payload || typeof payload !== 'object' || Array.isArray(payload))
            throw new Error(`SELECT * over a payload that is not a JSON object (topic ${input.topic})`);
          Object.assign(result, payload);
        } else {
          const value = part.value(input);
          if (value !== undefined) result[part.name] = value;
        }
      }
      return result;
    },
  };
};
