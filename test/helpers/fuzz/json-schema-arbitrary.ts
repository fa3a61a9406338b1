/**
 * fast-check arbitraries from JSON Schema (the 2020-12 subset the OpenAPI document uses: type,
 * properties, required, additionalProperties, propertyNames, minProperties, enum, const, pattern, formats date-time and uri,
 * length, item and range bounds, anyOf/oneOf, $ref). `validArbitrary` makes values the schema
 * accepts, hostile strings and free-form values weighted in; `invalidArbitrary` makes values it
 * refuses, each with the reason, by one mutation of a valid value.
 *
 * No maintained npm package does this for 2020-12 with fast-check 4 (the ones that exist target
 * draft-07 and older fast-check, or generate only valid values), hence this small converter; its
 * unit tests check every generated value against ajv.
 */
import fc from 'fast-check';
import { codePoints, hostileJson, hostileObject, hostileString, objectOf } from './hostile';

export type JsonSchema = Record<string, any>;

export interface SchemaContext {
  /** The document that `$ref`s point into (`#/components/schemas/…`). */
  root: unknown;
  /** A replacement for a schema (IDs drawn from the fixture, say); undefined converts it normally. */
  override?: (schema: JsonSchema) => fc.Arbitrary<unknown> | undefined;
}

/** A refused value, and which rule it breaks. */
export interface Invalid {
  value: unknown;
  why: string;
}

