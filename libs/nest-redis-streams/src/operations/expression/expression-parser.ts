import { OperationError } from '../errors/operation.error.js';
import {
  COMPARE_OPERATORS,
  type CompareOperator,
  type ExpressionNode,
  type ListNode,
  type LiteralValue,
  type OperandNode,
  type PathNode,
} from './expression-ast.js';
import { EXPRESSION_LIMITS, EXPRESSION_ROOTS, FORBIDDEN_SEGMENTS } from './expression-limits.js';
import { type Token, describeToken, syntaxError, tokenize } from './expression-tokens.js';

const KEYWORD_LITERALS: Record<string, LiteralValue> = { true: true, false: false, null: null };

/**
 * Parses a search condition into a tree, by recursive descent with precedence `||` < `&&` < `!` <
 * comparison. Nesting and size are bounded (`EXPRESSION_LIMITS`), so hostile input ends in a clear
 * error naming the column, never in a stack overflow. Nothing in it is ever run as code.
 */
export function parseExpression(source: string): ExpressionNode {
  return new Parser(tokenize(source)).parse();
}

class Parser {
  private index = 0;
  private depth = 0;
  private nodes = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): ExpressionNode {
    const tree = this.or();
    const rest = this.peek();
    if (rest.kind !== 'end') throw syntaxError(`unexpected ${describeToken(rest)}`, rest.column);
    return tree;
  }

  private or(): ExpressionNode {
    return this.nested(() => {
      let left = this.and();
      while (this.accept('op', '||')) left = this.count({ type: 'or', left, right: this.and() });
      return left;
    });
  }

  private and(): ExpressionNode {
    let left = this.unary();
    while (this.accept('op', '&&')) left = this.count({ type: 'and', left, right: this.unary() });
    return left;
  }

  private unary(): ExpressionNode {
    if (this.accept('op', '!')) return this.nested(() => this.count({ type: 'not', operand: this.unary() }));
    return this.comparison();
  }

  private comparison(): ExpressionNode {
    const start = this.peek();
    if (start.kind === 'punct' && start.text === '(') {
      this.next();
      const inner = this.or();
      this.expect(')', 'to close the parenthesis');
      return inner;
    }
    if (start.kind === 'name' && start.text === 'exists' && this.peek(1).text === '(') {
      this.next();
      this.next();
      const path = this.path();
      this.expect(')', 'to close exists(');
      return this.count({ type: 'exists', path });
    }
    const left = this.operand();
    const op = this.peek();
    if (!COMPARE_OPERATORS.includes(op.text) || op.kind === 'string') {
      if (left.type === 'list') throw syntaxError('a list belongs on the right of in', start.column);
      return left;
    }
    this.next();
    const right = op.text === 'in' ? this.list() : this.operand();
    if (right.type === 'list' && op.text !== 'in') throw syntaxError(`a list needs 'in', not '${op.text}'`, op.column);
    const after = this.peek();
    if (COMPARE_OPERATORS.includes(after.text) && after.kind !== 'string')
      throw syntaxError(`unexpected ${describeToken(after)} (join comparisons with && or ||)`, after.column);
    return this.count({ type: 'compare', op: op.text as CompareOperator, left, right });
  }

  private operand(): OperandNode {
    const token = this.peek();
    if (token.kind === 'string' || token.kind === 'number') {
      this.next();
      return this.count({ type: 'literal', value: token.value as LiteralValue });
    }
    if (token.kind === 'name' && Object.hasOwn(KEYWORD_LITERALS, token.text)) {
      this.next();
      return this.count({ type: 'literal', value: KEYWORD_LITERALS[token.text] });
    }
    if (token.kind === 'name') return this.path();
    if (token.kind === 'punct' && token.text === '[') return this.list();
    throw syntaxError(`unexpected ${describeToken(token)}`, token.column);
  }

  private path(): PathNode {
    const root = this.next();
    if (root.kind !== 'name' || !(EXPRESSION_ROOTS as readonly string[]).includes(root.text)) {
      throw syntaxError(`unknown name ${describeToken(root)} (a path starts with ${EXPRESSION_ROOTS.join(', ')})`, root.column);
    }
    const segments: Array<string | number> = [root.text];
    for (;;) {
      const token = this.peek();
      let segment: string | number;
      if (this.accept('punct', '.')) {
        const name = this.next();
        if (name.kind !== 'name')
          throw syntaxError(`expected a property name after '.', got ${describeToken(name)}`, name.column);
        segment = name.text;
      } else if (this.accept('punct', '[')) {
        const key = this.next();
        if (key.kind !== 'string' && !(key.kind === 'number' && Number.isSafeInteger(key.value) && Number(key.value) >= 0))
          throw syntaxError(`expected a quoted name or an index in [ ], got ${describeToken(key)}`, key.column);
        this.expect(']', 'to close [');
        segment = key.value as string | number;
      } else {
        break;
      }
      if (typeof segment === 'string' && FORBIDDEN_SEGMENTS.has(segment))
        throw syntaxError(`'${segment}' cannot be searched (it is not data)`, token.column);
      segments.push(segment);
      if (segments.length > EXPRESSION_LIMITS.maxPathSegments)
        throw syntaxError(`the path is longer than ${EXPRESSION_LIMITS.maxPathSegments} segments`, token.column);
    }
    return this.count({ type: 'path', segments });
  }

  private list(): ListNode {
    this.expect('[', "after 'in'");
    const items: LiteralValue[] = [];
    while (!this.accept('punct', ']')) {
      if (items.length > 0) this.expect(',', 'between list items');
      const token = this.next();
      if (token.kind === 'string' || token.kind === 'number') items.push(token.value as LiteralValue);
      else if (token.kind === 'name' && Object.hasOwn(KEYWORD_LITERALS, token.text)) items.push(KEYWORD_LITERALS[token.text]);
      else throw syntaxError(`a list holds literals only, got ${describeToken(token)}`, token.column);
      if (items.length > EXPRESSION_LIMITS.maxListItems)
        throw syntaxError(`a list holds at most ${EXPRESSION_LIMITS.maxListItems} items`, token.column);
      this.nodes++;
    }
    return this.count({ type: 'list', items });
  }

  /** Runs a rule one nesting level deeper, refusing past `maxDepth`. */
  private nested<T>(rule: () => T): T {
    if (++this.depth > EXPRESSION_LIMITS.maxDepth)
      throw syntaxError(`nesting deeper than ${EXPRESSION_LIMITS.maxDepth} levels`, this.peek().column);
    try {
      return rule();
    } finally {
      this.depth--;
    }
  }

  /** Counts a node built; past `maxNodes`, refuses naming the column it had reached. */
  private count<T>(node: T): T {
    if (++this.nodes > EXPRESSION_LIMITS.maxNodes)
      throw new OperationError(
        'bad-request',
        `Search expression has more than ${EXPRESSION_LIMITS.maxNodes} parts (at column ${this.peek().column}); ` +
          'split the search or simplify the condition.',
      );
    return node;
  }

  private expect(text: string, why: string): void {
    const token = this.next();
    if (token.kind !== 'punct' || token.text !== text)
      throw syntaxError(`expected '${text}' ${why}, got ${describeToken(token)}`, token.column);
  }

  private accept(kind: Token['kind'], text: string): boolean {
    const token = this.peek();
    if (token.kind !== kind || token.text !== text) return false;
    this.index++;
    return true;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    const token = this.peek();
    if (this.index < this.tokens.length - 1) this.index++;
    return token;
  }
}
