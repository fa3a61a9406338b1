import { z } from 'zod';
import { ValidationError } from '../../../lambdas/shared/errors';
import { callerOf, parseRequest, type ApiEvent } from '../../../lambdas/shared/http';

const NONE = z.strictObject({});
const request = (overrides: Partial<Record<'pathParameters' | 'multiValueQueryStringParameters' | 'body', unknown>>) =>
  ({ pathParameters: null, multiValueQueryStringParameters: null, body: undefined, ...overrides }) as unknown as ApiEvent;
const detailsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
};

describe('parseRequest: the query', () => {
  const schemas = {
    path: NONE,
    query: z.strictObject({ status: z.enum(['pending', 'done']).optional(), fleet: z.array(z.string()).optional() }),
    repeatable: ['fleet'],
  };
  const withQuery = (multi: Record<string, string[]> | null) => request({ multiValueQueryStringParameters: multi });

  it('keeps repeatable parameters as arrays and others as single values', () => {
    expect(parseRequest(schemas, withQuery({ status: ['done'], fleet: ['a', 'b'] })).query).toEqual({ status: 'done', fleet: ['a', 'b'] });
    expect(parseRequest(schemas, withQuery(null)).query).toEqual({});
  });

  it('names a single-valued parameter given twice', () => {
    expect(detailsOf(() => parseRequest(schemas, withQuery({ status: ['done', 'pending'] })))).toEqual([
      { field: 'query.status', message: 'Given more than once.' },
    ]);
  });

  it('names an unknown parameter', () => {
    expect(detailsOf(() => parseRequest(schemas, withQuery({ stauts: ['done'] })))).toEqual([{ field: 'query.stauts', message: 'Unknown field.' }]);
  });

  it('names a parameter called __proto__ as unknown rather than taking it for the prototype', () => {
    const multi = JSON.parse('{"__proto__": ["1"]}') as Record<string, string[]>; // an own key, as in API Gateway's JSON event

    expect(detailsOf(() => parseRequest(schemas, withQuery(multi)))).toEqual([{ field: 'query.__proto__', message: 'Unknown field.' }]);
  });
});

describe('parseRequest: the body', () => {
  it('names nested bad fields with their full path', () => {
    const schemas = { path: NONE, query: NONE, body: z.strictObject({ value: z.object({ n: z.number() }) }), repeatable: [] };

    expect(detailsOf(() => parseRequest(schemas, request({ body: { value: { n: 'one' } } })))).toEqual([expect.objectContaining({ field: 'body.value.n' })]);
  });

  it('reads an absent body as {}, and leaves the body undefined when the operation takes none', () => {
    const withDefaults = { path: NONE, query: NONE, body: z.strictObject({ type: z.string().default('sym') }), repeatable: [] };

    expect(parseRequest(withDefaults, request({})).body).toEqual({ type: 'sym' });
    expect(parseRequest({ path: NONE, query: NONE, repeatable: [] }, request({})).body).toBeUndefined();
  });

  it('refuses a JSON null body: only an absent body reads as {}', () => {
    const schemas = { path: NONE, query: NONE, body: z.strictObject({ value: z.record(z.string(), z.unknown()).default({}) }), repeatable: [] };

    expect(detailsOf(() => parseRequest(schemas, request({ body: null })))).toEqual([expect.objectContaining({ field: 'body' })]);
  });

  it('names the fields of the branch of the body’s own type when it may be one item or an array', () => {
    const item = z.strictObject({ tag: z.string().regex(/^\w+$/) });
    const schemas = { path: NONE, query: NONE, body: z.union([item, z.array(item)]), repeatable: [] };

    expect(detailsOf(() => parseRequest(schemas, request({ body: { tag: 'a b', extra: 1 } })))).toEqual([
      expect.objectContaining({ field: 'body.tag' }),
      { field: 'body.extra', message: 'Unknown field.' },
    ]);
    expect(detailsOf(() => parseRequest(schemas, request({ body: [{ tag: 'ok' }, { tag: 'a b' }] })))).toEqual([
      expect.objectContaining({ field: 'body.1.tag' }),
    ]);
    expect(detailsOf(() => parseRequest(schemas, request({ body: 'text' })))).toEqual([{ field: 'body', message: expect.any(String) }]);
  });

  it('names the fields of the object a body comes closest to when it may be one of several (a condition opened or closed)', () => {
    const opening = z.strictObject({ uuid: z.string(), tag: z.string(), start: z.string().optional() });
    const closing = z.strictObject({ uuid: z.string(), finish: z.string().optional() });
    const schemas = { path: NONE, query: NONE, body: z.union([opening, closing]), repeatable: [] };
    const fieldsOf = (body: unknown) => detailsOf(() => parseRequest(schemas, request({ body }))).map((d) => `${d.field}: ${d.message}`);

    expect(fieldsOf({ uuid: 'c', tag: 't', typo: 1 })).toEqual(['body.typo: Unknown field.']);
    expect(fieldsOf({ uuid: 'c', typo: 1 })).toEqual(['body.typo: Unknown field.']);
    // as near to either: the first (an opening) says what it does not take
    expect(fieldsOf({ uuid: 'c', tag: 't', finish: 'x' })).toEqual(['body.finish: Unknown field.']);
    expect(fieldsOf({ tag: 't' })).toEqual([expect.stringMatching(/^body\.uuid: /)]);
  });
});

describe('parseRequest: the whole request', () => {
  it('names every bad field of path, query and body at once', () => {
    const schemas = { path: z.strictObject({ id: z.string().min(2) }), query: NONE, body: z.strictObject({ name: z.string() }), repeatable: [] };

    const details = detailsOf(() => parseRequest(schemas, request({ pathParameters: { id: 'x' }, multiValueQueryStringParameters: { q: ['1'] }, body: {} })));

    expect(details.map((d) => d.field)).toEqual(['path.id', 'query.q', 'body.name']);
  });
});

describe('callerOf', () => {
  it('reads the authorizer context, and refuses a request without one', () => {
    const event = { requestContext: { authorizer: { accountId: 'acc-1', workspaceId: 'wks-1', keyId: 'key-1' } } } as unknown as ApiEvent;

    expect(callerOf(event)).toEqual({ accountId: 'acc-1', workspaceId: 'wks-1', keyId: 'key-1' });
    expect(() => callerOf({ requestContext: {} } as unknown as ApiEvent)).toThrow(/X-API-KEY/);
  });
});
