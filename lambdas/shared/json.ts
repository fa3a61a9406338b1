/**
 * JSON rules shared by the front door (what a request body may hold) and the queues (how a JSON
 * value travels SQS). Every free-form value the API accepts (job values and results, data and
 * event payloads) must come back exactly as it was given, through every store and queue.
 */

/** Deepest nesting of a free-form value: objects and arrays within each other (`{"a":{}}` is 2). */
export const JSON_MAX_DEPTH = 32;

/**
 * Deepest nesting of a whole request body. Above the free-form limit, so that a value at its limit
 * fits in any envelope (a batch of points adds two levels), and the schemas, which walk values
 * recursively, never see pathological depth (V8's JSON reviver and JSON.stringify overflow the
 * stack near 10,000 levels, which a 64 KB body can reach).
 */
export const BODY_MAX_DEPTH = 64;

/** Largest integer a JSON number (an IEEE 754 double) carries exactly: 2^53 − 1. */
export const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;

/** A part of a JSON document that breaks a rule, by its path from the root. */
export interface JsonProblem {
  path: Array<string | number>;
  message: string;
}

const INTEGER_LITERAL = /^-?(?:0|[1-9]\d*)$/;
/** Whether a number literal is not zero: a non-zero digit before its exponent (`1e-400` is, yet reads as 0). */
const isNonZeroLiteral = (source: string) => /[1-9]/.test(source.split(/[eE]/)[0]);

/** Messages of the rules, written once so that the parser and the docs say the same thing. */
export const JSON_RULES = {
  integer: `Integers must be within ±${MAX_EXACT_INTEGER} (2^53 − 1) to be kept exactly; send larger ones as strings.`,
  range: 'Numbers must be within the range of a 64-bit double (±1.7976931348623157e308, non-zero ones at least 5e-324).',
  unicode: 'Strings and keys must be well-formed Unicode (no unpaired surrogates).',
  reserved: 'The keys "__proto__" and "constructor" (with a "prototype") are not accepted.',
  depth: (max: number) => `Must nest at most ${max} levels of objects and arrays.`,
} as const;

/**
 * How deep objects and arrays nest in a JSON text, read without parsing (strings skipped), so
 * that a pathologically deep body is refused before anything recursive touches it.
 * Malformed text gives some number; the parser refuses it afterwards.
 */
export const textNesting = (text: string): number => {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
};

/**
 * How deep objects and arrays nest in a parsed value: 0 for a scalar, 1 for `{}` or `[1]`.
 * Stops counting past `limit`: a deeper value gives `limit + 1` (callers only ask whether it is within).
 */
export const valueNesting = (value: unknown, limit = JSON_MAX_DEPTH): number => {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, valueNesting(child, limit - 1));
    if (deepest >= limit) break;
  }
  return 1 + deepest;
};

/**
 * Parses JSON text and reports what cannot round-trip through our stores and queues: integer
 * literals beyond ±(2^53 − 1) (JSON.parse would silently round them), numbers outside a double's
 * range (`1e400` would read as Infinity, then serialize as null), strings or keys with unpaired
 * surrogates (UTF-8 stores replace them), and the prototype keys a JS object cannot hold as data.
 * Reads each number's literal through the reviver's `context.source` (Node ≥ 21).
 * @throws SyntaxError when the text is not JSON.
 */
export const parseJson = (text: string): { value: unknown; problems: JsonProblem[] } => {
  // The reviver runs children before their holder, so problems climb from each value to its
  // holder, gaining one path segment a level. Its last call is the root's, whose holder is a
  // wrapper `{"": root}`: what reached the wrapper carries the full path, behind the wrapper's "".
  const pending = new WeakMap<object, JsonProblem[]>();
  let wrapper: object = {};
  const report = (holder: object, list: JsonProblem[]) => {
    const held = pending.get(holder);
    if (held) held.push(...list);
    else pending.set(holder, list);
  };
  const value = JSON.parse(text, function (this: object, key: string, value: unknown, context?: { source?: string }) {
    wrapper = this;
    const here: JsonProblem[] = [];
    const at = Array.isArray(this) ? Number(key) : key;
    if (!key.isWellFormed()) here.push({ path: [], message: JSON_RULES.unicode });
    if (key === '__proto__' || (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype'))) {
      here.push({ path: [], message: JSON_RULES.reserved });
    }
    if (typeof value === 'string' && !value.isWellFormed()) here.push({ path: [], message: JSON_RULES.unicode });
    if (typeof value === 'number') {
      const source = context?.source ?? String(value);
      if (INTEGER_LITERAL.test(source) && !Number.isSafeInteger(value)) here.push({ path: [], message: JSON_RULES.integer });
      else if (!Number.isFinite(value) || (value === 0 && isNonZeroLiteral(source))) here.push({ path: [], message: JSON_RULES.range });
    }
    if (value !== null && typeof value === 'object') {
      const inner = pending.get(value);
      if (inner) here.push(...inner);
    }
    if (here.length)
      report(
        this,
        here.map((p) => ({ ...p, path: [at, ...p.path] })),
      );
    return value;
  });
  const problems = (pending.get(wrapper) ?? []).map((p) => ({ ...p, path: p.path.slice(1) }));
  return { value, problems };
};

/** A JSON path as error details name fields: `body.value.a.0` (as zod issues are named). */
export const fieldOf = (location: string, path: ReadonlyArray<string | number>) => [location, ...path.map(String)].join('.');

const NON_ASCII = /[\u0080-\uffff]/g;
const hex4 = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * JSON text with every character outside ASCII written as a `\uXXXX` escape (a character above
 * U+FFFF as its two surrogate escapes). JSON already escapes control characters, and non-ASCII can
 * only stand inside strings, so the result is the same JSON value in pure ASCII.
 */
export const escapeNonAscii = (json: string) => json.replace(NON_ASCII, hex4);

/**
 * The one encoding of every SQS message body we send: JSON in pure ASCII, which every SQS
 * implementation takes whatever the value holds (a forward pack is lines of it: a header and an
 * entry a line, domain/forward-pack.ts). SQS refuses U+FFFE, U+FFFF and unpaired
 * surrogates in a body (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html),
 * and the local engine (fauxqs) everything above U+FFFF too; escaped, they travel, and
 * `JSON.parse` restores the value exactly. At most three times the UTF-8 size (a 2-byte character
 * becomes 6 bytes, a 4-byte one 12).
 *
 * @example sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: toQueueBody(message) }))
 */
export const toQueueBody = (value: unknown): string => {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError('A queue message must be a JSON value.');
  return escapeNonAscii(json);
};

/**
 * A received message body in the queues' one encoding, for sending it on (a DLQ replay): JSON text
 * with its non-ASCII characters escaped, without reparsing (its numbers stay as written); a body
 * that is not JSON, as it is: a forward pack (a header line and an entry a line) is that, and
 * already ASCII. A message queued before the encoding may hold characters another SQS engine
 * refuses.
 */
export const requeueBody = (body: string): string => {
  try {
    JSON.parse(body);
  } catch {
    return body;
  }
  return escapeNonAscii(body);
};
