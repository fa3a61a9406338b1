import fc from 'fast-check';
import { parseQuery, printQuery, type Clause, type CompareOp, type Query, type QueryValue } from '../../../../lambdas/domain/registry/query';
import { ValidationError } from '../../../../lambdas/shared/errors';

const RUNS = 2000;

const number = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0));
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }));
const date = fc
  .tuple(
    fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }),
    fc.constantFrom('Z', '+01:00', '-05:30'),
  )
  .map(([d, zone]) => d.toISOString().replace('Z', zone));
const keyChar = fc.constantFrom(...'abcXYZ019_.-');
const tagKey = fc.string({ unit: keyChar, minLength: 1, maxLength: 64 });
const stateKey = fc.string({ unit: fc.constantFrom(...'abZ09_-'), minLength: 1, maxLength: 8 });

type Kind = 'string' | 'boolean' | 'date' | 'json';
const field: fc.Arbitrary<{ name: string; kind: Kind }> = fc.oneof(
  fc.constantFrom(
    { name: 'name', kind: 'string' as Kind },
    { name: 'fleet_id', kind: 'string' as Kind },
    { name: 'firmware_version', kind: 'string' as Kind },
    { name: 'connected', kind: 'boolean' as Kind },
    { name: 'last_seen_at', kind: 'date' as Kind },
    { name: 'last_connected_at', kind: 'date' as Kind },
    { name: 'created_at', kind: 'date' as Kind },
  ),
  tagKey.map((key) => ({ name: `tags.${key}`, kind: 'string' as Kind })),
  fc
    .tuple(fc.constantFrom('reported', 'desired'), fc.array(stateKey, { minLength: 1, maxLength: 4 }))
    .map(([side, path]) => ({ name: `state.${side}.${path.join('.')}`, kind: 'json' as Kind })),
);

/** Values a field of this kind takes with `=`, `!=` and IN (null included), or with an ordering. */
const valuesFor = (kind: Kind, ordered: boolean): fc.Arbitrary<QueryValue> => {
  const some: Record<Kind, fc.Arbitrary<QueryValue>> = {
    string: fc.oneof(text, number),
    boolean: fc.boolean(),
    date,
    json: fc.oneof(text, number, fc.boolean()),
  };
  if (ordered) return kind === 'json' ? fc.oneof(text, number) : some[kind];
  return fc.oneof(some[kind], fc.constant(null));
};

const clause: fc.Arbitrary<Clause> = field.chain(({ name, kind }) =>
  fc.oneof(
    fc.constantFrom<CompareOp>('=', '!=').chain((op) => valuesFor(kind, false).map((value): Clause => ({ kind: 'compare', field: name, op, value }))),
    ...(kind === 'boolean'
      ? []
      : [
          fc
            .constantFrom<CompareOp>('<', '<=', '>', '>=')
            .chain((op) => valuesFor(kind, true).map((value): Clause => ({ kind: 'compare', field: name, op, value }))),
        ]),
    fc.array(valuesFor(kind, false), { minLength: 1, maxLength: 5 }).map((values): Clause => ({ kind: 'in', field: name, values })),
    fc.boolean().map((negated): Clause => ({ kind: 'exists', field: name, negated })),
  ),
);
const query: fc.Arbitrary<Query> = fc.array(clause, { minLength: 1, maxLength: 6 }).map((clauses) => ({ clauses }));

/** Query-like text: pieces of the language (and a few that are not) run together, with or without spaces. */
const PIECES = [
  'tags.site',
  'tags.a.b',
  'name',
  'connected',
  'created_at',
  'state.reported.x',
  'colour',
  '=',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  '!',
  'IN',
  'in',
  '(',
  ')',
  ',',
  '"x"',
  '"a\\"b"',
  '"\\u00e9"',
  '"unclosed',
  '3',
  '-1.5e2',
  '1e999',
  '0.',
  'true',
  'FALSE',
  'null',
  'AND',
  'and',
  'OR',
  'NOT',
  'EXISTS',
  '"2026-01-01T00:00:00Z"',
  "'x'",
  ';',
  '\t',
  '\\',
];
const soup = fc.tuple(fc.array(fc.constantFrom(...PIECES), { maxLength: 12 }), fc.constantFrom(' ', '', '  ')).map(([pieces, gap]) => pieces.join(gap));

/** Parses, answering the query or the ValidationError; anything else thrown fails the property. */
const attempt = (input: string): Query | ValidationError => {
  try {
    return parseQuery(input);
  } catch (error) {
    if (error instanceof ValidationError && error.details[0]?.field === 'query.q' && /^at character \d+: /.test(error.details[0].message)) return error;
    throw error;
  }
};

describe('the query language, by property', () => {
  it('parses any printed query back to the same query', () => {
    fc.assert(
      fc.property(query, (q) => {
        expect(parseQuery(printQuery(q))).toEqual(q);
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps parse → print → parse stable for any text that parses', () => {
    fc.assert(
      fc.property(fc.oneof(soup, query.map(printQuery)), (input) => {
        const first = attempt(input);
        if (first instanceof ValidationError) return;
        const printed = printQuery(first);
        expect(parseQuery(printed)).toEqual(first);
        expect(printQuery(parseQuery(printed))).toBe(printed);
      }),
      { numRuns: RUNS },
    );
  });

  it('throws nothing but a ValidationError on query.q naming a character, whatever the text', () => {
    fc.assert(
      fc.property(fc.oneof(soup, fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ maxLength: 2100 })), (input) => {
        const result = attempt(input);
        if (result instanceof ValidationError) {
          const at = Number(/^at character (\d+)/.exec(result.details[0].message)![1]);
          expect(at).toBeGreaterThanOrEqual(1);
          expect(at).toBeLessThanOrEqual(input.length + 1);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
