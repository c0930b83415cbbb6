import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsContext } from 'nest-redis-streams';
import { redisUrl, startMicroservice, testContext, unique, waitFor, HANDLER_PATHS, runHandlersOn } from '../support/helpers.js';

describe.each(HANDLER_PATHS)('trace context propagation (%s path)', (path) => {
  runHandlersOn(path);
  const { closers } = testContext();
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  it("carries the producer's traceparent through the envelope and continues the trace around the handler", async () => {
    const stream = unique('traced');
    const seen: Array<{ header?: string; traceId?: string }> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Ctx() ctx: RedisStreamsContext) {
        seen.push({ header: ctx.getHeaders().traceparent, traceId: trace.getSpanContext(context.active())?.traceId });
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(() => client.close());

    const producerSpan = {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: TraceFlags.SAMPLED,
    };
    await context.with(trace.setSpanContext(context.active(), producerSpan), () =>
      lastValueFrom(client.emit(stream, { order: 1 })),
    );
    await waitFor(() => seen.length === 1, 'the traced entry');
    expect(seen[0]).toEqual({ header: `00-${producerSpan.traceId}-${producerSpan.spanId}-01`, traceId: producerSpan.traceId });
  });
});
