/**
 * Request arbitraries for one operation of the OpenAPI document, in families: valid requests,
 * and one family per kind of bad input of issue 8 (IDs of another account, unknown and malformed
 * IDs, unknown and invalid query parameters, invalid bodies, a body where none belongs, wrong
 * content types, oversized bodies, missing credentials, hostile raw paths). Each family states
 * the statuses its requests must get, where the interface fixes them.
 */
import fc from 'fast-check';
import { invalidArbitrary, validArbitrary, type JsonSchema, type SchemaContext } from './json-schema-arbitrary';
import { parsedJson, toJsonText } from './hostile';
import type { OpenApiDocument, Operation, Parameter, Validators } from './openapi';

/** How a request authenticates: the fuzzer's key or device token, or a deliberate failure. */
export type Auth = 'api-key' | 'device' | 'none' | 'missing' | 'bad-key' | 'bad-token' | 'token-for-key' | 'key-for-token';

/** The IDs of one account's resources that belong together, by ID prefix (`wks`, `flt`, `dev`, …). */
export interface Context {
  ids: Record<string, string[]>;
  /** Job names scheduled on the context's devices. */
  jobNames: string[];
}

export interface Fixture {
  /** The caller's account: one context per workspace. */
  own: Context[];
  /**
   * The caller's resources the deleting operations ({@link DELETING_OPERATIONS}) are fuzzed on, in
   * a workspace of their own, so that deleting them leaves every other operation its resources.
   */
  doomed: Context[];
  /** Another account's resources: each must be answered 404. */
  foreign: Context;
  /** A local webhook receiver for integrations. */
  receiverUrl: string;
}

export interface FuzzRequest {
  family: string;
  /** What makes the request what it is (the mutation, the hostile value). */
  why: string;
  op: Operation;
  method: string;
  /** Below the stage, with the query: `/workspaces/wks-…?x=1`. */
  target: string;
  auth: Auth;
  contentType?: string;
  body?: Buffer;
  /** Statuses the interface requires for this request; any documented one when absent. */
  expect?: number[];
  /**
   * A path parameter that must not be what a 400 complains about: with a valid rest, the request
   * may still get a 400 for its body (a name of spaces only, a date too far ahead), never for it.
   */
  notRefusedFor?: string;
  /**
   * The path no longer names the operation (a segment appended): the answer is the gateway's
   * (no route, URL or head too long), judged by the error envelope rather than the operation's list.
   */
  offRoute?: boolean;
}

/** The operations that delete what they name (spec/fleet-state.md §5): fuzzed on the fixture's `doomed` resources. */
export const DELETING_OPERATIONS: ReadonlySet<string> = new Set(['deleteDevice', 'deleteFleet', 'deleteWorkspace']);

/** The documented body limit (docs/limits.md): a valid request's body may reach past it. */
const MAX_BODY_BYTES = 64 * 1024;

const UNRESERVED = /^[A-Za-z0-9\-_.~]$/;

