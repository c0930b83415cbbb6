export * from './expression-ast.js';
export { evaluate, type SearchScope } from './expression-evaluator.js';
export { EXPRESSION_LIMITS, EXPRESSION_ROOTS } from './expression-limits.js';
export { parseExpression } from './expression-parser.js';
