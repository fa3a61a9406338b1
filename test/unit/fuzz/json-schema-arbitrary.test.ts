import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { codePoints, nearCap, parsedJson, RawJson, toJsonText, deeplyNested, hostileObject } from '../../helpers/fuzz/hostile';
import { deref, invalidArbitrary, validArbitrary, type JsonSchema } from '../../helpers/fuzz/json-schema-arbitrary';
import { documentedKey, operationsOf, validators, type OpenApiDocument } from '../../helpers/fuzz/openapi';
import { encodeComponent, familiesOf } from '../../helpers/fuzz/requests';

const doc = JSON.parse(readFileSync('lambdas/handlers/openapi/openapi.json', 'utf8')) as OpenApiDocument;
const v = validators(doc);
const ctx = { root: doc };
const bodies = operationsOf(doc).filter((op) => op.body);
const queryParams = operationsOf(doc).flatMap((op) => op.parameters.filter((p) => p.in === 'query').map((p) => [op, p] as const));

describe('JSON Schema → fast-check', () => {
  it.each(bodies.map((op) => [op.operationId, op] as const))('generates only bodies that the document accepts for %s', (_id, op) => {
    const validate = v.requestBody(op);

    fc.assert(
      fc.property(validArbitrary(op.body!.schema, ctx), (value) => validate(parsedJson(value)) === true),
      { numRuns: 150, seed: 1 },
    );
  });

  it.each(bodies.map((op) => [op.operationId, op] as const))('generates bodies that the document refuses for %s, each with its reason', (_id, op) => {
    const validate = v.requestBody(op);

    const samples = fc.sample(invalidArbitrary(op.body!.schema, ctx), { numRuns: 200, seed: 3 });

    // A mutation can land on another branch of an anyOf (the suite filters those out): most must be refused.
    expect(samples.filter(({ value }) => !validate(parsedJson(value))).length).toBeGreaterThan(150);
    expect(new Set(samples.map(({ why }) => why.split(':')[0])).size).toBeGreaterThan(1);
  });

  it.each(queryParams.map(([op, p]) => [`${op.operationId} ?${p.name}`, op, p] as const))('generates valid values of the query parameter %s', (_n, op, p) => {
    const validate = v.parameter(op, p.name);

    fc.assert(
      fc.property(validArbitrary(p.schema, ctx), (value) => validate(value) === true),
      { numRuns: 100, seed: 4 },
    );
  });

  it('fails loudly on a schema it cannot read rather than generating nothing', () => {
    expect(() => validArbitrary({ type: 'tuple' }, ctx)).toThrow(/unsupported JSON Schema type tuple/);
    expect(() => deref({ $ref: '#/components/schemas/Nope' }, doc)).toThrow(/dangling \$ref/);
  });

  it('keeps the sibling keywords of a $ref', () => {
    expect(deref({ $ref: '#/components/schemas/Workspace', description: 'mine' }, doc)).toMatchObject({ type: 'object', description: 'mine' });
  });

  it('honours length bounds in code points, up to the bound itself', () => {
    const schema: JsonSchema = { type: 'string', minLength: 1, maxLength: 128 };
    const lengths = fc.sample(validArbitrary(schema, ctx) as fc.Arbitrary<string>, { numRuns: 400, seed: 5 }).map(codePoints);

    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...lengths)).toBe(128);
  });
});

describe('hostile values', () => {
  const strings = fc.sample(validArbitrary({ type: 'string', maxLength: 1024 }, ctx) as fc.Arbitrary<string>, { numRuns: 400, seed: 6 }).join('');

  it('weighs astral characters, U+FFFE/U+FFFF and lone surrogates into every free string', () => {
    expect(strings).toMatch(/[\u{10000}-\u{10FFFF}]/u);
    expect(strings).toMatch(/[\uFFFE\uFFFF]/);
    expect(strings).toMatch(/(?:[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF])/);
  });

  it('weighs empty keys, big integers as literals, extreme floats, deep nesting and near-cap sizes into free-form objects', () => {
    const texts = fc.sample(hostileObject(), { numRuns: 600, seed: 7 }).map(toJsonText);

    expect(texts).toContain('{"":1}');
    expect(texts.some((t) => /\b12345678901234567890\b|9007199254740993/.test(t))).toBe(true);
    expect(texts.some((t) => /1e\+300|1e-200/.test(t))).toBe(true);
    expect(texts.some((t) => (t.match(/\{/g) ?? []).length >= 33)).toBe(true);
    expect(texts.some((t) => Math.abs(Buffer.byteLength(t) - 1536) <= 3)).toBe(true);
  });

  it('writes raw literals as given and lone surrogates as JSON escapes', () => {
    expect(toJsonText({ n: new RawJson('12345678901234567890'), s: '\uD800' })).toBe('{"n":12345678901234567890,"s":"\\ud800"}');
  });

  it('nests 33 to 40 levels and lands within 3 bytes of a cap', () => {
    const depth = (x: unknown): number => (x && typeof x === 'object' ? 1 + Math.max(0, ...Object.values(x).map(depth)) : 0);
    for (const nested of fc.sample(deeplyNested(), { numRuns: 50, seed: 8 })) expect(depth(nested)).toBeGreaterThanOrEqual(33);
    for (const value of fc.sample(nearCap(), { numRuns: 50, seed: 9 })) {
      const bytes = Buffer.byteLength(JSON.stringify(value));
      expect([1536, 8192, 32768, 65536].some((cap) => Math.abs(bytes - cap) <= 3)).toBe(true);
    }
  });
});

describe('requests from the document', () => {
  it('percent-encodes every byte but the unreserved ones', () => {
    expect(encodeComponent('a b/😀%.~')).toBe('a%20b%2F%F0%9F%98%80%25.~');
  });

  it('gives each operation the families that apply to it', () => {
    const byId = Object.fromEntries(operationsOf(doc).map((op) => [op.operationId, familiesOf(op)]));

    expect(byId.listWorkspaces).toEqual(['valid', 'unknown-query', 'bad-query', 'unexpected-body', 'oversized', 'unauthenticated', 'raw-path']);
    expect(byId.updateDevice).toEqual(expect.arrayContaining(['foreign-id', 'unknown-id', 'malformed-id', 'invalid-body', 'content-type']));
    expect(byId.listJobs).toContain('bad-query');
    expect(byId.getOpenApi).not.toContain('unauthenticated');
  });

  it('finds the documented answer of a status: exact, then its class, then default', () => {
    const op = { ...operationsOf(doc)[0], responses: { '200': undefined, '4XX': undefined, default: undefined } };

    expect(documentedKey(op, 200)).toBe('200');
    expect(documentedKey(op, 404)).toBe('4XX');
    expect(documentedKey(op, 503)).toBe('default');
  });
});
