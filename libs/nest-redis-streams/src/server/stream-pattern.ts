/** A stream named as a pattern object (see `streamPattern`). */
export interface StreamPattern {
  readonly stream: string;
}

/**
 * Names a stream for `@EventPattern` / `@MessagePattern`: `@EventPattern(streamPattern('orders'),
 * { group: 'billing' })` subscribes exactly like `@EventPattern('orders', { group: 'billing' })`.
 *
 * Why it exists: with a string, Nest 12's typed `@EventPattern` overload applies and requires the
 * handler's parameters after the payload to accept `unknown`, so `@Ctx() ctx: RedisStreamsContext`
 * does not compile under `strict: true`. An object pattern selects Nest's untyped overload.
 *
 * @example
 * ```ts
 * @EventPattern(streamPattern('orders'), { group: 'billing' })
 * charge(@Payload() order: Order, @Ctx() ctx: RedisStreamsContext) {}
 * ```
 */
export function streamPattern(stream: string): StreamPattern {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError(`streamPattern() needs the stream's name as a non-empty string, got ${JSON.stringify(stream)}.`);
  }
  return { stream };
}

/** The stream name of a handler's pattern: a plain string, or a `streamPattern()` object. */
export function streamNameOf(pattern: unknown): unknown {
  if (typeof pattern === 'object' && pattern !== null && typeof (pattern as StreamPattern).stream === 'string') {
    return (pattern as StreamPattern).stream;
  }
  return pattern;
}
