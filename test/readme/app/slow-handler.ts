import { writeSync } from 'node:fs';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext, streamPattern } from 'nest-redis-streams';

/** Lines on stdout that the test reads; Nest's own log lines do not start with it. */
export const REPORT_PREFIX = 'readme-app ';

// Written synchronously (fd 1), so a line reported just before the process ends is not lost.
function report(event: 'start' | 'done', id: string): void {
  writeSync(1, `${REPORT_PREFIX}${JSON.stringify({ event, id })}\n`);
}

/**
 * The handler the README snippets mount in the test: slow enough (HANDLER_MS) to be running when
 * SIGTERM arrives. Stream, group and concurrency come from the environment of each test.
 */
@Controller()
export class SlowHandler {
  @EventPattern(streamPattern(process.env.STREAM ?? 'readme'), {
    group: process.env.GROUP,
    concurrency: Number(process.env.CONCURRENCY ?? 1),
  })
  async handle(@Payload() _order: unknown, @Ctx() ctx: RedisStreamsContext) {
    report('start', ctx.getEntryId());
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.HANDLER_MS ?? 500)));
    report('done', ctx.getEntryId());
  }
}
