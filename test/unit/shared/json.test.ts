import {
  BODY_MAX_DEPTH,
  JSON_MAX_DEPTH,
  JSON_RULES,
  escapeNonAscii,
  parseJson,
  requeueBody,
  textNesting,
  toQueueBody,
  valueNesting,
} from '../../../lambdas/shared/json';

/** `{"a":{"a":…{"a":leaf}}}`, `levels` objects deep. */
const nested = (levels: number, leaf: unknown = 1): unknown => (levels === 0 ? leaf : { a: nested(levels - 1, leaf) });

// Every kind of string that used to break a queue or a store, with the empty key and extreme doubles.
const AWKWARD = {
  emoji: 'emoji 😀 and 👩‍👩‍👧',
  nonCharacters: 'end \uFFFE \uFFFF',
  '': 'empty key',
  controls: '\u0000\u0001\t\n\u007f',
  accents: 'é ü ñ 中文',
  big: 1e300,
  tiny: 1e-200,
  denormal: 5e-324,
  max: Number.MAX_SAFE_INTEGER,
  min: -Number.MAX_SAFE_INTEGER,
  list: [true, null, 0.1, 'x'],
};

describe('toQueueBody', () => {
  it('writes pure printable ASCII that parses back to the same value', () => {
    const value = { ...AWKWARD, deep: nested(JSON_MAX_DEPTH, AWKWARD) };

    const body = toQueueBody(value);

    expect(body).toMatch(/^[\x20-\x7f]*$/);
    expect(JSON.parse(body)).toEqual(value);
  });

  it('passes the characters SQS allows and refuses: nothing above U+007F survives unescaped', () => {
    const body = toQueueBody({ s: '😀\uFFFF\uFFFE\u00e9' });

    expect(body).toBe('{"s":"\\ud83d\\ude00\\uffff\\ufffe\\u00e9"}');
    // fauxqs's (and SQS's) rule for a body: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the rule is about control characters
    expect(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD]/.test(body)).toBe(false);
  });

  it('leaves ASCII-only JSON exactly as JSON.stringify writes it', () => {
    expect(toQueueBody({ a: [1, 'b', null] })).toBe(JSON.stringify({ a: [1, 'b', null] }));
  });

  it('refuses a value JSON cannot write', () => {
    expect(() => toQueueBody(undefined)).toThrow(TypeError);
  });

  it('escapes JSON text without reparsing it, so its numbers stay as written', () => {
    expect(escapeNonAscii('{"n":12345678901234567890,"s":"é"}')).toBe('{"n":12345678901234567890,"s":"\\u00e9"}');
  });
});

describe('requeueBody', () => {
  it('puts a JSON body in the queue encoding, keeping its numbers as written, and leaves any other body alone', () => {
    expect(requeueBody('{"n":12345678901234567890,"s":"😀"}')).toBe('{"n":12345678901234567890,"s":"\\ud83d\\ude00"}');
    expect(requeueBody('not json é')).toBe('not json é');
  });
});

describe('parseJson', () => {
  it('accepts every JSON value that round-trips, and reports nothing', () => {
    const text = JSON.stringify({ ...AWKWARD, deep: nested(JSON_MAX_DEPTH) });

    const { value, problems } = parseJson(text);

    expect(problems).toEqual([]);
    expect(value).toEqual(JSON.parse(text));
    expect(JSON.stringify(value)).toBe(text);
  });

  it.each([
    ['1e300', 1e300],
    ['-1E-200', -1e-200],
    ['1.5e3', 1500],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    ['-9007199254740991', -Number.MAX_SAFE_INTEGER],
    ['1e20', 1e20],
    // biome-ignore lint/correctness/noPrecisionLoss: the literal reads as the nearest double, which is the point
    ['12345678901234567890.0', 12345678901234567890],
    ['0e400', 0],
    ['0.0000e-999', 0],
    ['-0', -0],
  ])('takes the number %s as the double it reads as', (literal, expected) => {
    const { value, problems } = parseJson(`{"n":${literal}}`);

    expect(problems).toEqual([]);
    expect((value as { n: number }).n).toBe(expected);
  });

  it.each([
    ['9007199254740992', JSON_RULES.integer],
    ['-9007199254740992', JSON_RULES.integer],
    ['12345678901234567890', JSON_RULES.integer],
    ['1e400', JSON_RULES.range],
    ['-1e309', JSON_RULES.range],
    ['1e-400', JSON_RULES.range],
  ])('refuses the number %s, naming the limit', (literal, message) => {
    const { problems } = parseJson(`{"n":${literal}}`);

    expect(problems).toEqual([{ path: ['n'], message }]);
  });

  it('refuses unpaired surrogates in strings and keys, and names where they are', () => {
    const { problems } = parseJson('{"a":["ok","\\ud800"],"\\udc00":1,"b":{"c":"\\ud83d\\ude00","d":"x\\udfff"}}');

    expect(problems).toEqual([
      { path: ['a', 1], message: JSON_RULES.unicode },
      { path: ['\udc00'], message: JSON_RULES.unicode },
      { path: ['b', 'd'], message: JSON_RULES.unicode },
    ]);
  });

  it('finds a problem under an empty key and at the root', () => {
    expect(parseJson('{"":{"":9007199254740993}}').problems).toEqual([{ path: ['', ''], message: JSON_RULES.integer }]);
    expect(parseJson('9007199254740993').problems).toEqual([{ path: [], message: JSON_RULES.integer }]);
    expect(parseJson('"\\ud800"').problems).toEqual([{ path: [], message: JSON_RULES.unicode }]);
  });

  it('refuses the keys that would reach an object prototype', () => {
    expect(parseJson('{"a":{"__proto__":{"polluted":true}}}').problems).toEqual([{ path: ['a', '__proto__'], message: JSON_RULES.reserved }]);
    expect(parseJson('{"constructor":{"prototype":{}}}').problems).toEqual([{ path: ['constructor'], message: JSON_RULES.reserved }]);
    expect(parseJson('{"constructor":"fine"}').problems).toEqual([]);
  });

  it('throws on text that is not JSON', () => {
    expect(() => parseJson('{"a":')).toThrow(SyntaxError);
  });
});

describe('nesting', () => {
  it('counts objects and arrays, not scalars', () => {
    expect([valueNesting(1), valueNesting({}), valueNesting([[]]), valueNesting(nested(JSON_MAX_DEPTH))]).toEqual([0, 1, 2, JSON_MAX_DEPTH]);
  });

  it('stops counting past its limit: anything deeper is limit + 1', () => {
    expect(valueNesting(nested(1000), JSON_MAX_DEPTH)).toBe(JSON_MAX_DEPTH + 1);
    expect(valueNesting(nested(JSON_MAX_DEPTH), JSON_MAX_DEPTH)).toBe(JSON_MAX_DEPTH);
  });

  it('reads the nesting of text without parsing, skipping brackets inside strings', () => {
    expect(textNesting(JSON.stringify(nested(BODY_MAX_DEPTH + 1)))).toBe(BODY_MAX_DEPTH + 1);
    expect(textNesting('{"a":"[[[{{{\\"[[[","b":[[1]]}')).toBe(3);
    expect(textNesting('['.repeat(60_000))).toBe(60_000);
  });
});