/** Follows `$ref`s (JSON pointers into the root document) until a schema without one. */
export const deref = (schema: JsonSchema, root: unknown): JsonSchema => {
  let s = schema;
  for (let hops = 0; s && typeof s.$ref === 'string'; hops++) {
    if (hops > 32 || !s.$ref.startsWith('#/')) throw new Error(`cannot follow $ref ${s.$ref}`);
    const target = s.$ref
      .slice(2)
      .split('/')
      .map((p: string) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((node: any, key: string) => node?.[key], root);
    if (!target) throw new Error(`dangling $ref ${s.$ref}`);
    const { $ref: _ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  return foldPatterns(s);
};

/**
 * A string schema whose patterns stand in `allOf` (zod writes a second `.regex()` so) as one
 * schema: `pattern` the first, `patterns` all of them; and when its example is an RFC 3339 date
 * they all accept, a date-time (zod writes the ISO pattern without the format then).
 */
const foldPatterns = (s: JsonSchema): JsonSchema => {
  const parts: JsonSchema[] | undefined = s.allOf;
  if (!parts?.length || !parts.every((p) => Object.keys(p).every((k) => k === 'pattern'))) return s;
  const { allOf: _allOf, ...rest } = s;
  const patterns: string[] = [...(s.pattern ? [s.pattern] : []), ...parts.map((p) => p.pattern as string)];
  const isDate = typeof s.example === 'string' && !Number.isNaN(Date.parse(s.example)) && patterns.every((p) => new RegExp(p).test(s.example));
  return { ...rest, pattern: patterns[0], patterns, ...(isDate ? { format: 'date-time' } : {}) };
};

/** Keeps what every pattern of the schema accepts (they are one pattern unless they stood in `allOf`). */
const allPatterns = (s: JsonSchema, arb: fc.Arbitrary<string>) => {
  const res = ((s.patterns as string[] | undefined) ?? []).map((p) => new RegExp(p));
  return res.length > 1 ? arb.filter((v) => res.every((re) => re.test(v))) : arb;
};

const typesOf = (s: JsonSchema): string[] | undefined => (Array.isArray(s.type) ? s.type : s.type ? [s.type] : undefined);

const isFreeForm = (s: JsonSchema) => !s.type && !s.properties && !s.anyOf && !s.oneOf && !s.enum && !('const' in s) && !s.$ref;

// A fixed upper bound rather than "now": the same seed must draw the same dates on every run.
const LATEST_DATE = new Date('2026-01-01T00:00:00.000Z');

/** RFC 3339 dates from 1970 to 2026, in UTC or with an offset when the pattern allows one. */
const dateTime = (pattern?: string): fc.Arbitrary<string> => {
  const re = pattern ? new RegExp(pattern) : undefined;
  return fc
    .record({
      date: fc.date({ min: new Date(0), max: LATEST_DATE, noInvalidDate: true }),
      form: fc.constantFrom('ms', 'seconds', 'offset'),
    })
    .map(({ date, form }) => {
      const iso = date.toISOString();
      if (form === 'seconds') return iso.replace(/\.\d{3}Z$/, 'Z');
      if (form === 'offset' && re?.test('2021-07-08T14:21:15.915+02:00')) {
        return new Date(date.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      }
      return iso;
    });
};

const uri = (maxLength = 2048) => fc.webUrl({ validSchemes: ['https'], withQueryParameters: true }).filter((u) => u.length <= maxLength);

const stringArbitrary = (s: JsonSchema): fc.Arbitrary<string> => {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? Math.max(min, 64);
  if (s.format === 'date-time') return allPatterns(s, dateTime(s.pattern));
  if (s.format === 'uri') return uri(max);
  if (s.pattern) {
    return allPatterns(
      s,
      fc.stringMatching(new RegExp(s.pattern)).filter((v) => codePoints(v) >= min && codePoints(v) <= max),
    );
  }
  return hostileString(min, max);
};

const arrayArbitrary = (s: JsonSchema, ctx: SchemaContext): fc.Arbitrary<unknown[]> => {
  const items = s.items ? validArbitrary(s.items, ctx) : hostileJson(1);
  const min = s.minItems ?? 0;
  const max = s.maxItems ?? 5;
  const options: Array<fc.WeightedArbitrary<unknown[]>> = [
    { arbitrary: fc.array(items, { minLength: min, maxLength: Math.max(min, Math.min(max, 4)) }), weight: 8 },
  ];
  // the largest array allowed, when that is a small enough request to send often
  if (max <= 100) options.push({ arbitrary: fc.array(items, { minLength: max, maxLength: max }), weight: 1 });
  return fc.oneof(...options);
};

const objectArbitrary = (s: JsonSchema, ctx: SchemaContext): fc.Arbitrary<Record<string, unknown>> => {
  const properties: Record<string, JsonSchema> = s.properties ?? {};
  const extra = s.additionalProperties;
  if (!Object.keys(properties).length && extra !== false) {
    const freeValues = extra === undefined || extra === true || (typeof extra === 'object' && isFreeForm(extra));
    if (freeValues && !s.propertyNames) return hostileObject();
    // a map: its keys as `propertyNames` says (a device's tags, a state's keys), hostile ones otherwise
    const keys = s.propertyNames ? (validArbitrary(s.propertyNames, ctx) as fc.Arbitrary<string>) : hostileString(1, 16);
    const values = freeValues ? hostileJson(2) : validArbitrary(extra as JsonSchema, ctx);
    return fc.array(fc.tuple(keys, values), { minLength: s.minProperties ?? 0, maxLength: Math.max(s.minProperties ?? 0, 4) }).map(objectOf);
  }
  const model = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, validArbitrary(v, ctx)]));
  const record = fc.record(model, { requiredKeys: (s.required ?? []).filter((k: string) => k in model) }) as fc.Arbitrary<Record<string, unknown>>;
  // `minProperties` (a PATCH that must change something): the records with too few fields are dropped
  return s.minProperties ? record.filter((v) => Object.keys(v).length >= s.minProperties) : record;
};

/** Values the schema accepts (as JSON Schema reads it), hostile strings and free-form values weighted in. */
export const validArbitrary = (schema: JsonSchema, ctx: SchemaContext): fc.Arbitrary<unknown> => {
  const s = deref(schema, ctx.root);
  const replaced = ctx.override?.(s);
  if (replaced) return replaced;
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches)) return fc.oneof(...branches.map((b: JsonSchema) => validArbitrary(b, ctx)));
  const types = typesOf(s) ?? (s.properties ? ['object'] : undefined);
  if (!types) return hostileJson();
  return fc.oneof(
    ...types.map((type): fc.Arbitrary<unknown> => {
      switch (type) {
        case 'string':
          return stringArbitrary(s);
        case 'integer':
          return fc.integer({ min: Math.max(s.minimum ?? -(2 ** 31), -(2 ** 31)), max: Math.min(s.maximum ?? 2 ** 31 - 1, 2 ** 31 - 1) });
        case 'number':
          return fc.double({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
        case 'boolean':
          return fc.boolean();
        case 'null':
          return fc.constant(null);
        case 'array':
          return arrayArbitrary(s, ctx);
        case 'object':
          return objectArbitrary(s, ctx);
        default:
          throw new Error(`unsupported JSON Schema type ${type}`);
      }
    }),
  );
};

const SAMPLES: Record<string, unknown> = { string: 'text', integer: 42, number: 1.5, boolean: true, null: null, array: [], object: {} };

const matchesType = (value: unknown, type: string) =>
  type === 'null'
    ? value === null
    : type === 'array'
      ? Array.isArray(value)
      : type === 'object'
        ? value !== null && typeof value === 'object' && !Array.isArray(value)
        : type === 'integer'
          ? Number.isInteger(value)
          : typeof value === type || (type === 'number' && typeof value === 'number');

/** Characters no ID, token or date has: each makes a pattern fail, and several test the path and the stores on the way. */
const BAD_CHARS = [' ', '/', '%', '#', '?', '😀', '\uD800', '\uFFFF', 'é', '\u0000', '"', '*', '\n', ','];

const stringMutations = (s: JsonSchema): Array<fc.Arbitrary<Invalid>> => {
  const out: Array<fc.Arbitrary<Invalid>> = [];
  if (s.maxLength !== undefined && s.maxLength < 100_000) {
    out.push(
      fc.record({ extra: fc.integer({ min: 1, max: 8 }), unit: fc.constantFrom('a', '😀', 'é', '\uFFFF') }).map(({ extra, unit }) => ({
        value: unit.repeat(s.maxLength + extra),
        why: `longer than ${s.maxLength}`,
      })),
    );
  }
  if ((s.minLength ?? 0) > 0) out.push(fc.constant({ value: '', why: 'empty' }));
  if (s.pattern) {
    const valid = stringArbitrary({ ...s, format: undefined, minLength: undefined, maxLength: undefined });
    out.push(
      fc.record({ v: valid, bad: fc.constantFrom(...BAD_CHARS), at: fc.nat() }).map(({ v, bad, at }) => {
        const i = at % (v.length + 1);
        return { value: v.slice(0, i) + bad + v.slice(i), why: `a character outside ${s.pattern}` };
      }),
      fc.constant({ value: '', why: 'empty' }),
      fc.constantFrom('x'.repeat(300), 'a'.repeat(65)).map((value) => ({ value, why: 'too long for the pattern' })),
    );
  }
  if (s.format === 'date-time') {
    out.push(
      fc
        .constantFrom(
          'yesterday',
          '2021-13-01T00:00:00Z',
          '2021-07-08',
          '2021-07-08T14:21:15.915',
          '2021-02-30T00:00:00Z',
          '',
          '0',
          '2021-07-08T25:00:00Z',
          '１９７０-01-01T00:00:00Z',
        )
        .map((value) => ({ value, why: 'not an RFC 3339 date' })),
    );
  }
  if (s.format === 'uri') out.push(fc.constantFrom('not a url', 'https://', '', '://x', 'http://exa mple.com/').map((value) => ({ value, why: 'not a URI' })));
  return out;
};

/** Values the schema refuses, each by one mutation of a valid value, with the reason. Filter with a validator: a mutation can land on another valid branch. */
export const invalidArbitrary = (schema: JsonSchema, ctx: SchemaContext): fc.Arbitrary<Invalid> => {
  const s = deref(schema, ctx.root);
  const mutations: Array<fc.Arbitrary<Invalid>> = [];
  const branches: JsonSchema[] | undefined = s.anyOf ?? s.oneOf;
  if (branches) {
    for (const b of branches) mutations.push(invalidArbitrary(b, ctx));
  }
  const types = typesOf(s) ?? (s.properties ? ['object'] : undefined);
  if (types) {
    const wrong = Object.entries(SAMPLES).filter(([, v]) => !types.some((t) => matchesType(v, t)));
    if (wrong.length) mutations.push(fc.constantFrom(...wrong).map(([t, value]) => ({ value, why: `a ${t} instead of ${types.join('|')}` })));
  }
  if (Array.isArray(s.enum) || 'const' in s) {
    const allowed: unknown[] = s.enum ?? [s.const];
    const near = allowed.filter((v): v is string => typeof v === 'string').flatMap((v) => [v.toUpperCase(), `${v} `, `${v}😀`]);
    mutations.push(
      fc
        .constantFrom('unknown', '', ...near)
        .filter((v) => !allowed.includes(v))
        .map((value) => ({ value, why: 'not one of the allowed values' })),
    );
  }
  for (const type of types ?? []) {
    if (type === 'string') mutations.push(...stringMutations(s));
    if ((type === 'integer' || type === 'number') && s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) {
      mutations.push(fc.constant({ value: s.maximum + 1, why: `above ${s.maximum}` }));
    }
    if ((type === 'integer' || type === 'number') && s.minimum !== undefined && s.minimum > Number.MIN_SAFE_INTEGER) {
      mutations.push(fc.constant({ value: s.minimum - 1, why: `below ${s.minimum}` }));
    }
    if (type === 'integer') mutations.push(fc.constant({ value: 1.5, why: 'not an integer' }));
    if (type === 'array') {
      const item = s.items ? validArbitrary(s.items, ctx) : fc.constant(1);
      if (s.maxItems !== undefined && s.maxItems <= 200) {
        mutations.push(
          fc.array(item, { minLength: s.maxItems + 1, maxLength: s.maxItems + 1 }).map((value) => ({ value, why: `more than ${s.maxItems} items` })),
        );
      }
      if ((s.minItems ?? 0) > 0) mutations.push(fc.constant({ value: [], why: 'no items' }));
      if (s.items) mutations.push(invalidArbitrary(s.items, ctx).map(({ value, why }) => ({ value: [value], why: `an item: ${why}` })));
    }
    if (type === 'object') mutations.push(...objectMutations(s, ctx));
  }
  if (!mutations.length) throw new Error(`no invalid value exists for ${JSON.stringify(schema).slice(0, 200)}`);
  return fc.oneof(...mutations);
};

const UNKNOWN_FIELDS = ['unknown', 'nmae', 'Name', 'extra_field', '__proto__', 'constructor', '', '😀'];

const objectMutations = (s: JsonSchema, ctx: SchemaContext): Array<fc.Arbitrary<Invalid>> => {
  const out: Array<fc.Arbitrary<Invalid>> = [];
  const properties: Record<string, JsonSchema> = s.properties ?? {};
  const required: string[] = s.required ?? [];
  const base = objectArbitrary(s, ctx);
  for (const field of required) {
    out.push(base.map((v) => ({ value: objectOf(Object.entries(v).filter(([k]) => k !== field)), why: `no ${field}` })));
  }
  if (s.additionalProperties === false) {
    const unknown = UNKNOWN_FIELDS.filter((f) => !(f in properties));
    out.push(
      fc.record({ v: base, field: fc.constantFrom(...unknown), extra: fc.constantFrom<unknown>(1, 'x', null, {}) }).map(({ v, field, extra }) => ({
        value: objectOf([...Object.entries(v), [field, extra]]),
        why: `unknown field ${JSON.stringify(field)}`,
      })),
    );
  }
  for (const [field, schema] of Object.entries(properties)) {
    const resolved = deref(schema, ctx.root);
    if (isFreeForm(resolved)) continue; // any value is valid there
    out.push(
      fc.record({ v: base, bad: invalidArbitrary(resolved, ctx) }).map(({ v, bad }) => ({
        value: objectOf([...Object.entries(v).filter(([k]) => k !== field), [field, bad.value]]),
        why: `${field}: ${bad.why}`,
      })),
    );
  }
  return out;
};
