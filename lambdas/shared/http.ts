import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { z } from 'zod';
import { UnauthorizedError, ValidationError, type ErrorDetail } from './errors';

/** A REST API proxy event after body parsing (the body is JSON, or undefined when empty). */
export type ApiEvent = Omit<APIGatewayProxyEvent, 'body'> & { body: unknown };

/** Who is calling, as the authorizer established it from an API key or a console session. */
export interface Caller {
  accountId: string;
  /** The workspace the API key is bound to; a session has none. */
  workspaceId?: string;
  /** The API key used; absent for a session. */
  keyId?: string;
  /** The signed-in console user (its Cognito `sub`); absent for an API key. */
  userId?: string;
}

/** A JSON answer. */
export const ok = (statusCode: number, body: unknown): APIGatewayProxyResult => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

type Issue = z.core.$ZodIssue;

// Fields an issue names as wrong (each unknown field of an object, or the one field).
const wrongFields = (branch: Issue[]) => branch.reduce((n, i) => n + (i.code === 'unrecognized_keys' ? i.keys.length : 1), 0);

// A body that may be one item or an array of them (the device API's publish and report routes)
// fails as a union: name the fields of the branch of its own type, not "Invalid input" at the top.
// A body that may be one of several objects (a condition's opening or its closing) is named by the
// one it comes closest to: the fewest fields wrong, the first on a tie.
const unionBranch = (issue: Issue & { code: 'invalid_union' }): Issue[] | undefined => {
  const branches = issue.errors.filter((branch) => !(branch.length === 1 && branch[0].code === 'invalid_type' && branch[0].path.length === 0));
  if (branches.length === 0) return undefined;
  const closest = branches.reduce((best, branch) => (wrongFields(branch) < wrongFields(best) ? branch : best));
  return closest.map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
};

const detailsOfIssues = (issues: Issue[], location: string): ErrorDetail[] =>
  issues.flatMap((issue) => {
    const at = [location, ...issue.path.map(String)];
    // name each unknown field rather than the object that holds it
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ field: [...at, key].join('.'), message: 'Unknown field.' }));
    if (issue.code === 'invalid_union') {
      const branch = unionBranch(issue);
      if (branch) return detailsOfIssues(branch, location);
    }
    return [{ field: at.join('.'), message: issue.message }];
  });

const invalid = (location: string, details: ErrorDetail[]) =>
  new ValidationError(`Invalid ${location}: ${details.map((d) => d.field).join(', ')}.`, { details });

/** Parses a value, adding what is wrong with it to `details`. */
const collect = <S extends z.ZodType>(schema: S, value: unknown, location: string, details: ErrorDetail[]): z.infer<S> | undefined => {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  details.push(...detailsOfIssues(result.error.issues, location));
  return undefined;
};

/**
 * The query string as an object: every parameter is a single value except those named
 * `repeatable`, which are arrays (`?fleet=a&fleet=b`); a single-valued one given twice is added to
 * `details`.
 */
const queryOf = (event: ApiEvent, repeatable: readonly string[], details: ErrorDetail[]) => {
  const multi = event.multiValueQueryStringParameters ?? {};
  // No prototype: `?__proto__=1` is an unknown parameter like any other, not a prototype change.
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [key, values] of Object.entries(multi)) {
    if (!values) continue;
    if (repeatable.includes(key)) query[key] = values;
    else if (values.length > 1) details.push({ field: `query.${key}`, message: 'Given more than once.' });
    else query[key] = values[0];
  }
  return query;
};

/** The schemas a request is read with: path parameters, query string and JSON body. */
export interface RequestSchemas {
  path: z.ZodType;
  query: z.ZodType;
  /** Omitted: the request has no body. */
  body?: z.ZodType;
  /** The query parameters that may repeat. */
  repeatable: readonly string[];
}

/**
 * Parses a whole request (path parameters, query string and, when it has one, the JSON body, an
 * absent body parsing as `{}`, a JSON `null` refused) and reports every bad field at once.
 * @throws ValidationError naming each bad field (`path.deviceId`, `query.stauts`, `body.name`).
 */
export const parseRequest = (schemas: RequestSchemas, event: ApiEvent) => {
  const details: ErrorDetail[] = [];
  const path = collect(schemas.path, event.pathParameters ?? {}, 'path', details);
  const query = collect(schemas.query, queryOf(event, schemas.repeatable, details), 'query', details);
  // Only an absent body reads as `{}`: a JSON `null` is a body, and not an object.
  const body = schemas.body ? collect(schemas.body, event.body === undefined ? {} : event.body, 'body', details) : undefined;
  if (details.length) throw invalid([...new Set(details.map((d) => d.field.split('.')[0]))].join(' and '), details);
  return { path, query, body } as { path: unknown; query: unknown; body: unknown };
};

/** The caller the authorizer put in the request context. @throws UnauthorizedError when absent. */
export const callerOf = (event: ApiEvent): Caller => {
  const context = event.requestContext?.authorizer ?? {};
  const { accountId, workspaceId, keyId, userId } = context as Partial<Caller>;
  if (accountId && workspaceId && keyId) return { accountId, workspaceId, keyId };
  if (accountId && userId) return { accountId, userId };
  throw new UnauthorizedError();
};
