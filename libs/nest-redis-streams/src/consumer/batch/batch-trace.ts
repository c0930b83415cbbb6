import { otelApi, type OtelSpan, tracingConfigured } from '../../tracing/otel-api.js';
import { endSpanAfter, TRACER } from '../../tracing/trace-context.js';

/** The parts of `@opentelemetry/api` a batch span needs beyond those of a single entry's span. */
interface LinkingApi {
  trace: {
    getSpanContext(ctx: unknown): object | undefined;
    getTracer(name: string): {
      startActiveSpan<T>(name: string, options: object, fn: (span: OtelSpan) => T): T;
    };
  };
}

/**
 * Runs a batch handler inside one CONSUMER span (`<stream> process`, `messaging.batch.message_count`)
 * linked to each entry's producer span: a batch has many parents, and OpenTelemetry's messaging
 * conventions model that with links, not with a parent. Without OpenTelemetry it simply runs.
 */
export function runBatchInTraceContext<T>(
  headers: readonly Record<string, string>[],
  attributes: { stream: string; group: string },
  handler: () => Promise<T>,
): Promise<T> {
  const api = otelApi();
  if (!api || !tracingConfigured(api)) return handler();
  // The structural OtelApi type covers single entries only; the real API has both members.
  const trace = api.trace as unknown as LinkingApi['trace'];
  const links: Array<{ context: object }> = [];
  for (const carrier of headers) {
    const context = trace.getSpanContext(api.propagation.extract(api.context.active(), carrier));
    if (context) links.push({ context });
  }
  const options = {
    kind: api.SpanKind.CONSUMER,
    links,
    attributes: {
      'messaging.system': 'redis',
      'messaging.destination.name': attributes.stream,
      'messaging.consumer.group.name': attributes.group,
      'messaging.batch.message_count': headers.length,
    },
  };
  return trace
    .getTracer(TRACER)
    .startActiveSpan(`${attributes.stream} process`, options, (span) => endSpanAfter(api, span, handler));
}
