import type { ExpressionNode, OperandNode, PathNode } from './expression-ast.js';

/** What a condition reads: each root (`payload`, `headers`, …) by name, undefined when absent. */
export interface SearchScope {
  root(name: string): unknown;
}

/**
 * Whether `node` holds for `scope`. Paths read own properties only (never a prototype's), a
 * missing value compares unequal to everything, and no operator converts anything but a numeric
 * string to a number: the rules are in docs/search.md.
 */
export function evaluate(node: ExpressionNode, scope: SearchScope): boolean {
  switch (node.type) {
    case 'or':
      return evaluate(node.left, scope) || evaluate(node.right, scope);
    case 'and':
      return evaluate(node.left, scope) && evaluate(node.right, scope);
    case 'not':
      return !evaluate(node.operand, scope);
    case 'exists':
      return resolve(node.path, scope) !== undefined;
    case 'path':
      return resolve(node, scope) === true;
    case 'literal':
      return node.value === true;
    case 'compare':
      return compare(node.op, operand(node.left, scope), node.right, scope);
  }
}

function compare(op: string, left: unknown, rightNode: OperandNode, scope: SearchScope): boolean {
  if (op === 'in') return rightNode.type === 'list' && rightNode.items.some((item) => equals(left, item));
  const right = operand(rightNode, scope);
  switch (op) {
    case '==':
      return equals(left, right);
    case '!=':
      return !equals(left, right);
    case 'contains':
      if (Array.isArray(left)) return left.some((item) => equals(item, right));
      return typeof left === 'string' && typeof right === 'string' && left.includes(right);
    case 'startsWith':
      return typeof left === 'string' && typeof right === 'string' && left.startsWith(right);
    case 'endsWith':
      return typeof left === 'string' && typeof right === 'string' && left.endsWith(right);
    default:
      return ordered(op, left, right);
  }
}

function operand(node: OperandNode, scope: SearchScope): unknown {
  if (node.type === 'path') return resolve(node, scope);
  if (node.type === 'literal') return node.value;
  return undefined;
}

/** Walks a path through own properties only; anything else (a prototype, a missing key) is undefined. */
function resolve(path: PathNode, scope: SearchScope): unknown {
  let value: unknown = scope.root(path.segments[0] as string);
  for (let i = 1; i < path.segments.length && value !== undefined; i++) {
    const key = path.segments[i];
    if (value === null || typeof value !== 'object') return undefined;
    value = Object.hasOwn(value, key) ? (value as Record<string | number, unknown>)[key] : undefined;
  }
  return value;
}

/** A finite number, or a string that is one written plainly (`"100"`, `"-2.5"`, `"1e3"`); else NaN. */
function numeric(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string' || value.length > 32 || !isDecimal(value)) return Number.NaN;
  return Number(value);
}

/**
 * Whether `text` is a decimal number (sign, digits with one optional point, optional exponent),
 * read in one pass: Number() alone also takes `0x10`, `0b1`, `Infinity` and padded text, which
 * "a string holding a number" does not mean (and no regular expression runs over values).
 */
function isDecimal(text: string): boolean {
  let i = text[0] === '+' || text[0] === '-' ? 1 : 0;
  let digits = 0;
  let point = false;
  for (; i < text.length; i++) {
    const c = text[i];
    if (c >= '0' && c <= '9') digits++;
    else if (c === '.' && !point) point = true;
    else break;
  }
  if (digits === 0) return false;
  if (i === text.length) return true;
  if (text[i] !== 'e' && text[i] !== 'E') return false;
  i += text[i + 1] === '+' || text[i + 1] === '-' ? 2 : 1;
  if (i === text.length) return false;
  for (; i < text.length; i++) if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

/** Same type and value, or a number and a string holding that number (fields are always strings). */
function equals(left: unknown, right: unknown): boolean {
  if (left === undefined || right === undefined) return false;
  if (left === right) return true;
  if (typeof left === 'number' || typeof right === 'number') {
    const [a, b] = [numeric(left), numeric(right)];
    return !Number.isNaN(a) && a === b;
  }
  return false;
}

/** `<`, `<=`, `>`, `>=`: numbers when either side is one, strings when both are; false otherwise. */
function ordered(op: string, left: unknown, right: unknown): boolean {
  let diff: number;
  if (typeof left === 'number' || typeof right === 'number') {
    const [a, b] = [numeric(left), numeric(right)];
    if (Number.isNaN(a) || Number.isNaN(b)) return false;
    diff = a - b;
  } else if (typeof left === 'string' && typeof right === 'string') {
    diff = left < right ? -1 : left > right ? 1 : 0;
  } else {
    return false;
  }
  return op === '<' ? diff < 0 : op === '<=' ? diff <= 0 : op === '>' ? diff > 0 : diff >= 0;
}
