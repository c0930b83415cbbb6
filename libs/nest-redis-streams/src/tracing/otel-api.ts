import { createRequire } from 'node:module';

/** The parts of `@opentelemetry/api` the transport uses (kept structural: the package is optional). */
export interface OtelApi {
  context: {
    active(): unknown;
    with<T>(ctx: unknown, fn: () => T): T;
  };
  propagation: {
    inject(ctx: unknown, carrier: Record<string, string>): void;
    extract(ctx: unknown, carrier: Record<string, string>): unknown;
    fields(): string[];
  };
  trace: {
    getTracerProvider(): { getDelegate?(): object };
    getTracer(name: string): {
      startActiveSpan<T>(
        name: string,
        options: { kind: number; attributes?: Record<string, string | number> },
        ctx: unknown,
        fn: (span: OtelSpan) => T,
      ): T;
    };
  };
  SpanKind: { PRODUCER: number; CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

export interface OtelSpan {
  setStatus(status: { code: number; message?: string }): void;
  recordException(exception: unknown): void;
  end(): void;
}

let loaded: OtelApi | null | undefined;

/** `@opentelemetry/api` when the application installed it, else null (tracing then costs nothing). */
export function otelApi(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/**
 * True when OpenTelemetry is installed and configured: a propagator or a tracer provider was
 * registered. An installed but unconfigured API would only add no-op spans to every entry.
 */
export function tracingConfigured(api: OtelApi): boolean {
  if (api.propagation.fields().length > 0) return true;
  const delegate = api.trace.getTracerProvider().getDelegate?.();
  return delegate !== undefined && delegate.constructor.name !== 'NoopTracerProvider';
}
