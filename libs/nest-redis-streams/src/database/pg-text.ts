/** With the u flag a surrogate pair is one code point, so only a lone surrogate is of category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Why PostgreSQL would refuse or silently change `value` as text or in jsonb, or null: a NUL
 * (U+0000) is refused, and node-postgres encodes text as UTF-8, turning a lone surrogate into
 * U+FFFD without a word, so the stored value would no longer be the one given.
 */
export function pgTextProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000), which PostgreSQL text and jsonb cannot store';
  if (LONE_SURROGATE.test(value))
    return 'contains a lone UTF-16 surrogate, which UTF-8 cannot encode (it would be stored changed)';
  return null;
}
