import { fc, hostileString, hugeString } from '../../../../../test/support/property-arbitraries.js';
import { OperationError } from '../errors/operation.error.js';
import type { ExpressionNode, LiteralValue, OperandNode, PathNode } from './expression-ast.js';
import { evaluate, type SearchScope } from './expression-evaluator.js';
import { EXPRESSION_ROOTS, FORBIDDEN_SEGMENTS } from './expression-limits.js';
import { parseExpression } from './expression-parser.js';

// Properties of the search condition language: the parser refuses anything with its own error
// naming the column, a printed tree parses back to itself, and the evaluator answers a boolean for
// any entry, by the laws the docs state (docs/search.md, "The condition").

/** A string literal as the tokenizer reads it back: escapes for the quote, the backslash and control characters. */
function quoted(value: string): string {
  let out = '"';
  for (const c of value) {
    if (c === '"' || c === '\\') out += `\\${c}`;
    else if (c.length === 1 && c.charCodeAt(0) < 0x20) out += `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return `${out}"`;
}

function literal(value: LiteralValue): string {
  if (typeof value === 'string') return quoted(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  return String(value);
}

function path(node: PathNode): string {
  const [root, ...rest] = node.segments;
  return `${root}${rest.map((s) => (typeof s === 'number' ? `[${s}]` : `[${quoted(s)}]`)).join('')}`;
}

function operand(node: OperandNode): string {
  if (node.type === 'path') return path(node);
  if (node.type === 'literal') return literal(node.value);
  return `[${node.items.map(literal).join(', ')}]`;
}

/** Source text for a tree: fully parenthesised, so that it parses back to the same tree. */
function print(node: ExpressionNode): string {
  switch (node.type) {
    case 'or':
      return `(${print(node.left)}) || (${print(node.right)})`;
    case 'and':
      return `(${print(node.left)}) && (${print(node.right)})`;
    case 'not':
      return `!(${print(node.operand)})`;
    case 'exists':
      return `exists(${path(node.path)})`;
    case 'compare':
      return `${operand(node.left)} ${node.op} ${operand(node.right)}`;
    default:
      return operand(node);
  }
}

// Numbers as the tokenizer writes them: digits with at most one point, never an exponent.
const plainNumber = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.constantFrom(0, -0, 0.5, -2.5, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
  fc.double({ min: -1e15, max: 1e15, noNaN: true }).filter((n) => !/e/i.test(String(n))),
);
const literalValue: fc.Arbitrary<LiteralValue> = fc.oneof(hostileString, plainNumber, fc.boolean(), fc.constant(null));
const segment = fc.oneof(
  fc.constantFrom('a', 'b', 'orderId', 'tags', 'length', '0', ''),
  hostileString.filter((s) => !FORBIDDEN_SEGMENTS.has(s)),
  fc.nat({ max: 5 }),
);
const pathNode: fc.Arbitrary<PathNode> = fc
  .tuple(fc.constantFrom(...EXPRESSION_ROOTS), fc.array(segment, { maxLength: 6 }))
  .map(([root, rest]) => ({ type: 'path', segments: [root, ...rest] }));
const scalarOperand: fc.Arbitrary<OperandNode> = fc.oneof(
  pathNode,
  literalValue.map((value) => ({ type: 'literal' as const, value })),
);
const comparison: fc.Arbitrary<ExpressionNode> = fc.oneof(
  fc
    .tuple(fc.constantFrom('==', '!=', '<', '<=', '>', '>=', 'contains', 'startsWith', 'endsWith'), scalarOperand, scalarOperand)
    .map(([op, left, right]) => ({ type: 'compare' as const, op, left, right })),
  fc
    .tuple(scalarOperand, fc.array(literalValue, { maxLength: 5 }))
    .map(([left, items]) => ({ type: 'compare' as const, op: 'in' as const, left, right: { type: 'list' as const, items } })),
  pathNode.map((p) => ({ type: 'exists' as const, path: p })),
  pathNode,
  literalValue.map((value) => ({ type: 'literal' as const, value })),
);
const { tree } = fc.letrec<{ tree: ExpressionNode }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    comparison,
    fc
      .tuple(fc.constantFrom('and' as const, 'or' as const), tie('tree'), tie('tree'))
      .map(([type, left, right]) => ({ type, left, right })),
    tie('tree').map((operand) => ({ type: 'not' as const, operand })),
  ),
}));

// Text near the grammar: shrinks to the smallest expression that breaks the parser.
const tokenSoup = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'payload',
        'headers',
        'id',
        'exists',
        'in',
        'contains',
        'true',
        'null',
        'process',
        '__proto__',
        '.',
        '[',
        ']',
        '(',
        ')',
        ',',
        '&&',
        '||',
        '!',
        '==',
        '!=',
        '<=',
        '>',
        '=',
        '&',
        '|',
        '"a"',
        "'b'",
        '"',
        "'",
        '\\',
        '\\u12',
        '"\\u00e9"',
        '"\\q"',
        '0',
        '-1',
        '1.5',
        '1.2.3',
        '-',
        ' ',
        '\n',
      ),
      hostileString,
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));
const deepNesting = fc
  .tuple(
    fc.constantFrom('(', '!', '!(', '[', '(payload.a == 1 || '),
    fc.integer({ min: 1, max: 120 }),
    fc.constantFrom('payload.a', '', ')'),
  )
  .map(([open, depth, inner]) => `${open.repeat(depth)}${inner}${')'.repeat(depth)}`);
