import { QUERY_TEXT_MAX } from '../../../schemas/tags';
import { type Clause, type CompareOp, type Query, type QueryValue, QUERY_CLAUSES_MAX, QUERY_IN_VALUES_MAX } from './ast';
import { FIELD_LIST, isRfc3339, resolveField, typeOf, type FieldType } from './fields';
import { queryError, tokenize, type Token } from './tokens';

const OPERATORS = '(=, !=, <, <=, >, >=, IN, EXISTS)';
const ORDERING: ReadonlySet<string> = new Set(['<', '<=', '>', '>=']);

/** A token as an error message names it. */
const described = (token: Token) => {
  if (token.kind === 'end') return 'the end of the query';
  if (token.kind === 'string') return `the string ${JSON.stringify(token.text)}`;
  return `\`${token.text}\``;
};

const isKeyword = (token: Token, keyword: string) => token.kind === 'word' && token.text.toUpperCase() === keyword;

/** Whether a value fits a field of this type in a clause with this operator; a message saying what fits when not. */
const misfit = (type: FieldType, op: CompareOp | 'IN', value: QueryValue, field: string): string | undefined => {
  if (ORDERING.has(op)) {
    if (value === null || typeof value === 'boolean') return `expected a string, number or date after \`${op}\`: ${String(value)} has no order`;
    if (type === 'boolean') return `\`${field}\` is true or false: use = or != (not \`${op}\`)`;
  }
  if (value === null) return undefined; // a missing field: = null, != null, IN (…, null)
  if (type === 'boolean' && typeof value !== 'boolean') return `expected true or false for \`${field}\``;
  if (type === 'date' && !(typeof value === 'string' && isRfc3339(value)))
    return `expected an RFC 3339 date in quotes for \`${field}\` ("2026-11-01T00:00:00Z")`;
  if (type === 'string' && typeof value === 'boolean') return `expected a string or number for \`${field}\`, not ${String(value)}`;
  return undefined;
};

/** A recursive-descent parser over the tokens of one query (the grammar: docs/api.md, spec fleet-state.md §1). */
class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[]) {}

  private get head() {
    return this.tokens[this.i];
  }
  private take() {
    return this.tokens[this.i++];
  }
  /** Whether the next token is of this kind (a method, so that TypeScript does not narrow `head` across `take`). */
  private sees(kind: Token['kind']) {
    return this.tokens[this.i].kind === kind;
  }

  /** query := clause ( "AND" clause )* */
  query(): Query {
    const clauses = [this.clause()];
    while (isKeyword(this.head, 'AND')) {
      this.take();
      if (clauses.length === QUERY_CLAUSES_MAX) throw queryError(this.head.at, `a query holds at most ${QUERY_CLAUSES_MAX} clauses`);
      clauses.push(this.clause());
    }
    if (!this.sees('end')) {
      const what = isKeyword(this.head, 'OR') ? '`OR` is not in the language (AND only): run one query per alternative' : `found ${described(this.head)}`;
      throw queryError(this.head.at, `expected \`AND\` or the end of the query; ${what}`);
    }
    return { clauses };
  }

  /** clause := field op value | field "IN" "(" value ("," value)* ")" | "NOT"? "EXISTS" field */
  private clause(): Clause {
    if (isKeyword(this.head, 'NOT') || isKeyword(this.head, 'EXISTS')) {
      const negated = isKeyword(this.take(), 'NOT');
      if (negated) {
        if (!isKeyword(this.head, 'EXISTS')) throw queryError(this.head.at, `expected \`EXISTS\` after \`NOT\`, found ${described(this.head)}`);
        this.take();
      }
      return { kind: 'exists', field: this.field().name, negated };
    }
    const field = this.field();
    const op = this.head;
    if (isKeyword(op, 'IN')) {
      this.take();
      return { kind: 'in', field: field.name, values: this.list(field) };
    }
    if (op.kind !== 'op') {
      const hint = isKeyword(op, 'EXISTS') ? ' (write `EXISTS <field>`)' : '';
      throw queryError(op.at, `expected an operator ${OPERATORS} after \`${field.name}\`, found ${described(op)}${hint}`);
    }
    this.take();
    return { kind: 'compare', field: field.name, op: op.text as CompareOp, value: this.value(field, op.text as CompareOp) };
  }

  /** field := name | fleet_id | … | tags.<key> | state.reported.<key> | state.desired.<key> */
  private field() {
    const token = this.head;
    if (token.kind !== 'word') throw queryError(token.at, `expected a field (${FIELD_LIST}), found ${described(token)}`);
    const ref = resolveField(token.text);
    if ('error' in ref) throw queryError(token.at, `${ref.error}; the fields are ${FIELD_LIST}`);
    this.take();
    return { name: token.text, type: typeOf(ref) };
  }

  /** "(" value ("," value)* ")" */
  private list(field: { name: string; type: FieldType }) {
    if (!this.sees('(')) throw queryError(this.head.at, `expected \`(\` after \`IN\`, found ${described(this.head)}`);
    this.take();
    const values = [this.value(field, 'IN')];
    while (this.sees(',')) {
      this.take();
      if (values.length === QUERY_IN_VALUES_MAX) throw queryError(this.head.at, `\`IN\` takes at most ${QUERY_IN_VALUES_MAX} values`);
      values.push(this.value(field, 'IN'));
    }
    if (!this.sees(')')) throw queryError(this.head.at, `expected \`,\` or \`)\` in the list after \`IN\`, found ${described(this.head)}`);
    this.take();
    return values;
  }

  /** value := "quoted" | number | true | false | null, fitting the field's type */
  private value(field: { name: string; type: FieldType }, op: CompareOp | 'IN'): QueryValue {
    const token = this.head;
    let value: QueryValue;
    if (token.kind === 'string') value = token.text;
    else if (token.kind === 'number') {
      value = Number(token.text);
      if (!Number.isFinite(value)) throw queryError(token.at, `the number ${token.text} is out of range`);
      if (Object.is(value, -0)) value = 0;
    } else if (isKeyword(token, 'TRUE')) value = true;
    else if (isKeyword(token, 'FALSE')) value = false;
    else if (isKeyword(token, 'NULL')) value = null;
    else {
      const hint = token.kind === 'word' ? ` (strings are written in double quotes: ${JSON.stringify(token.text)})` : '';
      throw queryError(token.at, `expected a value ("text", a number, true, false or null) after \`${op}\`, found ${described(token)}${hint}`);
    }
    const wrong = misfit(field.type, op, value, field.name);
    if (wrong) throw queryError(token.at, wrong);
    this.take();
    return value;
  }
}

/**
 * Parses a query of the language of spec fleet-state.md §1.
 * @throws ValidationError with `details[0].field = 'query.q'` and a message naming the character
 * (counted from 1) where the query goes wrong and what was expected there.
 */
export const parseQuery = (text: string): Query => {
  if (text.length > QUERY_TEXT_MAX) throw queryError(QUERY_TEXT_MAX + 1, `a query is at most ${QUERY_TEXT_MAX} characters`);
  return new Parser(tokenize(text)).query();
};
