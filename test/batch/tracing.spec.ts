import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { context, propagation, trace, TraceFlags, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, streamPattern } from 'nest-redis-streams';
import { redisUrl, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/** A span as the recording tracer saw it start. */
interface Started {
  name: string;
  options: { kind?: number; attributes?: Record<string, unknown>; links?: Array<{ context: { traceId: string } }> };
  ended: boolean;
}

/** Records the spans started through it (the repository has no OpenTelemetry SDK to export them). */
function recordingProvider(spans: Started[]): TracerProvider {
  const tracer = {
    startActiveSpan(name: string, options: Started['options'], ...rest: unknown[]) {
      const fn = rest[rest.length - 1] as (span: unknown) => unknown;
      const started: Started = { name, options, ended: false };
      spans.push(started);
      return fn({ end: () => (started.ended = true), setStatus: () => undefined, recordException: () => undefined });
    },
  };
  return { getTracer: () => tracer as unknown as Tracer };
}

describe('batch handlers: tracing', () => {
  const { closers } = testContext();
  const spans: Started[] = [];
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(recordingProvider(spans));
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
    trace.disable();
  });

  it("runs a batch in one consumer span linked to each entry's producer span", async () => {
    const stream = unique('batch-traced');
    const handled: number[] = [];
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { batch: { maxSize: 2, maxWaitMs: 5_000 } })
      record(@Payload() values: Array<{ n: number }>) {
        handled.push(...values.map(({ n }) => n));
      }
    }
    const client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(() => client.close());
    const traceIds = ['4bf92f3577b34da6a3ce929d0e0e4736', '5cf92f3577b34da6a3ce929d0e0e4737'];
    for (const [n, traceId] of traceIds.entries()) {
      const producer = { traceId, spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED };
      await context.with(trace.setSpanContext(context.active(), producer), () => lastValueFrom(client.emit(stream, { n })));
    }
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await waitFor(() => handled.length === 2 && spans.some((s) => s.ended && s.name === `${stream} process`), 'the traced batch');
    const batchSpans = spans.filter((s) => s.name === `${stream} process`);
    expect(batchSpans).toHaveLength(1);
    expect(batchSpans[0].options.attributes).toMatchObject({
      'messaging.destination.name': stream,
      'messaging.consumer.group.name': 'nest',
      'messaging.batch.message_count': 2,
    });
    expect(batchSpans[0].options.links?.map((link) => link.context.traceId)).toEqual(traceIds);
  });
});
