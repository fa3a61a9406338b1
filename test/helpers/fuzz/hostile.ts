/**
 * The hostile values of issue 8's fuzzing classes, as fast-check arbitraries: characters that
 * stores and queues mishandle (class 1) and JSON that the stores cannot hold (class 3). Every
 * generator that takes a string or a free-form value weighs these in, so that each run meets them
 * rather than waiting for chance to.
 */
import fc from 'fast-check';

/**
 * A JSON literal sent exactly as written: integers beyond 2^53 must reach the server as their
 * digits (`12345678901234567890`), which a JavaScript number cannot carry.
 */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON() {
    return JSON.parse(this.text) as unknown;
  }
}

/**
 * Serializes a value that may hold `RawJson` literals. Strings go through JSON.stringify, which
 * writes a lone surrogate as its `\ud800` escape: the only way to put one in valid UTF-8 JSON.
 */
export const toJsonText = (value: unknown): string => {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : toJsonText(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};

/** The same value as the server sees it after JSON.parse (big integers rounded, as everywhere in JavaScript). */
export const parsedJson = (value: unknown): unknown => JSON.parse(toJsonText(value));

/** Characters above U+FFFF: UTF-16 surrogate pairs, 4 bytes in UTF-8 (SQS emulators refuse them). */
export const ASTRAL = ['😀', '𝄞', '🚀', '\u{10FFFF}', '\u{1F4A9}', '👩‍👩‍👧'];
/** The two noncharacters at the end of the Basic Multilingual Plane. */
export const NONCHARACTERS = ['\uFFFE', '\uFFFF'];
/** Lone surrogates: not Unicode scalar values, so not encodable as UTF-8 except as JSON escapes. */
export const LONE_SURROGATES = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uD83D'];
/** Characters with meaning somewhere on the way: to DynamoDB expressions, JSON, HTML, shells, paths. */
const SPECIAL = ['\u0000', '\n', '\t', '"', '\\', '/', '#', '%', '&', '?', ' ', '\u00A0', '\u200B', '\u202E', 'é', 'ß', 'İ', '中', '<', "'", ':', '$'];

/** One character (one code point, or a lone surrogate), hostile ones weighted in. */
export const hostileChar = (): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...'abcxyzABCXYZ0189-_.'.split('')), weight: 10 },
    { arbitrary: fc.constantFrom(...ASTRAL), weight: 3 },
    { arbitrary: fc.constantFrom(...NONCHARACTERS), weight: 2 },
    { arbitrary: fc.constantFrom(...LONE_SURROGATES), weight: 2 },
    { arbitrary: fc.constantFrom(...SPECIAL), weight: 3 },
    { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), weight: 2 },
  );

/** Counts code points, as JSON Schema's minLength and maxLength do (a lone surrogate counts as one). */
export const codePoints = (s: string) => [...s].length;

/**
 * A string of `minLength` to `maxLength` code points built from `hostileChar`, or at the length
 * bounds themselves; a string made only of hostile characters shows up on every few runs.
 */
export const hostileString = (minLength = 0, maxLength = 40): fc.Arbitrary<string> => {
  const unit = hostileChar();
  const options: Array<fc.WeightedArbitrary<string>> = [
    { arbitrary: fc.string({ unit, minLength, maxLength: Math.min(maxLength, minLength + 64) }), weight: 6 },
  ];
  if (maxLength <= 4096) {
    // exactly at the upper bound, where byte and UTF-16 counts part ways from code points
    options.push({
      arbitrary: fc.string({ unit: fc.constantFrom('😀', '𝄞', '\u{10FFFF}', 'a', '\uFFFF', '\uD800'), minLength: maxLength, maxLength }),
      weight: 1,
    });
  }
  if (minLength <= 1 && maxLength >= 2)
    options.push({ arbitrary: fc.constantFrom(...ASTRAL.filter((s) => codePoints(s) <= maxLength), ...NONCHARACTERS, ...LONE_SURROGATES), weight: 2 });
  return fc.oneof(...options);
};

