import { z } from 'zod';
import { ValidationError } from '../../../lambdas/shared/errors';
import { callerOf, parseBody, parseQuery, type ApiEvent } from '../../../lambdas/shared/http';

const withQuery = (multi: Record<string, string[]> | null) => ({ multiValueQueryStringParameters: multi }) as unknown as ApiEvent;

describe('parseQuery', () => {
  const schema = z.strictObject({ status: z.enum(['pending', 'done']).optional(), fleet: z.array(z.string()).optional() });

  it('keeps repeatable parameters as arrays and others as single values', () => {
    expect(parseQuery(schema, withQuery({ status: ['done'], fleet: ['a', 'b'] }), ['fleet'])).toEqual({ status: 'done', fleet: ['a', 'b'] });
    expect(parseQuery(schema, withQuery(null), ['fleet'])).toEqual({});
  });

  it('names a single-valued parameter given twice', () => {
    expect(() => parseQuery(schema, withQuery({ status: ['done', 'pending'] }))).toThrow(
      expect.objectContaining({ details: [{ field: 'query.status', message: 'Given more than once.' }] }),
    );
  });

  it('names an unknown parameter', () => {
    expect(() => parseQuery(schema, withQuery({ stauts: ['done'] }))).toThrow(
      expect.objectContaining({ details: [{ field: 'query.stauts', message: 'Unknown field.' }] }),
    );
  });
});

describe('parseBody', () => {
  it('names nested bad fields with their full path', () => {
    const schema = z.strictObject({ value: z.object({ n: z.number() }) });
    const event = { body: { value: { n: 'one' } } } as unknown as ApiEvent;

    expect(() => parseBody(schema, event)).toThrow(ValidationError);
    expect(() => parseBody(schema, event)).toThrow(expect.objectContaining({ details: [expect.objectContaining({ field: 'body.value.n' })] }));
  });
});

describe('callerOf', () => {
  it('reads the authorizer context, and refuses a request without one', () => {
    const event = { requestContext: { authorizer: { accountId: 'acc-1', workspaceId: 'wks-1', keyId: 'key-1' } } } as unknown as ApiEvent;

    expect(callerOf(event)).toEqual({ accountId: 'acc-1', workspaceId: 'wks-1', keyId: 'key-1' });
    expect(() => callerOf({ requestContext: {} } as unknown as ApiEvent)).toThrow(/X-API-KEY/);
  });
});
