import {
  type CallHandler,
  type CanActivate,
  Controller,
  type ExecutionContext,
  Injectable,
  Module,
  type NestInterceptor,
  type PipeTransform,
  Scope,
  type Type,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BaseRpcExceptionFilter, Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { context, propagation, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { lastValueFrom, type Observable } from 'rxjs';
import {
  JsonCodec,
  RedisStreamsContext,
  RedisStreamsClient,
  RedisStreamsExceptionFilter,
  RedisStreamsServer,
  encodeEnvelope,
} from 'nest-redis-streams';
import { pendingCount, quietLogger, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';

/** True when the handler was called by Nest's per-message pipeline (its RPC context creator). */
const throughNest = () => (new Error().stack ?? '').includes('rpc-context-creator');

const codec = new JsonCodec();

async function start(controllers: Type[], configure: (app: Awaited<ReturnType<typeof create>>) => void = () => undefined) {
  const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200, reclaimIntervalMs: 0 });
  const lines: string[] = [];
  (server as unknown as { logger: { log(m: string): void } }).logger.log = (message: string) => lines.push(message);
  const app = await create(controllers, server);
  server.useDirectHandlers(app);
  configure(app);
  await app.listen();
  return { app, server, lines };
}

function create(controllers: Type[], server: RedisStreamsServer) {
  @Module({ controllers })
  class TestModule {}
  return NestFactory.createMicroservice(TestModule, { strategy: server, logger: quietLogger() });
}

describe('useDirectHandlers: event handlers with nothing bound skip Nest’s per-message pipeline', () => {
  const { redis, closers } = testContext();

  it('calls a bare handler directly with the arguments Nest would pass, and acks it', async () => {
    const [both, property, plain] = [unique('direct-both'), unique('direct-property'), unique('direct-plain')];
    const seen: Array<{ stream: string; args: unknown[]; nest: boolean }> = [];
    @Controller()
    class Bare {
      @EventPattern(both, { group: 'ledger' })
      withContext(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push({ stream: both, args: [data, ctx.getGroup(), ctx.getEventId()], nest: throughNest() });
      }
      @EventPattern(property)
      orderId(@Payload('orderId') orderId: unknown) {
        seen.push({ stream: property, args: [orderId], nest: throughNest() });
      }
      // No parameter decorator: Nest passes (payload, context).
      @EventPattern(plain)
      async undecorated(data: unknown, ctx: RedisStreamsContext) {
        seen.push({ stream: plain, args: [data, ctx.getStream()], nest: throughNest() });
      }
    }
    const { app, lines } = await start([Bare]);
    closers.push(() => app.close());
    const data = { orderId: 'ord-1' };
    for (const stream of [both, property, plain])
      await redis.xadd(stream, '*', ...encodeEnvelope({ data, eventId: 'e-1' }, codec));
    await waitFor(() => seen.length === 3, 'three handled entries');
    expect(seen.sort((a, b) => a.stream.localeCompare(b.stream))).toEqual(
      [
        { stream: both, args: [data, 'ledger', 'e-1'], nest: false },
        { stream: property, args: ['ord-1'], nest: false },
        { stream: plain, args: [data, plain], nest: false },
      ].sort((a, b) => a.stream.localeCompare(b.stream)),
    );
    expect(lines.filter((line) => line.includes('runs direct'))).toHaveLength(3);
    await waitFor(async () => (await pendingCount(redis, both, 'ledger')) === 0, 'the ack');
  });

  it('keeps Nest’s pipeline for a handler with an interceptor, guard, pipe or other filter bound, or request-scoped', async () => {
    const [intercepted, guarded, piped] = [unique('via-interceptor'), unique('via-guard'), unique('via-pipe')];
    const [filtered, scoped] = [unique('via-filter'), unique('via-scope')];
    const ran: string[] = [];
    const viaNest: Record<string, boolean> = {};
    @Injectable()
    class Counting implements NestInterceptor {
      intercept(_: ExecutionContext, next: CallHandler): Observable<unknown> {
        ran.push('interceptor');
        return next.handle();
      }
    }
    @Injectable()
    class Allow implements CanActivate {
      canActivate(): boolean {
        ran.push('guard');
        return true;
      }
    }
    class Upper implements PipeTransform {
      transform(value: { name: string }) {
        ran.push('pipe');
        return { name: value.name.toUpperCase() };
      }
    }
    @Controller()
    class WithInterceptor {
      @UseInterceptors(Counting)
      @EventPattern(intercepted)
      handle() {
        viaNest[intercepted] = throughNest();
      }
    }
    @UseGuards(Allow)
    @Controller()
    class WithGuard {
      @EventPattern(guarded)
      handle() {
        viaNest[guarded] = throughNest();
      }
    }
    @Controller()
    class WithPipe {
      @EventPattern(piped)
      handle(@Payload(new Upper()) data: { name: string }) {
        viaNest[piped] = throughNest() && data.name === 'ADA';
      }
    }
    class OtherFilter extends BaseRpcExceptionFilter {}
    @UseFilters(new OtherFilter())
    @Controller()
    class WithFilter {
      @EventPattern(filtered)
      handle() {
        viaNest[filtered] = throughNest();
      }
    }
    @Controller({ scope: Scope.REQUEST })
    class RequestScoped {
      @EventPattern(scoped)
      handle() {
        viaNest[scoped] = throughNest();
      }
    }
    const { app, lines } = await start([WithInterceptor, WithGuard, WithPipe, WithFilter, RequestScoped]);
    closers.push(() => app.close());
    const streams = [intercepted, guarded, piped, filtered, scoped];
    for (const stream of streams) await redis.xadd(stream, '*', ...encodeEnvelope({ data: { name: 'ada' } }, codec));
    await waitFor(() => Object.keys(viaNest).length === 5, 'five handled entries');
    expect(viaNest).toEqual(Object.fromEntries(streams.map((stream) => [stream, true])));
    expect(ran.sort()).toEqual(['guard', 'interceptor', 'pipe']);
    expect(lines.filter((line) => line.includes("runs through Nest's pipeline"))).toHaveLength(5);
    expect(lines.find((line) => line.includes(scoped))).toContain('request-scoped');
    expect(lines.some((line) => line.includes('runs direct'))).toBe(false);
  });

  it('keeps Nest’s pipeline for every handler once an app-wide interceptor is bound', async () => {
    const stream = unique('global-interceptor');
    let intercepted = 0;
    let viaNest: boolean | undefined;
    @Controller()
    class Bare {
      @EventPattern(stream)
      handle() {
        viaNest = throughNest();
      }
    }
    const { app, lines } = await start([Bare], (created) =>
      created.useGlobalInterceptors({
        intercept: (_: ExecutionContext, next: CallHandler) => {
          intercepted++;
          return next.handle();
        },
      }),
    );
    closers.push(() => app.close());
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => viaNest !== undefined, 'the handled entry');
    expect({ viaNest, intercepted }).toEqual({ viaNest: true, intercepted: 1 });
    expect(lines.find((line) => line.includes(stream))).toContain('app-wide enhancers are bound (getGlobalInterceptors)');
  });

  it('fails an entry exactly as Nest’s pipeline does: the same error reaches the transport, the entry stays pending', async () => {
    const [direct, piped] = [unique('fail-direct'), unique('fail-nest')];
    class Passthrough implements PipeTransform {
      transform(value: unknown) {
        return value;
      }
    }
    @Controller()
    class Failing {
      @EventPattern(direct)
      sync(@Payload() _data: unknown) {
        throw new Error('ledger down');
      }
      @EventPattern(piped)
      viaPipe(@Payload(new Passthrough()) _data: unknown) {
        throw new Error('ledger down');
      }
    }
    const { app, server, lines } = await start([Failing]);
    closers.push(() => app.close());
    const errors = new Map<string, unknown>();
    server.events.on('failed', ({ stream, error }) => errors.set(stream, error));
    for (const stream of [direct, piped]) await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => errors.size === 2, 'both failures');
    expect(lines.find((line) => line.includes(direct))).toContain('runs direct');
    expect(errors.get(direct)).toEqual(errors.get(piped));
    expect(await pendingCount(redis, direct, 'nest')).toBe(1);
  });

  it('still runs direct with RedisStreamsExceptionFilter registered app-wide, and hands the original error on as Nest does', async () => {
    const [direct, piped] = [unique('own-filter-direct'), unique('own-filter-nest')];
    class Passthrough implements PipeTransform {
      transform(value: unknown) {
        return value;
      }
    }
    class LedgerDown extends Error {}
    @Controller()
    class Failing {
      @EventPattern(direct)
      async viaDirect(@Payload() _data: unknown) {
        throw new LedgerDown('ledger down');
      }
      @EventPattern(piped)
      async viaNest(@Payload(new Passthrough()) _data: unknown) {
        throw new LedgerDown('ledger down');
      }
    }
    const { app, server, lines } = await start([Failing], (created) =>
      created.useGlobalFilters(new RedisStreamsExceptionFilter()),
    );
    closers.push(() => app.close());
    const errors = new Map<string, unknown>();
    server.events.on('failed', ({ stream, error }) => errors.set(stream, error));
    for (const stream of [direct, piped]) await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => errors.size === 2, 'both failures');
    expect(lines.find((line) => line.includes(direct))).toContain('runs direct');
    expect(lines.find((line) => line.includes(piped))).toContain("runs through Nest's pipeline");
    expect(errors.get(direct)).toBeInstanceOf(LedgerDown);
    expect(errors.get(piped)).toBeInstanceOf(LedgerDown);
  });

  it('keeps Nest’s pipeline when two handlers share a stream and group, and runs each once per entry', async () => {
    const stream = unique('chained');
    const calls: Array<[string, boolean]> = [];
    @Controller()
    class Ledger {
      @EventPattern(stream)
      handle() {
        calls.push(['ledger', throughNest()]);
      }
    }
    @Controller()
    class Audit {
      @EventPattern(stream)
      handle() {
        calls.push(['audit', throughNest()]);
      }
    }
    const { app, lines } = await start([Ledger, Audit]);
    closers.push(() => app.close());
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => calls.length === 2, 'both handlers');
    expect(calls.sort()).toEqual([
      ['audit', true],
      ['ledger', true],
    ]);
    expect(lines.find((line) => line.includes(stream))).toContain('several handlers share its stream and group');
  });

  it('refuses what is not a microservice it can inspect (a hybrid app’s HTTP application)', async () => {
    const stream = unique('hybrid');
    let viaNest: boolean | undefined;
    @Controller()
    class Bare {
      @EventPattern(stream)
      handle() {
        viaNest = throughNest();
      }
    }
    @Module({ controllers: [Bare] })
    class HybridModule {}
    const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200, reclaimIntervalMs: 0 });
    const lines: string[] = [];
    (server as unknown as { logger: { log(m: string): void } }).logger.log = (message: string) => lines.push(message);
    const http = await NestFactory.create(HybridModule, { logger: quietLogger() });
    closers.push(() => http.close());
    http.connectMicroservice({ strategy: server });
    server.useDirectHandlers(http);
    await http.startAllMicroservices();
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => viaNest !== undefined, 'the handled entry');
    expect(viaNest).toBe(true);
    expect(lines.find((line) => line.includes(stream))).toContain('not a Nest microservice');
  });

  it('runs direct in a hybrid app given the microservice connectMicroservice() returns', async () => {
    const stream = unique('hybrid-ms');
    let viaNest: boolean | undefined;
    @Controller()
    class Bare {
      @EventPattern(stream)
      handle() {
        viaNest = throughNest();
      }
    }
    @Module({ controllers: [Bare] })
    class HybridModule {}
    const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200, reclaimIntervalMs: 0 });
    const http = await NestFactory.create(HybridModule, { logger: quietLogger() });
    closers.push(() => http.close());
    server.useDirectHandlers(http.connectMicroservice({ strategy: server }));
    await http.startAllMicroservices();
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => viaNest !== undefined, 'the handled entry');
    expect(viaNest).toBe(false);
  });

  it('runs a direct handler inside the producer’s trace context, as the pipeline does', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    closers.push(async () => {
      context.disable();
      propagation.disable();
    });
    const stream = unique('direct-traced');
    const seen: Array<{ traceId?: string; nest: boolean }> = [];
    @Controller()
    class Traced {
      @EventPattern(stream)
      handle(@Payload() _data: unknown) {
        seen.push({ traceId: trace.getSpanContext(context.active())?.traceId, nest: throughNest() });
      }
    }
    const { app } = await start([Traced]);
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(() => client.close());
    const producer = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED };
    await context.with(trace.setSpanContext(context.active(), producer), () => lastValueFrom(client.emit(stream, { order: 1 })));
    await waitFor(() => seen.length === 1, 'the traced entry');
    expect(seen[0]).toEqual({ traceId: producer.traceId, nest: false });
  });
});
