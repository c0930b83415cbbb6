/** The DeadLetterService the reconciliation reads the `orders:dlq` stream with. */
export const DEAD_LETTERS = Symbol('DEAD_LETTERS');
