import * as z from 'zod';
import { ROUTES, type Route } from '../routes';
import { ERROR_CODES, ErrorResponseSchema } from './error';
import type { Operation } from './operation';
import { OPERATIONS } from './operations';

export { OPERATIONS };

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] };

/** JSON Schema of a zod schema, its named parts moved to `components.schemas`. */
const toSchema = (schema: z.ZodType, components: Record<string, unknown>, io: 'input' | 'output'): JsonSchema => {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    // Query counts (and flags) are strings that the schema reads as integers (booleans); the document says integer (boolean).
    override: ({ jsonSchema }) => {
      if (jsonSchema.type === 'integer' || jsonSchema.type === 'boolean') delete jsonSchema.pattern;
    },
  }) as JsonSchema;
  const text = JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/');
  const { $schema: _s, $defs, ...rest } = JSON.parse(text) as JsonSchema & { $defs?: Record<string, unknown> };
  Object.assign(components, $defs);
  if (typeof rest.id === 'string') {
    // a named schema at the top: reference it, like its uses inside other schemas
    const { id, ...named } = rest;
    components[id] = named;
    return { $ref: `#/components/schemas/${id}` };
  }
  return rest;
};

const parameters = (where: 'path' | 'query', schema: z.ZodObject | undefined, components: Record<string, unknown>) => {
  if (!schema) return [];
  const json = toSchema(schema, components, 'input');
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    schema: s,
  }));
};

/** An error answer: the envelope, with the codes that go with its status (all of them unless told). */
const errorAnswer = (status: keyof typeof ERROR_CODES, description: string, codes: readonly string[] = ERROR_CODES[status]) => ({
  description,
  content: {
    'application/json': {
      schema: {
        allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes } } } } }],
      },
    },
  },
});

/**
 * Every status an operation can answer besides its success, each with when: the gateway's own
 * answers (401 from an authorizer, 413 over 10 MB, 414 and 431 over its URL and head limits, 429
 * throttling) and the handler's.
 */
export const errorAnswersOf = (route: Route, op: Operation) => ({
  '400': errorAnswer(
    400,
    op.body
      ? 'Invalid path parameter, query parameter or body; an unknown parameter or field; malformed JSON (validation_error, details name each bad field); or malformed percent-encoding, refused by the gateway (bad_request)'
      : 'Invalid path parameter or query parameter, an unknown parameter, or any body: this operation takes none (validation_error, details name each bad field); or malformed percent-encoding, refused by the gateway (bad_request)',
  ),
  ...(route.auth === 'api-key' ? { '401': errorAnswer(401, 'Missing, unknown, revoked or expired API key') } : {}),
  ...(route.auth === 'device'
    ? {
        '401': errorAnswer(
          401,
          'Missing or refused device token. When the token is signed by the device’s key but refused (expired, living longer than allowed, or of a revoked identity), details say which (field header.authorization); otherwise details are empty',
        ),
      }
    : {}),
  // The stage's web ACL (lib/constructs/api-firewall.ts), before any route or credential: every operation.
  '403': errorAnswer(
    403,
    'The API’s firewall blocked the caller’s address: more requests from it than its per-IP rate allows (firewallIpRateLimit in firewallWindowSeconds; see docs/limits.md). Retry once the address has slowed down',
  ),
  ...(op.notFound || op.path || route.auth === 'device'
    ? { '404': errorAnswer(404, op.notFound ?? 'No such resource, or not in the caller’s account (any well-formed ID that is not the caller’s)') }
    : {}),
  ...(op.conflict ? { '409': errorAnswer(409, op.conflict) } : {}),
  '413': errorAnswer(413, op.body ? 'Body over 64 KB (or request over API Gateway’s 10 MB)' : 'Request over API Gateway’s 10 MB'),
  // The gateway's limits on the request line and head (API Gateway REST, regional), whatever the route.
  '414': errorAnswer(414, 'URL over 10,240 characters'),
  ...(op.body ? { '415': errorAnswer(415, 'A body that is not application/json') } : {}),
  '429': errorAnswer(
    429,
    [
      ...(op.quota ? [`quota_exceeded: ${op.quota}; details name the limit (field limits.<name>) and its value`] : []),
      route.auth === 'api-key'
        ? 'rate_limited: over the API key’s requests_per_second_per_key (or the API’s own rate); retry after Retry-After seconds'
        : 'rate_limited: over the API’s own rate; retry after Retry-After seconds',
      'throttled: the service is busy; retry with backoff',
    ].join('. '),
    op.quota ? ERROR_CODES[429] : ERROR_CODES[429].filter((code) => code !== 'quota_exceeded'),
  ),
  '431': errorAnswer(431, 'Request line and headers over 10,240 bytes'),
  '500': errorAnswer(500, 'Internal error'),
});

/** The OpenAPI 3.1 document of the whole interface, built from the route table and the zod schemas. */
export const buildOpenApi = () => {
  const components: Record<string, unknown> = {};
  toSchema(ErrorResponseSchema, components, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const op = OPERATIONS[route.operationId];
    if (!op) throw new Error(`No OpenAPI operation for ${route.operationId}`);
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.handler],
      ...(route.auth === 'none' ? { security: [] } : route.auth === 'device' ? { security: [{ deviceToken: [] }] } : {}),
      parameters: [...parameters('path', op.path, components), ...parameters('query', op.query, components)],
      // An absent body reads as {}: required only when {} is not a valid body.
      ...(op.body
        ? { requestBody: { required: !op.body.safeParse({}).success, content: { 'application/json': { schema: toSchema(op.body, components, 'input') } } } }
        : {}),
      responses: {
        [op.status ?? 200]: {
          description: op.status === 202 ? 'Accepted' : op.status === 201 ? 'Created' : 'OK',
          content: { 'application/json': { schema: toSchema(op.response, components, 'output') } },
        },
        ...errorAnswersOf(route, op),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Fleetstream v3',
      version: '3.0.0',
      description: 'Device management, time-series storage and webhook interface (Zerynth Device Manager v3 compatible).',
    },
    servers: [{ url: '/v3' }],
    // Either one: an API key, or a console user's session.
    security: [{ apiKey: [] }, { session: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
        session: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A signed-in console user’s session: the Cognito user pool’s access token (not its ID token). It stands for the user’s account, with no bound workspace; a request with an X-API-KEY is judged by the key.',
        },
        deviceToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A device token: HS256 JWT with sub = device ID, key = identity ID, exp ≤ 1 h ahead, signed with the identity’s key',
        },
      },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
};
