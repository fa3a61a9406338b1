import { parseQuery, printQuery } from '../../../../lambdas/domain/registry/query';
import { ValidationError } from '../../../../lambdas/shared/errors';

/** The message of the 400 a query gets, or undefined when it parses. */
const errorOf = (text: string) => {
  try {
    parseQuery(text);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    const { details } = error as ValidationError;
    expect(details).toHaveLength(1);
    expect(details[0].field).toBe('query.q');
    return details[0].message;
  }
};

describe('parseQuery', () => {
  it('reads each kind of clause, ANDed, with the field as written', () => {
    expect(
      parseQuery(
        'tags.site = "milan" AND connected = true AND firmware_version IN ("1.0", null) AND NOT EXISTS tags.retired AND EXISTS state.reported.fw.major AND last_seen_at < "2026-11-01T00:00:00Z" AND tags.floor >= -2.5e1',
      ),
    ).toEqual({
      clauses: [
        { kind: 'compare', field: 'tags.site', op: '=', value: 'milan' },
        { kind: 'compare', field: 'connected', op: '=', value: true },
        { kind: 'in', field: 'firmware_version', values: ['1.0', null] },
        { kind: 'exists', field: 'tags.retired', negated: true },
        { kind: 'exists', field: 'state.reported.fw.major', negated: false },
        { kind: 'compare', field: 'last_seen_at', op: '<', value: '2026-11-01T00:00:00Z' },
        { kind: 'compare', field: 'tags.floor', op: '>=', value: -25 },
      ],
    });
  });

  it('takes keywords in any case, no spaces around operators, and JSON string escapes', () => {
    expect(parseQuery('tags.a="x\\"y\\u00e9" and not exists tags.b and name in ("n")')).toEqual({
      clauses: [
        { kind: 'compare', field: 'tags.a', op: '=', value: 'x"yé' },
        { kind: 'exists', field: 'tags.b', negated: true },
        { kind: 'in', field: 'name', values: ['n'] },
      ],
    });
  });

  it('reads tag keys with dots and dashes as one key', () => {
    expect(parseQuery('tags.hw.rev-2 = "b"').clauses[0]).toEqual({ kind: 'compare', field: 'tags.hw.rev-2', op: '=', value: 'b' });
  });

  it.each([
    ['tags.site', 'at character 10: expected an operator (=, !=, <, <=, >, >=, IN, EXISTS) after `tags.site`, found the end of the query'],
    ['tags.site = "milan" AND tags.model', 'at character 35: expected an operator (=, !=, <, <=, >, >=, IN, EXISTS) after `tags.model`'],
    ['colour = "red"', 'at character 1: unknown field `colour`'],
    ['tags.my key = "x"', 'at character 9: expected an operator'],
    [
      'tags.site = milan',
      'at character 13: expected a value ("text", a number, true, false or null) after `=`, found `milan` (strings are written in double quotes: "milan")',
    ],
    ['name = "a" OR name = "b"', 'at character 12: expected `AND` or the end of the query; `OR` is not in the language'],
    ['name = "open', 'at character 8: a string is not closed'],
    ['connected = "yes"', 'at character 13: expected true or false for `connected`'],
    ['connected > false', 'at character 13: expected a string, number or date after `>`'],
    ['created_at < "2026-13-01T00:00:00Z"', 'at character 14: expected an RFC 3339 date in quotes for `created_at`'],
    ['last_seen_at > null', 'at character 16: expected a string, number or date after `>`: null has no order'],
    ['tags.a IN "x"', 'at character 11: expected `(` after `IN`'],
    ['tags.a IN ("x" "y")', 'at character 16: expected `,` or `)` in the list after `IN`'],
    ['NOT tags.a', 'at character 5: expected `EXISTS` after `NOT`'],
    ['tags.a = 1.', 'at character 12: expected a digit after the decimal point'],
    ['tags.a = 1e999', 'at character 10: the number 1e999 is out of range'],
    ['tags.a ! "x"', 'at character 8: expected `!=`'],
    ["tags.a = 'x'", 'at character 10: expected a value: strings are written in double quotes'],
    ['', 'at character 1: expected a field'],
    ['tags. = "x"', 'at character 1: `` is not a tag key'],
    ['state.reported..a = 1', 'at character 1: `state.reported..a` is not a state path'],
    ['name = "a" AND', 'at character 15: expected a field'],
    ['name = "a" ; drop', 'at character 12: unexpected character `;`'],
  ])('refuses %j: %s', (text, message) => {
    expect(errorOf(text)).toContain(message);
  });

  it('refuses a query longer than 2,000 characters, more than 50 clauses or 100 values in an IN', () => {
    expect(errorOf(`name = "${'x'.repeat(2000)}"`)).toContain('at most 2000 characters');
    expect(errorOf(Array.from({ length: 51 }, () => 'connected = true').join(' AND '))).toContain('at most 50 clauses');
    expect(errorOf(`tags.a IN (${Array.from({ length: 101 }, (_, i) => `"${i}"`).join(', ')})`)).toContain('at most 100 values');
  });
});

describe('printQuery', () => {
  it('prints the canonical form: upper-case keywords, JSON strings, one space around operators', () => {
    expect(printQuery(parseQuery('tags.a="x\\ty" and connected!=false and not exists tags.b and tags.n in (1,"2",null)'))).toBe(
      'tags.a = "x\\ty" AND connected != false AND NOT EXISTS tags.b AND tags.n IN (1, "2", null)',
    );
  });
});
