/** A literal's value: what JSON has, less objects and arrays. */
export type LiteralValue = string | number | boolean | null;

/** Operators that compare two operands (`in` takes a list on its right). */
export type CompareOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'startsWith' | 'endsWith' | 'in';

export const COMPARE_OPERATORS: readonly string[] = [
  '==',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'contains',
  'startsWith',
  'endsWith',
  'in',
];

export interface PathNode {
  type: 'path';
  /** The root (`payload`, `headers`, …) first, then property names and array indexes. */
  segments: Array<string | number>;
}

export interface LiteralNode {
  type: 'literal';
  value: LiteralValue;
}

export interface ListNode {
  type: 'list';
  items: LiteralValue[];
}

export type OperandNode = PathNode | LiteralNode | ListNode;

/** The parsed condition: a tree of these, checked against the limits as it was built. */
export type ExpressionNode =
  | { type: 'or' | 'and'; left: ExpressionNode; right: ExpressionNode }
  | { type: 'not'; operand: ExpressionNode }
  | { type: 'compare'; op: CompareOperator; left: OperandNode; right: OperandNode }
  | { type: 'exists'; path: PathNode }
  | PathNode
  | LiteralNode;