/** Numbers the stores cannot keep as given: beyond 2^53 (as literal digits), beyond DynamoDB's 38 digits and 1e±125, negative zero. */
export const hostileNumber = (): fc.Arbitrary<unknown> =>
  fc.oneof(
    {
      arbitrary: fc
        .constantFrom(
          '12345678901234567890',
          '-98765432109876543210',
          '9007199254740993',
          `1${'0'.repeat(40)}`,
          '1e400',
          '-1e400',
          '0.1000000000000000000000000000000000000001',
        )
        .map((t) => new RawJson(t)),
      weight: 3,
    },
    { arbitrary: fc.constantFrom(1e300, -1e300, 1e-200, 5e-324, Number.MAX_VALUE, 2 ** 53, -(2 ** 53) - 2, -0, 1e126, 1e-131), weight: 3 },
    { arbitrary: fc.integer(), weight: 2 },
    { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 2 },
  );

/** A value nested 33 to 40 levels deep (DynamoDB documents stop at 32). */
export const deeplyNested = (): fc.Arbitrary<Record<string, unknown>> =>
  fc.record({ depth: fc.integer({ min: 33, max: 40 }), arrays: fc.boolean() }).map(({ depth, arrays }) => {
    let inner: unknown = 1;
    for (let i = 1; i < depth; i++) inner = arrays ? [inner] : { n: inner };
    return { n: inner };
  });

/** The byte caps of the interface: data payload, device event payload, job value and result, request body. */
export const SIZE_CAPS = [1536, 8192, 32 * 1024, 64 * 1024];

/** An object whose JSON text is within a few bytes of a size cap, on either side. */
export const nearCap = (): fc.Arbitrary<Record<string, unknown>> =>
  fc.record({ cap: fc.constantFrom(...SIZE_CAPS), delta: fc.integer({ min: -3, max: 3 }), astral: fc.boolean() }).map(({ cap, delta, astral }) => {
    const target = cap + delta - '{"pad":""}'.length;
    // 😀 is 4 bytes of UTF-8 but one JSON character pair: it separates byte caps from length caps
    const pad = astral ? '😀'.repeat(Math.floor(target / 4)) + 'a'.repeat(target % 4) : 'a'.repeat(target);
    return { pad };
  });

/** Object keys: ordinary, empty, hostile, and the names that pollute prototypes. */
export const hostileKey = (): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: fc.constantFrom('a', 'value', 'temp', 'n'), weight: 6 },
    { arbitrary: fc.constant(''), weight: 2 },
    { arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString'), weight: 1 },
    { arbitrary: hostileString(1, 8), weight: 3 },
  );

/** Builds an object from entries as JSON.parse would, so that a `__proto__` key is an own property. */
export const objectOf = (entries: Array<[string, unknown]>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
};

/** A free-form JSON object (job values and results), the class-3 shapes weighted in. */
export const hostileObject = (): fc.Arbitrary<Record<string, unknown>> =>
  fc.oneof(
    { arbitrary: fc.array(fc.tuple(hostileKey(), hostileJson(2)), { maxLength: 4 }).map(objectOf), weight: 6 },
    { arbitrary: fc.constant({ '': 1 }), weight: 1 },
    { arbitrary: hostileNumber().map((n) => ({ n })), weight: 2 },
    { arbitrary: deeplyNested(), weight: 1 },
    { arbitrary: nearCap(), weight: 1 },
  );

/** Any free-form JSON value (data and event payloads), the class-3 shapes weighted in. */
export const hostileJson = (depth = 3): fc.Arbitrary<unknown> => {
  const leaf = fc.oneof(
    { arbitrary: hostileString(), weight: 4 },
    { arbitrary: hostileNumber(), weight: 3 },
    { arbitrary: fc.constantFrom(true, false, null), weight: 1 },
  );
  if (depth <= 0) return leaf;
  return fc.oneof(
    { arbitrary: leaf, weight: 5 },
    { arbitrary: fc.array(hostileJson(depth - 1), { maxLength: 4 }), weight: 2 },
    { arbitrary: fc.array(fc.tuple(hostileKey(), hostileJson(depth - 1)), { maxLength: 4 }).map(objectOf), weight: 2 },
    { arbitrary: fc.constant({ '': 1 }), weight: 1 },
    { arbitrary: deeplyNested(), weight: 1 },
    { arbitrary: nearCap(), weight: 1 },
  );
};
