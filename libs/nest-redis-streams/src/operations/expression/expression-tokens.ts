import { OperationError } from '../errors/operation.error.js';
import { EXPRESSION_LIMITS } from './expression-limits.js';

export type TokenKind = 'string' | 'number' | 'name' | 'op' | 'punct' | 'end';

/** One token; `column` is 1-based, as the error messages count. */
export interface Token {
  kind: TokenKind;
  text: string;
  /** The decoded value of a string or number literal. */
  value?: string | number;
  column: number;
}

const OPERATORS = ['&&', '||', '==', '!=', '<=', '>=', '<', '>', '!'];
const PUNCTUATION = '().,[]';
const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', '/': '/', n: '\n', t: '\t', r: '\r' };

/** A syntax error at a 1-based column, in the words the console and the CLI show. */
export function syntaxError(message: string, column: number): OperationError {
  return new OperationError('bad-request', `Search expression: ${message} at column ${column}.`);
}

/** Shows a token in an error message without letting a long one flood it. */
export function describeToken(token: Token): string {
  if (token.kind === 'end') return 'end of expression';
  const text = token.text.length > 24 ? `${token.text.slice(0, 24)}…` : token.text;
  return `'${text}'`;
}

/**
 * Splits an expression into tokens in one left-to-right pass (no regular expressions over the
 * input, so no input can make it backtrack). Refuses an expression over `maxLength` before reading it.
 */
export function tokenize(source: string): Token[] {
  if (typeof source !== 'string' || source.trim() === '')
    throw new OperationError('bad-request', 'Search expression is empty: give a condition such as payload.orderId == "A1".');
  if (source.length > EXPRESSION_LIMITS.maxLength)
    throw new OperationError(
      'bad-request',
      `Search expression is ${source.length} characters long; the limit is ${EXPRESSION_LIMITS.maxLength}. Use a shorter condition.`,
    );
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const column = i + 1;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '"' || c === "'") {
      const [value, end] = readString(source, i);
      tokens.push({ kind: 'string', text: source.slice(i, end), value, column });
      i = end;
    } else if (isDigit(c) || (c === '-' && isDigit(source[i + 1] ?? ''))) {
      let end = i + 1;
      while (end < source.length && (isDigit(source[end]) || source[end] === '.')) end++;
      const text = source.slice(i, end);
      const value = Number(text);
      if (!Number.isFinite(value) || text.split('.').length > 2) throw syntaxError(`'${text}' is not a number`, column);
      tokens.push({ kind: 'number', text, value, column });
      i = end;
    } else if (isNameStart(c)) {
      let end = i + 1;
      while (end < source.length && (isNameStart(source[end]) || isDigit(source[end]))) end++;
      tokens.push({ kind: 'name', text: source.slice(i, end), column });
      i = end;
    } else {
      const op = OPERATORS.find((o) => source.startsWith(o, i));
      if (op) {
        tokens.push({ kind: 'op', text: op, column });
        i += op.length;
      } else if (PUNCTUATION.includes(c)) {
        tokens.push({ kind: 'punct', text: c, column });
        i++;
      } else {
        const hint = c === '=' ? " (compare with '==')" : c === '&' || c === '|' ? ` (use '${c}${c}')` : '';
        throw syntaxError(`unexpected '${c}'${hint}`, column);
      }
    }
  }
  tokens.push({ kind: 'end', text: '', column: source.length + 1 });
  return tokens;
}

/** A quoted string from `start` (its quote); returns the value and the index after the closing quote. */
function readString(source: string, start: number): [string, number] {
  const quote = source[start];
  let value = '';
  let i = start + 1;
  while (i < source.length) {
    const c = source[i];
    if (c === quote) return [value, i + 1];
    if (c === '\\') {
      const next = source[i + 1];
      if (next === 'u') {
        const hex = source.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw syntaxError(`bad escape '\\u${hex}' (needs four hex digits)`, i + 1);
        value += String.fromCharCode(parseInt(hex, 16));
        i += 6;
        continue;
      }
      if (next === undefined || !Object.hasOwn(ESCAPES, next)) throw syntaxError(`bad escape '\\${next ?? ''}'`, i + 1);
      value += ESCAPES[next];
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
  throw syntaxError(`unterminated string (opened with ${quote})`, start + 1);
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isNameStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === '$';
}
