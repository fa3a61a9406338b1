/**
 * The small part of IoT Core's rule SQL (version 2016-03-23) that topic rules of a template may use
 * here: `SELECT <items> FROM '<topic filter>'`, where an item is `*` (the JSON payload's fields) or
 * one of `encode(*, 'base64')`, `topic()`, `topic(n)`, `timestamp()`, `clientid()` with `AS <name>`.
 * Anything else (a WHERE clause, another function, a field path) is refused when the rule is read,
 * so a rule this runtime cannot evaluate stops the start instead of being evaluated wrongly.
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

/** A parsed statement: the topic filter of its FROM, and the message its SELECT makes of a publish. */
export interface RuleStatement {
  topicFilter: string;
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
      `IoT SQL ${JSON.stringify(sql)}: ${part} is not supported by the cloud-assembly runtime (SELECT of *, encode(*, 'base64'), topic(), topic(n), timestamp(), clientid() AS <name> FROM '<topic>' only)`,
    );
    this.name = 'UnsupportedSqlError';
  }
}

const STATEMENT = /^\s*SELECT\s+(.+?)\s+FROM\s+'([^']+)'\s*(.*?)\s*;?\s*$/is;
const ALIASED = /^(.+?)\s+AS\s+([A-Za-z_][A-Za-z0-9_]*)$/is;

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
  if (rest) throw new UnsupportedSqlError(sql, `"${rest}"`);
  const parts: Array<{ star: true } | { name: string; value: Expression }> = splitItems(list).map((item) => {
    if (item === '*') return { star: true as const };
    const aliased = ALIASED.exec(item);
    if (!aliased) throw new UnsupportedSqlError(sql, `the item "${item}" (an item other than * needs AS <name>)`);
    const normalized = aliased[1].replace(/\s+/g, '').toLowerCase();
    for (const [pattern, build] of FUNCTIONS) {
      const match = pattern.exec(normalized);
      if (match) return { name: aliased[2], value: build(match) };
    }
    throw new UnsupportedSqlError(sql, `the expression "${aliased[1]}"`);
  });
  return {
    topicFilter,
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
