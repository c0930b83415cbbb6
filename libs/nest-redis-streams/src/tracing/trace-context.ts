import { type OtelApi, type OtelSpan, otelApi, tracingConfigured } from './otel-api.js';

/** The tracer every span of this library is started with. */
export const TRACER = 'nest-redis-streams';

/** True when handlers should run in consumer spans (OpenTelemetry installed and configured). */
export function tracingEnabled(): boolean {
  const api = otelApi();
  return api !== null && tracingConfigured(api);
}

/**
 * Headers carrying the active trace context (`traceparent`, `tracestate`, as the registered
 * propagator writes them), for the envelope. Empty without OpenTelemetry.
 */
export function activeTraceHeaders(): Record<string, string> {
  const api = otelApi();
  if (!api || !tracingConfigured(api)) return {};
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  return carrier;
}

/**
 * Runs a handler inside a CONSUMER span that continues the producer's trace from the entry's
 * headers, so the handler's own spans (database, HTTP) join the trace. Without OpenTelemetry it
 * simply runs the handler.
 */
export function runInTraceContext<T>(
  headers: Record<string, string>,
  attributes: { stream: string; group: string; entryId: string },
  handler: () => Promise<T>,
): Promise<T> {
  const api = otelApi();
  if (!api || !tracingConfigured(api)) return handler();
  const parent = api.propagation.extract(api.context.active(), headers);
  const options = {
    kind: api.SpanKind.CONSUMER,
    attributes: {
      'messaging.system': 'redis',
      'messaging.destination.name': attributes.stream,
      'messaging.consumer.group.name': attributes.group,
      'messaging.message.id': attributes.entryId,
    },
  };
  return api.trace
    .getTracer(TRACER)
    .startActiveSpan(`${attributes.stream} process`, options, parent, (span) => endSpanAfter(api, span, handler));
}

/** Runs the handler and ends its span with the outcome: a failure is recorded on it, then rethrown. */
export async function endSpanAfter<T>(api: OtelApi, span: OtelSpan, handler: () => Promise<T>): Promise<T> {
  try {
    return await handler();
  } catch (err) {
    span.recordException(err);
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}
