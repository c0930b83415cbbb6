/** Bounds on a search expression, so that one request cannot make the parser or evaluator work without end. */
export const EXPRESSION_LIMITS = {
  /** Characters in the whole expression. */
  maxLength: 2_000,
  /** Nesting of parentheses, `!` and operators. */
  maxDepth: 24,
  /** Nodes in the parsed tree (paths, literals, comparisons, lists). */
  maxNodes: 200,
  /** Elements of one `in [...]` list. */
  maxListItems: 100,
  /** Segments of one path (`payload.a.b.c`). */
  maxPathSegments: 16,
};

/** The roots a path may start with; anything else is refused at parse time, naming these. */
export const EXPRESSION_ROOTS = ['id', 'time', 'fields', 'headers', 'payload', 'pending', 'deadLetter'] as const;

/**
 * Property names a path may never name: they reach an object's prototype chain rather than its
 * data. Access is to own properties only anyway; refusing them at parse time says so plainly.
 */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
