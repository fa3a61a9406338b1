/**
 * The OpenAPI document as the fuzz suite reads it: its operations, what each documents as its
 * answers, and ajv validators (JSON Schema 2020-12) for request and response bodies.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { JsonSchema } from './json-schema-arbitrary';

// ajv-formats is CommonJS: under native ESM its function is the default export's default.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

export interface OpenApiDocument {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, JsonSchema>; securitySchemes?: Record<string, unknown> };
  security?: Array<Record<string, unknown>>;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  operationId: string;
  method: string;
  /** The path template below the stage (`/workspaces/{workspaceId}`). */
  path: string;
  parameters: Parameter[];
  /** The JSON body's schema, when the operation takes one. */
  body?: { schema: JsonSchema; required: boolean };
  /** Documented statuses (`200`, `4XX`, `default`) and their JSON schema, if any. */
  responses: Record<string, JsonSchema | undefined>;
  /** The security scheme names that apply (`apiKey`, `deviceToken`), empty for none. */
  security: string[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Every operation of the document, in its order. */
export const operationsOf = (doc: OpenApiDocument): Operation[] =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => {
      const op = item[m];
      const parameters: Parameter[] = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const json = op.requestBody?.content?.['application/json'];
      const security = (op.security ?? doc.security ?? []).flatMap((req: Record<string, unknown>) => Object.keys(req));
      return {
        operationId: op.operationId,
        method: m.toUpperCase(),
        path,
        parameters,
        body: json ? { schema: json.schema ?? {}, required: Boolean(op.requestBody.required) } : undefined,
        responses: Object.fromEntries(
          Object.entries(op.responses ?? {}).map(([status, r]: [string, any]) => [status, r?.content?.['application/json']?.schema]),
        ),
        security,
      };
    }),
  );

/** The documented response key that covers a status: exact, then `4XX`, then `default`. */
export const documentedKey = (op: Operation, status: number): string | undefined =>
  [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in op.responses);

/** Compiles, once each, validators for schemas that live in (or `$ref` into) the document. */
export const validators = (doc: OpenApiDocument) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  // The whole document under one id, so that "#/components/schemas/…" resolves from any fragment.
  ajv.addSchema(doc as object, 'openapi.json');
  const cache = new Map<string, ValidateFunction>();
  const pointer = (parts: string[]) => `openapi.json#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  const at = (parts: string[]) => {
    const ref = pointer(parts);
    let fn = cache.get(ref);
    if (!fn) cache.set(ref, (fn = ajv.compile({ $ref: ref })));
    return fn;
  };
  return {
    /** The validator of an operation's documented answer for a response key. */
    response: (op: Operation, key: string) => at(['paths', op.path, op.method.toLowerCase(), 'responses', key, 'content', 'application/json', 'schema']),
    /** The validator of an operation's request body. */
    requestBody: (op: Operation) => at(['paths', op.path, op.method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema']),
    /** The validator of a parameter's schema. */
    parameter: (op: Operation, name: string) => {
      const item = doc.paths[op.path];
      const inOp = (item[op.method.toLowerCase()].parameters ?? []).findIndex((p: Parameter) => p.name === name);
      if (inOp >= 0) return at(['paths', op.path, op.method.toLowerCase(), 'parameters', String(inOp), 'schema']);
      const inPath = (item.parameters ?? []).findIndex((p: Parameter) => p.name === name);
      return at(['paths', op.path, 'parameters', String(inPath), 'schema']);
    },
    /** ajv's errors, short enough for a failure message. */
    describe: (fn: ValidateFunction) => ajv.errorsText(fn.errors?.slice(0, 4), { separator: '; ' }),
  };
};
export type Validators = ReturnType<typeof validators>;
