import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { z } from 'zod';
import { UnauthorizedError, ValidationError, type ErrorDetail } from './errors';

/** A REST API proxy event after body parsing (the body is JSON, or undefined when empty). */
export type ApiEvent = Omit<APIGatewayProxyEvent, 'body'> & { body: unknown };

/** Who is calling, as the authorizer established it from the API key. */
export interface Caller {
  accountId: string;
  /** The workspace the API key is bound to. */
  workspaceId: string;
  keyId: string;
}

/** A JSON answer. */
export const ok = (statusCode: number, body: unknown): APIGatewayProxyResult => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const detailsOf = (error: z.ZodError, location: string): ErrorDetail[] =>
  error.issues.flatMap((issue) => {
    const at = [location, ...issue.path.map(String)];
    // name each unknown field rather than the object that holds it
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ field: [...at, key].join('.'), message: 'Unknown field.' }));
    return [{ field: at.join('.'), message: issue.message }];
  });

const parse = <S extends z.ZodType>(schema: S, value: unknown, location: string): z.infer<S> => {
  const result = schema.safeParse(value);
  if (!result.success) {
    const details = detailsOf(result.error, location);
    throw new ValidationError(`Invalid ${location}: ${details.map((d) => d.field).join(', ')}.`, { details });
  }
  return result.data;
};

/** Parses the path parameters. @throws ValidationError naming each bad parameter. */
export const parsePath = <S extends z.ZodType>(schema: S, event: ApiEvent): z.infer<S> =>
  parse(schema, event.pathParameters ?? {}, 'path');

/**
 * Parses the query string: every parameter is a single value except those named `repeatable`,
 * which are arrays (`?fleet=a&fleet=b`). @throws ValidationError naming each bad parameter.
 */
export const parseQuery = <S extends z.ZodType>(schema: S, event: ApiEvent, repeatable: string[] = []): z.infer<S> => {
  const multi = event.multiValueQueryStringParameters ?? {};
  const query: Record<string, string | string[]> = {};
  const repeated: ErrorDetail[] = [];
  for (const [key, values] of Object.entries(multi)) {
    if (!values) continue;
    if (repeatable.includes(key)) query[key] = values;
    else if (values.length > 1) repeated.push({ field: `query.${key}`, message: 'Given more than once.' });
    else query[key] = values[0];
  }
  if (repeated.length) throw new ValidationError('A query parameter is repeated.', { details: repeated });
  return parse(schema, query, 'query');
};

/** Parses the JSON body (an absent body parses as `{}`). @throws ValidationError naming each bad field. */
export const parseBody = <S extends z.ZodType>(schema: S, event: ApiEvent): z.infer<S> =>
  parse(schema, event.body ?? {}, 'body');

/** The caller the authorizer put in the request context. @throws UnauthorizedError when absent. */
export const callerOf = (event: ApiEvent): Caller => {
  const context = event.requestContext?.authorizer ?? {};
  const { accountId, workspaceId, keyId } = context as Partial<Caller>;
  if (!accountId || !workspaceId || !keyId) throw new UnauthorizedError();
  return { accountId, workspaceId, keyId };
};