const manyParts = fc
  .tuple(
    fc.constantFrom('id == 1', 'payload.a', 'headers.b in [1, 2]'),
    fc.constantFrom(' || ', ' && '),
    fc.integer({ min: 1, max: 150 }),
  )
  .map(([part, join, count]) => Array.from({ length: count }, () => part).join(join));
const anySource = fc.oneof(tokenSoup, hostileString, deepNesting, manyParts, hugeString, tree.map(print));

/** A scope whose roots are any JSON, including own `__proto__` keys and deep nesting. */
const jsonRoot = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(`{"__proto__":${JSON.stringify(v)},"a":${JSON.stringify(v)}}`)),
  fc.array(fc.oneof(hostileString, plainNumber), { maxLength: 4 }),
);
const scopeArb = fc
  .record(Object.fromEntries(EXPRESSION_ROOTS.map((r) => [r, fc.option(jsonRoot, { nil: undefined })])))
  .map((roots): SearchScope => ({ root: (name) => (Object.hasOwn(roots, name) ? roots[name] : undefined) }));

describe('search expressions (properties)', () => {
  it('parses anything or refuses it with an OperationError naming the column', () => {
    fc.assert(
      fc.property(anySource, (source) => {
        try {
          parseExpression(source);
        } catch (err) {
          expect(err).toBeInstanceOf(OperationError);
          const { kind, message } = err as OperationError;
          expect(kind).toBe('bad-request');
          // Only the refusals of the whole expression (empty, too long) have no column to name.
          if (/is empty|characters long/.test(message)) return;
          const column = /at column (\d+)/.exec(message);
          expect(column).not.toBeNull();
          expect(Number(column?.[1])).toBeGreaterThanOrEqual(1);
          expect(Number(column?.[1])).toBeLessThanOrEqual(source.length + 1);
        }
      }),
    );
  });

  it('parses a printed tree back to the same tree (parse → print → parse)', () => {
    fc.assert(
      fc.property(tree, (node) => {
        const source = print(node);
        fc.pre(source.length <= 2_000);
        const parsed = parseExpression(source);
        expect(parsed).toEqual(node);
        expect(parseExpression(print(parsed))).toEqual(parsed);
      }),
      // Trees of up to a hundred nodes each: fewer runs keep it well under a second.
      { numRuns: 100 },
    );
  });

  it('answers a boolean for any tree and any entry, never throwing', () => {
    fc.assert(
      fc.property(tree, scopeArb, (node, scope) => {
        expect(typeof evaluate(node, scope)).toBe('boolean');
      }),
    );
  });

  it('keeps the laws of the docs: ! negates, != is not ==, in is == with some item, && and || as in logic', () => {
    fc.assert(
      fc.property(
        tree,
        tree,
        scopeArb,
        scalarOperand,
        scalarOperand,
        fc.array(literalValue, { maxLength: 4 }),
        (a, b, s, l, r, items) => {
          const holds = (node: ExpressionNode) => evaluate(node, s);
          expect(holds({ type: 'not', operand: a })).toBe(!holds(a));
          expect(holds({ type: 'and', left: a, right: b })).toBe(holds(a) && holds(b));
          expect(holds({ type: 'or', left: a, right: b })).toBe(holds(a) || holds(b));
          expect(holds({ type: 'compare', op: '!=', left: l, right: r })).toBe(
            !holds({ type: 'compare', op: '==', left: l, right: r }),
          );
          expect(holds({ type: 'compare', op: '==', left: l, right: r })).toBe(
            holds({ type: 'compare', op: '==', left: r, right: l }),
          );
          const inList = holds({ type: 'compare', op: 'in', left: l, right: { type: 'list', items } });
          expect(inList).toBe(
            items.some((value) => holds({ type: 'compare', op: '==', left: l, right: { type: 'literal', value } })),
          );
        },
      ),
    );
  });

  it('compares a string with a number as numbers only when the string is a plain decimal number', () => {
    const plainDecimal = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
    const numberish = fc.oneof(
      hostileString,
      fc.constantFrom('0x10', '0b1', '0o7', 'Infinity', '-Infinity', ' 16 ', '16\n', '1e1', '+16', '.5', '16.', '1_6', '١٦'),
      plainNumber.map(String),
    );
    fc.assert(
      fc.property(numberish, plainNumber, (text, n) => {
        const compare = (op: '==' | '<' | '>=') =>
          evaluate(
            { type: 'compare', op, left: { type: 'literal', value: text }, right: { type: 'literal', value: n } },
            { root: () => undefined },
          );
        const asNumber = text.length <= 32 && plainDecimal.test(text) ? Number(text) : Number.NaN;
        expect(compare('==')).toBe(asNumber === n);
        expect(compare('<')).toBe(asNumber < n);
        expect(compare('>=')).toBe(asNumber >= n);
      }),
    );
  });
});