/** Percent-encodes every byte of the UTF-8 text but the unreserved ones (a lone surrogate becomes U+FFFD, as in any UTF-8 encoder). */
export const encodeComponent = (s: string) =>
  [...Buffer.from(s, 'utf8')]
    .map((b) => (b < 128 && UNRESERVED.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');

const fillPath = (op: Operation, values: Record<string, string>, raw: Record<string, string> = {}) =>
  op.path.replace(/\{(\w+)\}/g, (_m, name: string) => raw[name] ?? encodeComponent(values[name]));

const queryString = (pairs: Array<[string, string]>) =>
  pairs.length ? `?${pairs.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&')}` : '';

/** A short, printable description of a request: what fast-check shows as the counterexample. */
export const describeRequest = (r: FuzzRequest) => {
  const body = r.body ? r.body.toString('utf8') : undefined;
  const shown = body === undefined ? '' : ` body(${r.body!.length} B)=${body.length > 400 ? `${body.slice(0, 400)}…` : body}`;
  return `[${r.family}: ${r.why}] ${r.method} ${r.target.length > 300 ? `${r.target.slice(0, 300)}…(${r.target.length} chars)` : r.target} auth=${r.auth}${r.contentType !== undefined ? ` content-type=${JSON.stringify(r.contentType)}` : ''}${shown}${r.expect ? ` (expected ${r.expect.join('|')})` : ''}`;
};

const withPrinter = (r: FuzzRequest): FuzzRequest => Object.assign(r, { [fc.toStringMethod]: () => describeRequest(r) });

const ID_PATTERN = /^\^([a-z]+)-/;

/** API Gateway's longest URL (local/api-gateway-limits.ts), and the stage prefix every target is sent under. */
const MAX_URL_CHARS = 10_240;
const STAGE_PREFIX = '/v3';
const isOverUrl = (target: string) => `${STAGE_PREFIX}${target}`.length > MAX_URL_CHARS;

/** Path parameter name → ID prefix, for the resources the fixture makes. */
export const PARAM_PREFIX: Record<string, string> = {
  workspaceId: 'wks',
  fleetId: 'flt',
  deviceId: 'dev',
  identityId: 'idn',
  keyId: 'key',
  integrationId: 'int',
  rolloutId: 'rol',
  exportId: 'exp',
  groupId: 'grp',
  alarmRuleId: 'alr',
  alarmId: 'alm',
};

/** The families that apply to an operation (an ID family needs an ID parameter, and so on). */
export const familiesOf = (op: Operation): string[] => {
  const path = op.parameters.filter((p) => p.in === 'path');
  return [
    'valid',
    ...(path.some((p) => PARAM_PREFIX[p.name]) ? ['foreign-id', 'unknown-id'] : []),
    ...(path.length ? ['malformed-id'] : []),
    'unknown-query',
    ...(op.parameters.some((p) => p.in === 'query') ? ['bad-query'] : []),
    ...(op.body ? ['invalid-body', 'content-type'] : ['unexpected-body']),
    'oversized',
    ...(op.security.length ? ['unauthenticated'] : []),
    'raw-path',
  ];
};

/**
 * Any https URL, but on a host under `.invalid`, which never resolves (RFC 6761): the webhooks the
 * fuzzer configures are tested (POST …/test) and forwarded to, and must never send a request to a
 * real host, nor wait on one.
 */
const unreachableUrl = fc.webUrl({ validSchemes: ['https'] }).map((raw) => {
  const url = new URL(raw);
  url.hostname = `${url.hostname.split('.')[0] || 'hook'}.invalid`;
  return url.href;
});

/** Builds the request families of one operation. */
export const requestFamilies = (doc: OpenApiDocument, op: Operation, fixture: Fixture, v: Validators) => {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const idParams = pathParams.filter((p) => PARAM_PREFIX[p.name]);
  const auth: Auth = op.security.includes('deviceToken') ? 'device' : op.security.includes('apiKey') ? 'api-key' : 'none';

  /** A schema converter whose IDs come from the context (mostly), another account or nowhere. */
  const schemaContext = (ctx: Context): SchemaContext => ({
    root: doc,
    override: (s: JsonSchema) => {
      const prefix = typeof s.pattern === 'string' ? ID_PATTERN.exec(s.pattern)?.[1] : undefined;
      if (prefix && ctx.ids[prefix]?.length) {
        return fc.oneof(
          { arbitrary: fc.constantFrom(...ctx.ids[prefix]), weight: 8 },
          { arbitrary: fc.constantFrom(...(fixture.foreign.ids[prefix] ?? [`${prefix}-123456789`])), weight: 1 },
          { arbitrary: fc.constant(`${prefix}-123456789`), weight: 1 },
        );
      }
      if (s.format === 'uri') return fc.oneof({ arbitrary: fc.constant(fixture.receiverUrl), weight: 3 }, { arbitrary: unreachableUrl, weight: 1 });
      // A value the pattern admits is rarely one of the few that exist (time zones): the documented examples, mostly.
      if (Array.isArray(s.examples) && s.examples.length && s.pattern) {
        return fc.oneof(
          { arbitrary: fc.constantFrom(...(s.examples as unknown[])), weight: 3 },
          { arbitrary: fc.stringMatching(new RegExp(s.pattern as string)), weight: 1 },
        );
      }
      return undefined;
    },
  });

  const tokenValue = (p: Parameter, ctx: Context, sc: SchemaContext): fc.Arbitrary<string> =>
    fc.oneof(
      ...(p.name === 'jobName' && ctx.jobNames.length ? [{ arbitrary: fc.constantFrom(...ctx.jobNames), weight: 3 }] : []),
      // "." and ".." match the token pattern but are path steps to every URL parser: no client can send them as a name.
      {
        arbitrary: validArbitrary(p.schema, sc)
          .map(String)
          .filter((t) => t !== '.' && t !== '..'),
        weight: 2,
      },
    );

  /** Path values of one context: IDs that belong together, and tokens. */
  const pathValues = (ctx: Context, sc: SchemaContext): fc.Arbitrary<Record<string, string>> =>
    fc.record(
      Object.fromEntries(
        pathParams.map((p) => {
          const prefix = PARAM_PREFIX[p.name];
          return [p.name, prefix ? fc.constantFrom(...(ctx.ids[prefix] ?? [`${prefix}-123456789`])) : tokenValue(p, ctx, sc)];
        }),
      ),
    );

  const queryValue = (p: Parameter, sc: SchemaContext): fc.Arbitrary<Array<[string, string]>> => {
    const schema = p.schema;
    const drawn = validArbitrary(schema, sc);
    // A query (`q`) a random string rarely is: the documented examples, mostly, so that searches run as well as fail.
    const examples = p.name === 'q' && Array.isArray(schema.examples) ? (schema.examples as string[]) : [];
    const value = examples.length ? fc.oneof({ arbitrary: fc.constantFrom(...examples), weight: 2 }, { arbitrary: drawn, weight: 1 }) : drawn;
    const pairs = value.map((x): Array<[string, string]> => (Array.isArray(x) ? x.map((i) => [p.name, String(i)]) : [[p.name, String(x)]]));
    return p.required ? pairs : fc.oneof({ arbitrary: fc.constant<Array<[string, string]>>([]), weight: 1 }, { arbitrary: pairs, weight: 2 });
  };

  const validQuery = (sc: SchemaContext) => fc.tuple(...queryParams.map((p) => queryValue(p, sc))).map((parts) => parts.flat());

  const validBody = (sc: SchemaContext): fc.Arbitrary<Buffer | undefined> => {
    if (!op.body) return fc.constant(undefined);
    const body = validArbitrary(op.body.schema, sc).map((x) => Buffer.from(toJsonText(x), 'utf8'));
    return op.body.required ? body : fc.oneof({ arbitrary: fc.constant(undefined), weight: 1 }, { arbitrary: body, weight: 3 });
  };

  /** A valid request in one of the caller's contexts, with parts replaced by `change`. */
  type Parts = { values: Record<string, string>; query: Array<[string, string]>; body?: Buffer; ctx: Context; sc: SchemaContext };
  const base = fc.oneof(
    ...(DELETING_OPERATIONS.has(op.operationId) ? fixture.doomed : fixture.own).map((ctx) => {
      const sc = schemaContext(ctx);
      return fc.record({ values: pathValues(ctx, sc), query: validQuery(sc), body: validBody(sc) }).map((p): Parts => ({ ...p, ctx, sc }));
    }),
  );
  const make = (family: string, why: string, p: Parts, extra: Partial<FuzzRequest> = {}): FuzzRequest => {
    const target = fillPath(op, p.values) + queryString(p.query);
    // Past the gateway's URL limit (docs/limits.md) the gateway answers 414 before any rule of the
    // operation: a long `q` (up to 2,000 characters, 9 a character once encoded) can take it there.
    const overUrl = extra.expect && isOverUrl(target) ? { expect: [...extra.expect, 414] } : {};
    return withPrinter({
      family,
      why,
      op,
      method: op.method,
      target,
      auth,
      contentType: p.body ? 'application/json' : undefined,
      body: p.body,
      ...extra,
      ...overUrl,
    });
  };

  /**
   * What a request with one bad part must get: `status`, or the answer its valid rest could get
   * anyway (a 404 or 409 from the state the fuzzing left, a 413 for a body already over the limit):
   * a request with two faults may be refused for either, but never accepted.
   */
  const bodyOverLimit = (p: Parts) => (p.body && p.body.length > MAX_BODY_BYTES ? [413] : []);
  const refusedAs = (status: number, p: Parts) => [status, 404, 409, ...bodyOverLimit(p)];

  /** What an ID that is not the caller's must get: 404, or 413 for a body already over the limit. */
  const idRefusal = (p: Parts) => [404, ...bodyOverLimit(p)];

  const families: Record<string, fc.Arbitrary<FuzzRequest>> = {};

  families.valid = base.map((p) => make('valid', 'documented request', p));

  if (idParams.length) {
    const pick = fc.constantFrom(...idParams);
    families['foreign-id'] = fc.record({ p: base, param: pick }).chain(({ p, param }) => {
      const prefix = PARAM_PREFIX[param.name];
      return fc
        .constantFrom(...fixture.foreign.ids[prefix])
        .map((id) =>
          make(
            'foreign-id',
            `{${param.name}} of another account`,
            { ...p, values: { ...p.values, [param.name]: id } },
            { expect: idRefusal(p), notRefusedFor: param.name },
          ),
        );
    });
    families['unknown-id'] = fc
      .record({
        p: base,
        param: pick,
        suffix: fc.oneof(
          fc.constantFrom('123456789', 'doesnotexist1', '000000000000000000000'),
          fc.stringMatching(/^[0-9a-z]{20}$/),
          fc.stringMatching(/^[0-9a-z]{1,19}$/),
        ),
      })
      .map(({ p, param, suffix }) => {
        const id = `${PARAM_PREFIX[param.name]}-${suffix}`;
        return make(
          'unknown-id',
          `{${param.name}} = ${id}, well formed but nobody's`,
          { ...p, values: { ...p.values, [param.name]: id } },
          { expect: idRefusal(p), notRefusedFor: param.name },
        );
      });
  }

  if (pathParams.length) {
    families['malformed-id'] = fc
      .record({
        p: base,
        param: fc.constantFrom(...pathParams),
        form: fc.oneof(
          fc.record({ kind: fc.constant('too long' as const), n: fc.integer({ min: 200, max: 2000 }) }),
          fc.record({
            kind: fc.constant('bad character' as const),
            c: fc.constantFrom(' ', '😀', '\uFFFF', 'é', '"', '*', ',', '\u0000', '%', '#', '?', '<', "'", '\\', '|', '\n'),
          }),
        ),
      })
      .map(({ p, param, form }) => {
        const prefix = PARAM_PREFIX[param.name];
        const head = prefix ? `${prefix}-` : '';
        const value = form.kind === 'too long' ? head + 'a'.repeat(form.n) : `${head}ab${form.c}cd`;
        return make(
          'malformed-id',
          `{${param.name}} ${form.kind}`,
          { ...p, values: { ...p.values, [param.name]: value } },
          { expect: [400, ...bodyOverLimit(p)] },
        );
      });
  }

  const documented = new Set(queryParams.map((q) => q.name));
  families['unknown-query'] = fc
    .record({
      p: base,
      name: fc.constantFrom('unknown', 'stauts', 'limit', 'page', 'foo[bar]', '', '😀', '__proto__', 'Status', 'fleet_id').filter((n) => !documented.has(n)),
      value: fc.oneof(fc.constantFrom('1', '', 'true'), fc.string({ maxLength: 8 })),
    })
    .map(({ p, name, value }) =>
      make('unknown-query', `unknown query parameter ${JSON.stringify(name)}`, { ...p, query: [...p.query, [name, value]] }, { expect: refusedAs(400, p) }),
    );

  if (queryParams.length) {
    const badValue = (param: Parameter, sc: SchemaContext): fc.Arbitrary<{ pairs: Array<[string, string]>; why: string }> => {
      const valid = v.parameter(op, param.name);
      const serialized = (x: unknown): string[] =>
        Array.isArray(x) ? x.map((i) => (typeof i === 'string' ? i : JSON.stringify(i))) : [typeof x === 'string' ? x : JSON.stringify(x)];
      const mutated = invalidArbitrary(param.schema, sc)
        .map(({ value, why }) => ({ values: serialized(value), why }))
        // A query parameter is text, and an absent one is not a bad one: keep what stays invalid as text.
        .filter(({ values }) => values.length > 0 && !valid(param.schema.type === 'array' ? values : values[0]))
        .map(({ values, why }) => ({ pairs: values.map((x): [string, string] => [param.name, x]), why: `?${param.name}: ${why}` }));
      if (param.schema.type === 'array') return mutated;
      // a single-valued parameter given twice (docs/api.md, "Errors": refused)
      const twice = validArbitrary(param.schema, sc).map((x) => ({
        pairs: [
          [param.name, String(x)],
          [param.name, String(x)],
        ] as Array<[string, string]>,
        why: `?${param.name} given twice`,
      }));
      return fc.oneof({ arbitrary: mutated, weight: 4 }, { arbitrary: twice, weight: 1 });
    };
    families['bad-query'] = base.chain((p) =>
      fc
        .constantFrom(...queryParams)
        .chain((param) =>
          badValue(param, p.sc).map(({ pairs, why }) =>
            make('bad-query', why, { ...p, query: [...p.query.filter(([k]) => k !== param.name), ...pairs] }, { expect: refusedAs(400, p) }),
          ),
        ),
    );
  }

  if (op.body) {
    const schema = op.body.schema;
    const isValid = v.requestBody(op);
    const malformed = fc.constantFrom(
      '{"name":',
      "{'name':'x'}",
      '[1,]',
      '{"a":1}}',
      'nul',
      '{"a":NaN}',
      '\u0000',
      '{"a":"\\ud800"',
      '\uFEFF{}',
      '{"a":1,"a":2,',
    );
    families['invalid-body'] = base.chain((p) =>
      fc.oneof(
        {
          arbitrary: invalidArbitrary(schema, p.sc)
            .filter(({ value }) => !isValid(parsedJson(value)))
            .map(({ value, why }) =>
              make(
                'invalid-body',
                `body ${why}`,
                { ...p, body: Buffer.from(toJsonText(value), 'utf8') },
                { expect: refusedAs(400, { ...p, body: Buffer.from(toJsonText(value), 'utf8') }) },
              ),
            ),
          weight: 8,
        },
        {
          arbitrary: malformed.map((text) =>
            make('invalid-body', 'malformed JSON', { ...p, body: Buffer.from(text, 'utf8') }, { expect: refusedAs(400, { ...p, body: undefined }) }),
          ),
          weight: 2,
        },
        ...(op.body!.required
          ? [
              {
                arbitrary: fc.constant(make('invalid-body', 'no body', { ...p, body: undefined }, { expect: refusedAs(400, { ...p, body: undefined }) })),
                weight: 1,
              },
            ]
          : []),
      ),
    );
    families['content-type'] = fc
      .record({
        p: base,
        type: fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'text/json',
          'application/octet-stream',
          '',
        ),
      })
      .map(({ p, type }) => {
        // a small JSON body, so that only its type is wrong
        const body = p.body && p.body.length <= 4096 ? p.body : Buffer.from('{}');
        return make(
          'content-type',
          type ? `a JSON body sent as ${type}` : 'a JSON body without Content-Type',
          { ...p, body },
          { contentType: type || undefined, expect: refusedAs(415, { ...p, body }) },
        );
      });
  } else {
    families['unexpected-body'] = fc
      .record({ p: base, body: fc.constantFrom<unknown>({}, { name: 'x' }, [], 'text', { value: { a: 1 } }) })
      .map(({ p, body }) =>
        make('unexpected-body', 'a body on a route without one', { ...p, body: Buffer.from(JSON.stringify(body)) }, { expect: refusedAs(400, p) }),
      );
  }

  families.oversized = fc
    .record({ p: base, bytes: fc.constantFrom(64 * 1024 + 1, 65 * 1024, 256 * 1024, 1024 * 1024), astral: fc.boolean() })
    .map(({ p, bytes, astral }) => {
      // over the body limit in bytes, whatever the character count (😀 is 4 bytes)
      const pad = astral ? '😀'.repeat(Math.ceil(bytes / 4)) : 'a'.repeat(bytes);
      return make(
        'oversized',
        `a ${bytes}-byte body`,
        { ...p, body: Buffer.from(JSON.stringify({ name: pad }), 'utf8') },
        { expect: op.body ? [413, 404, 409] : [400, 413, 404, 409] },
      );
    });

  if (auth !== 'none') {
    const wrong: Auth[] = auth === 'device' ? ['missing', 'bad-token', 'key-for-token'] : ['missing', 'bad-key', 'token-for-key'];
    families.unauthenticated = fc
      .record({ p: base, how: fc.constantFrom(...wrong) })
      .map(({ p, how }) => make('unauthenticated', `credentials: ${how}`, p, { auth: how, expect: [401] }));
  }

  // Class 4: what the gateway meets before any handler. Sent raw: fetch would normalize these.
  const RAW_SEGMENTS: Array<[string, string]> = [
    ['%', 'a lone %'],
    ['%zz', 'a non-hex escape'],
    ['abc%E0%A4%A', 'a truncated UTF-8 escape'],
    ['%ED%A0%80', 'an escaped lone surrogate'],
    ['%C0%AF', 'an overlong UTF-8 escape'],
    ['%FF%FE', 'bytes that are not UTF-8'],
    ['%u0041', 'a %u escape'],
    ['%2e%2e', 'an escaped parent step'],
    ['%2E%2e%2f%2E%2E', 'escaped parent steps'],
    ['a%2fb', 'an escaped slash'],
    ['%2f', 'an escaped slash alone'],
    ['%00', 'an escaped NUL'],
  ];
  families['raw-path'] = fc
    .record({
      p: base,
      where: fc.oneof(...(pathParams.length ? [fc.constantFrom(...pathParams.map((q) => q.name))] : []), fc.constant('(appended)')),
      seg: fc.oneof(
        { arbitrary: fc.constantFrom(...RAW_SEGMENTS).map(([s, why]) => ({ s, why, long: false })), weight: 6 },
        {
          arbitrary: fc.constantFrom(4000, 9000, 12_000, 20_000, 70_000).map((n) => ({ s: 'a'.repeat(n), why: `a ${n}-character segment`, long: true })),
          weight: 2,
        },
      ),
    })
    .map(({ p, where, seg }) => {
      const path = where === '(appended)' ? `${fillPath(op, p.values)}/${seg.s}` : fillPath(op, p.values, { [where]: seg.s });
      const target = path + queryString(p.query);
      return withPrinter({
        ...make('raw-path', `${where}: ${seg.why}`, p),
        target,
        expect: [400, 404, ...(seg.long || isOverUrl(target) ? [414] : []), ...bodyOverLimit(p)],
        offRoute: where === '(appended)',
      });
    });

  return families;
};
