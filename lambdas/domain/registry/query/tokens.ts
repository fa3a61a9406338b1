import { ValidationError } from '../../../shared/errors';

/** What the tokenizer reads: a word (a field or a keyword), a quoted string, a number, an operator or punctuation. */
export type TokenKind = 'word' | 'string' | 'number' | 'op' | '(' | ')' | ',' | 'end';

export interface Token {
  kind: TokenKind;
  /** The word or operator as written, the string's value, or the number's text. */
  text: string;
  /** Where it starts, counted from 1 (what an error message names). */
  at: number;
}

/** A 400 on `query.q` naming where the query went wrong (characters counted from 1) and what was expected. */
export const queryError = (at: number, what: string) =>
  new ValidationError(`Invalid query: query.q at character ${at}: ${what}`, { details: [{ field: 'query.q', message: `at character ${at}: ${what}` }] });

const isDigit = (c: string) => c >= '0' && c <= '9';
const isLetter = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
/** Characters of a word after its first: a field path (`tags.my-key.v2`) or a keyword. */
const isWordChar = (c: string) => isLetter(c) || isDigit(c) || c === '_' || c === '.' || c === '-';
const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** A character as an error message shows it. */
export const shown = (c: string) => (c === '`' ? '"`"' : `\`${c}\``);

/** Reads a JSON string literal starting at `start` (its opening quote); answers its value and the index past it. */
const readString = (text: string, start: number): { value: string; end: number } => {
  let value = '';
  let i = start + 1;
  for (;;) {
    if (i >= text.length) throw queryError(start + 1, 'a string is not closed: expected `"` before the end');
    const c = text[i];
    if (c === '"') return { value, end: i + 1 };
    if (c < ' ') throw queryError(i + 1, 'a control character in a string: write it escaped (\\n, \\t, \\u0000)');
    if (c !== '\\') {
      value += c;
      i++;
      continue;
    }
    const e = text[i + 1];
    if (e === 'u') {
      const hex = text.slice(i + 2, i + 6);
      if (hex.length < 4 || [...hex].some((h) => !isDigit(h) && !((h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))))
        throw queryError(i + 1, 'expected four hexadecimal digits after `\\u`');
      value += String.fromCharCode(Number.parseInt(hex, 16));
      i += 6;
    } else if (e !== undefined && ESCAPES[e] !== undefined) {
      value += ESCAPES[e];
      i += 2;
    } else throw queryError(i + 1, 'expected an escape (\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX) after `\\`');
  }
};

/** Reads a JSON number starting at `start`; answers its text and the index past it. */
const readNumber = (text: string, start: number): { value: string; end: number } => {
  let i = start;
  const digits = (what: string) => {
    const from = i;
    while (i < text.length && isDigit(text[i])) i++;
    if (i === from) throw queryError(i + 1, `expected a digit ${what}`);
  };
  if (text[i] === '-') i++;
  if (text[i] === '0') i++;
  else digits(i > start ? 'after `-`' : 'to start a number');
  if (text[i] === '.') {
    i++;
    digits('after the decimal point');
  }
  if (text[i] === 'e' || text[i] === 'E') {
    i++;
    if (text[i] === '+' || text[i] === '-') i++;
    digits('in the exponent');
  }
  if (i < text.length && (isWordChar(text[i]) || text[i] === '"'))
    throw queryError(i + 1, `expected a space, \`)\` or \`,\` after a number, not ${shown(text[i])}`);
  return { value: text.slice(start, i), end: i };
};

/**
 * The tokens of a query text, ending with an `end` token.
 * @throws ValidationError naming `query.q` at an unexpected character, an unclosed string or a malformed number.
 */
export const tokenize = (text: string): Token[] => {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const at = i + 1;
    if (isSpace(c)) i++;
    else if (c === '(' || c === ')' || c === ',') {
      tokens.push({ kind: c, text: c, at });
      i++;
    } else if (c === '"') {
      const { value, end } = readString(text, i);
      tokens.push({ kind: 'string', text: value, at });
      i = end;
    } else if (isDigit(c) || c === '-') {
      const { value, end } = readNumber(text, i);
      tokens.push({ kind: 'number', text: value, at });
      i = end;
    } else if (isLetter(c) || c === '_') {
      let end = i + 1;
      while (end < text.length && isWordChar(text[end])) end++;
      tokens.push({ kind: 'word', text: text.slice(i, end), at });
      i = end;
    } else if (c === '=' || c === '<' || c === '>' || c === '!') {
      const two = text.slice(i, i + 2);
      const op = two === '!=' || two === '<=' || two === '>=' ? two : c;
      if (op === '!') throw queryError(at, 'expected `!=`: `!` alone is no operator');
      tokens.push({ kind: 'op', text: op, at });
      i += op.length;
    } else if (c === "'") throw queryError(at, 'expected a value: strings are written in double quotes ("milan")');
    else throw queryError(at, `unexpected character ${shown(c)}`);
  }
  tokens.push({ kind: 'end', text: '', at: text.length + 1 });
  return tokens;
};
