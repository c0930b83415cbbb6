import {
  type CallHandler,
  createParamDecorator,
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
import type { INestApplication, NestHybridApplicationOptions } from '@nestjs/common';
import { BaseRpcExceptionFilter, Ctx, EventPattern, type MessageHandler, Payload } from '@nestjs/microservices';
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
  type RedisStreamsServerOptions,
  encodeEnvelope,
} from 'nest-redis-streams';
import { pendingCount, quietLogger, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';

/** True when the handler was called by Nest's per-message pipeline (its RPC context creator). */
const throughNest = () => (new Error().stack ?? '').includes('rpc-context-creator');

const codec = new JsonCodec();

/** A server whose start-up log lines are collected. */
function serverWithLog(options: RedisStreamsServerOptions = {}) {
  const server = new RedisStreamsServer({ connection: redisUrl(), blockMs: 200, reclaimIntervalMs: 0, ...options });
  const lines: string[] = [];
  (server as unknown as { logger: { log(m: string): void } }).logger.log = (message: string) => lines.push(message);
  return { server, lines };
}

/** A microservice as an app writes it: nothing but createMicroservice() and listen(). */
async function start(
  controllers: Type[],
  configure: (app: Awaited<ReturnType<typeof create>>) => void = () => undefined,
  options: RedisStreamsServerOptions = {},
) {
  const { server, lines } = serverWithLog(options);
  const app = await create(controllers, server);
  configure(app);
  await app.listen();
  return { app, server, lines };
}

/** The path listen() decided for the handler of `stream`. */
const pathOf = (server: RedisStreamsServer, stream: string) => server.getHandlerPaths().find((p) => p.pattern === stream);

function create(controllers: Type[], server: RedisStreamsServer) {
  @Module({ controllers })
  class TestModule {}
  return NestFactory.createMicroservice(TestModule, { strategy: server, logger: quietLogger() });
}

describe('direct handlers (the default): event handlers with nothing bound skip Nest’s per-message pipeline', () => {
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
    const { app, server, lines } = await start([Bare]);
    closers.push(() => app.close());
    expect(
      server
        .getHandlerPaths()
        .map((p) => [p.pattern, p.group, p.path])
        .sort(),
    ).toEqual(
      [
        [both, 'ledger', 'direct'],
        [property, 'nest', 'direct'],
        [plain, 'nest', 'direct'],
      ].sort(),
    );
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
    const [filtered, scoped, decorated] = [unique('via-filter'), unique('via-scope'), unique('via-decorator')];
    const Name = createParamDecorator(
      (_: unknown, host: ExecutionContext) => host.switchToRpc().getData<{ name: string }>().name,
    );
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
    @Controller()
    class WithDecorator {
      @EventPattern(decorated)
      handle(@Name() name: string) {
        viaNest[decorated] = throughNest() && name === 'ada';
      }
    }
    const { app, server, lines } = await start([WithInterceptor, WithGuard, WithPipe, WithFilter, RequestScoped, WithDecorator]);
    closers.push(() => app.close());
    const streams = [intercepted, guarded, piped, filtered, scoped, decorated];
    for (const stream of streams) await redis.xadd(stream, '*', ...encodeEnvelope({ data: { name: 'ada' } }, codec));
    await waitFor(() => Object.keys(viaNest).length === 6, 'six handled entries');
    expect(viaNest).toEqual(Object.fromEntries(streams.map((stream) => [stream, true])));
    expect(ran.sort()).toEqual(['guard', 'interceptor', 'pipe']);
    expect(lines.filter((line) => line.includes("runs through Nest's pipeline"))).toHaveLength(6);
    expect(lines.some((line) => line.includes('runs direct'))).toBe(false);
    expect(Object.fromEntries(streams.map((stream) => [stream, pathOf(server, stream)?.reason]))).toEqual({
      [intercepted]: 'interceptors bound to WithInterceptor.handle',
      [guarded]: 'guards bound to WithGuard.handle',
      [piped]: 'a pipe bound to parameter 0 of handle',
      [filtered]: 'an exception filter bound to WithFilter.handle',
      [scoped]: 'its controller is request-scoped',
      [decorated]: 'parameter 0 of handle has a custom decorator',
    });
  });

  type Microservice = Awaited<ReturnType<typeof create>>;
  it.each<[string, string, (app: Microservice, ran: string[]) => void]>([
    ['guard', 'getGlobalGuards', (app, ran) => app.useGlobalGuards({ canActivate: () => Boolean(ran.push('guard')) })],
    [
      'interceptor',
      'getGlobalInterceptors',
      (app, ran) =>
        app.useGlobalInterceptors({
          intercept: (_: ExecutionContext, next: CallHandler) => {
            ran.push('interceptor');
            return next.handle();
          },
        }),
    ],
    [
      'pipe',
      'getGlobalPipes',
      (app, ran) =>
        app.useGlobalPipes({
          transform: (value: unknown) => {
            ran.push('pipe');
            return value;
          },
        }),
    ],
    ['filter', 'getGlobalFilters', (app) => app.useGlobalFilters(new BaseRpcExceptionFilter())],
  ])('keeps Nest’s pipeline for every handler once an app-wide %s is bound', async (kind, getter, bind) => {
    const stream = unique(`global-${kind}`);
    const ran: string[] = [];
    let viaNest: boolean | undefined;
    @Controller()
    class Bare {
      @EventPattern(stream)
      handle() {
        viaNest = throughNest();
      }
    }
    const { app, server, lines } = await start([Bare], (created) => bind(created, ran));
    closers.push(() => app.close());
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => viaNest !== undefined, 'the handled entry');
    expect({ viaNest, ran }).toEqual({ viaNest: true, ran: kind === 'filter' ? [] : [kind] });
    expect(pathOf(server, stream)).toEqual({
      pattern: stream,
      group: 'nest',
      path: 'pipeline',
      reason: `app-wide enhancers are bound (${getter})`,
    });
    expect(lines.find((line) => line.includes(stream))).toContain(
      `runs through Nest's pipeline: app-wide enhancers are bound (${getter})`,
    );
  });

  it('runs every handler through Nest’s pipeline with directHandlers: false, and says so per handler', async () => {
    const [first, second] = [unique('off-first'), unique('off-second')];
    const calls: Array<[string, boolean]> = [];
    @Controller()
    class Bare {
      @EventPattern(first)
      one(@Payload() _data: unknown) {
        calls.push([first, throughNest()]);
      }
      @EventPattern(second)
      two(@Payload() _data: unknown, @Ctx() _ctx: RedisStreamsContext) {
        calls.push([second, throughNest()]);
      }
    }
    const { app, server, lines } = await start([Bare], () => undefined, { directHandlers: false });
    closers.push(() => app.close());
    for (const stream of [first, second]) await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => calls.length === 2, 'both handled entries');
    expect(calls.sort()).toEqual(
      [
        [first, true],
        [second, true],
      ].sort(),
    );
    expect(server.getHandlerPaths().map((p) => p.path)).toEqual(['pipeline', 'pipeline']);
    expect(
      lines.filter((line) => line.includes("runs through Nest's pipeline: the server option directHandlers is false")),
    ).toHaveLength(2);
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

  /** A hybrid app whose one bare handler records whether Nest's pipeline called it, after one entry. */
  async function runHybrid(stream: string, connect: (http: INestApplication, server: RedisStreamsServer) => void) {
    const calls: boolean[] = [];
    @Controller()
    class Bare {
      @EventPattern(stream)
      handle() {
        calls.push(throughNest());
      }
    }
    @Module({ controllers: [Bare] })
    class HybridModule {}
    const { server } = serverWithLog();
    const http = await NestFactory.create(HybridModule, { logger: quietLogger() });
    closers.push(() => http.close());
    connect(http, server);
    await http.startAllMicroservices();
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: 1 }, codec));
    await waitFor(() => calls.length === 1, 'the handled entry');
    return { viaNest: calls[0], path: pathOf(server, stream) };
  }

  it.each<[string, NestHybridApplicationOptions]>([
    ['connectMicroservice()', {}],
    ['deferred initialisation', { deferInitialization: true }],
  ])('finds its microservice in a hybrid app (%s); the HTTP app’s own enhancers do not apply to it', async (_, hybrid) => {
    const ran: string[] = [];
    const { viaNest, path } = await runHybrid(unique('hybrid'), (http, server) => {
      http.useGlobalGuards({ canActivate: () => Boolean(ran.push('http guard')) });
      http.connectMicroservice({ strategy: server }, hybrid);
    });
    expect({ viaNest, ran, path: path?.path }).toEqual({ viaNest: false, ran: [], path: 'direct' });
  });

  it('keeps Nest’s pipeline in a hybrid app that inherits the HTTP app’s global guard', async () => {
    const ran: string[] = [];
    const { viaNest, path } = await runHybrid(unique('hybrid-inherit'), (http, server) => {
      http.useGlobalGuards({ canActivate: () => Boolean(ran.push('http guard')) });
      http.connectMicroservice({ strategy: server }, { inheritAppConfig: true });
    });
    expect({ viaNest, ran, reason: path?.reason }).toEqual({
      viaNest: true,
      ran: ['http guard'],
      reason: 'app-wide enhancers are bound (getGlobalGuards)',
    });
  });

  it('still accepts the deprecated useDirectHandlers(app), even given the hybrid app’s HTTP application', async () => {
    const { viaNest, path } = await runHybrid(unique('deprecated'), (http, server) => {
      http.connectMicroservice({ strategy: server });
      expect(server.useDirectHandlers(http)).toBe(server);
    });
    expect({ viaNest, path: path?.path }).toEqual({ viaNest: false, path: 'direct' });
  });

  it('says why handlers keep the pipeline when no Nest microservice registered them', async () => {
    const [alone, told] = [unique('no-app'), unique('not-an-app')];
    const servers = [serverWithLog(), serverWithLog()];
    servers[1].server.useDirectHandlers({ not: 'a microservice' });
    for (const [{ server }, stream] of [
      [servers[0], alone],
      [servers[1], told],
    ] as const) {
      server.addHandler(stream, (async () => undefined) as unknown as MessageHandler, true, {});
      await new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
      closers.push(() => server.close());
    }
    expect(pathOf(servers[0].server, alone)?.reason).toBe(
      'the Nest microservice that registered it could not be reached (pass it with server.useDirectHandlers(app) before listen())',
    );
    expect(servers[1].lines.find((line) => line.includes(told))).toContain('the Nest application could not be read');
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
