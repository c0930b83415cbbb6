import { Body, ConflictException, Controller, Get, Inject, Query, Req, UseGuards, UseInterceptors } from '@nestjs/common';
import { CanaryRunningError } from '../operations/errors/canary-running.error.js';
import { OperationError } from '../operations/errors/operation.error.js';
import { OPERATIONS_MESSAGES } from '../operations/operations.messages.js';
import type { StreamOperations } from '../operations/stream-operations.js';
import { ConsoleAccessGuard, type ConsoleRequest } from './console-access.guard.js';
import { ConsoleHeadersInterceptor } from './console-headers.interceptor.js';
import { answer, count, id, type Input, name, optionalId, optionalName } from './console-http.js';
import type { RedisStreamsConsoleOptions } from './console-options.interface.js';
import { actor, redactFields, redactLetter } from './console-redaction.js';
import { ConsoleWrite } from './console-write.decorator.js';
import { CONSOLE_OPERATIONS, CONSOLE_OPTIONS } from './console.constants.js';
import { Post } from './post.decorator.js';
import { RequestSignal } from './request-signal.decorator.js';

/**
 * The console's JSON API for dead letters: the list, one letter, failure groups, re-drive (one,
 * matching, dry run, canary) and discard. The same guard, headers and bounds as the rest of the
 * API (`ConsoleApiController`); apart only to keep each controller small.
 */
@Controller('api')
@UseGuards(ConsoleAccessGuard)
@UseInterceptors(ConsoleHeadersInterceptor)
export class ConsoleDeadLettersController {
  constructor(
    @Inject(CONSOLE_OPERATIONS) private readonly ops: StreamOperations,
    @Inject(CONSOLE_OPTIONS) private readonly options: RedisStreamsConsoleOptions,
  ) {}

  /** One dead letter by its id in the dead-letter stream, redacted like the list. */
  @Get('dead-letter')
  deadLetter(@Query() q: Input) {
    return answer(async () => {
      const letter = await this.ops.deadLetter(name(q, 'stream'), id(q));
      return { letter: letter && redactLetter(this.options, letter) };
    });
  }

  @Get('dead-letters')
  deadLetters(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(async () => {
      const stream = name(q, 'stream');
      const filter = deadLetterFilter(q);
      const page = { after: optionalId(q, 'after'), count: count(q) };
      const { deadLetterStream } = await this.ops.served(stream);
      const [found, tally] = await Promise.all([
        this.ops.listDeadLetters(stream, filter, page, signal),
        this.ops.tallyDeadLetters(stream, signal),
      ]);
      return { ...found, items: found.items.map((d) => redactLetter(this.options, d)), tally, deadLetterStream };
    }, signal);
  }

  /** The dead letters grouped by cause: of `stream`, or without it of every served stream merged. */
  @Get('dead-letters/groups')
  failureGroups(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(async () => {
      const stream = optionalName(q, 'stream');
      return stream === undefined ? this.ops.failureGroupsAcross(signal) : this.ops.failureGroups(stream, signal);
    }, signal);
  }

  /** A dry run of a filtered re-drive; ordering keys (read from `key`) pass through the redaction hook. */
  @Get('dead-letters/redrive-preview')
  redrivePreview(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(async () => {
      const [stream, keyField] = [name(q, 'stream'), optionalName(q, 'key')];
      const preview = await this.ops.previewRedrive(stream, deadLetterFilter(q), keyField, signal);
      if (!preview.keys || !this.options.redact) return preview;
      const top = preview.keys.top.map(({ key, count }) => {
        const [pair] = redactFields(this.options, [[preview.keys!.field, key]], { stream, id: '' }) ?? [];
        return { key: pair?.[1] ?? '', count };
      });
      return { ...preview, keys: { ...preview.keys, top } };
    }, signal);
  }

  @Post('dead-letters/redrive')
  @ConsoleWrite('dlq.redrive')
  redrive(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.redrive(actor(req), name(b, 'stream'), id(b)));
  }

  /** Every dead letter matching reason/group; with neither, `all: true` must say that all is meant. */
  @Post('dead-letters/redrive-matching')
  @ConsoleWrite('dlq.redrive-matching')
  redriveMatching(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(async () => {
      const filter = deadLetterFilter(b);
      if (!filter.reason && !filter.group && !filter.cause && b?.all !== true) {
        throw new OperationError(
          'bad-request',
          'A re-drive of every dead letter needs "all": true (or filter by reason, group or cause).',
        );
      }
      return this.ops.redriveMatching(actor(req), name(b, 'stream'), filter);
    });
  }

  /**
   * Starts a canary re-drive of one failure group in this process and answers its run id at once;
   * its progress is read with GET dead-letters/canary (from any instance: it is kept in Redis).
   * While a run of the same stream and cause is live (on any instance), answers 409 with its `runId`.
   */
  @Post('dead-letters/canary')
  @ConsoleWrite('dlq.canary.start')
  canary(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(async () => {
      const options = {
        cause: name(b, 'cause'),
        ...(['canary', 'ratePerSec', 'maxFailureRatio', 'settleMs'] as const).reduce(
          (picked, key) => (b?.[key] === undefined ? picked : { ...picked, [key]: b[key] }),
          {},
        ),
      };
      const { runId, done } = await this.ops.canaries.start(actor(req), name(b, 'stream'), options).catch((err: unknown) => {
        if (!(err instanceof CanaryRunningError)) throw err;
        throw new ConflictException({ statusCode: 409, error: 'Conflict', message: err.message, runId: err.runId });
      });
      // Its end (or failure) is in the run's state and the audit; nobody awaits it here.
      done.catch(() => undefined);
      return { runId };
    });
  }

  @Get('dead-letters/canary')
  canaryProgress(@Query() q: Input) {
    return answer(async () => {
      const run = name(q, 'run');
      const progress = await this.ops.canaries.progress(run);
      // Runs are kept beside the audit stream, which other apps' consoles may share: theirs are not ours to show.
      if (!(await this.ops.servedStreamNames()).has(progress.stream))
        throw new OperationError('not-found', OPERATIONS_MESSAGES.noCanaryRun(run));
      return progress;
    });
  }

  @Post('dead-letters/discard')
  @ConsoleWrite('dlq.discard')
  discard(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.discard(actor(req), name(b, 'stream'), id(b)));
  }
}

/**
 * Which dead letters a request is about: reason, the group that parked them, the failure group's
 * fingerprint, and the newest to read (`upTo`, a dry run's, so that the re-drive covers what it counted).
 */
function deadLetterFilter(input: Input) {
  return {
    ...{ reason: optionalName(input, 'reason'), group: optionalName(input, 'group'), cause: optionalName(input, 'cause') },
    upTo: optionalId(input, 'upTo'),
  };
}
