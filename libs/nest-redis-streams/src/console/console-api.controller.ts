import { Body, Controller, Get, Inject, Query, Req, UseGuards, UseInterceptors } from '@nestjs/common';
import { groupHistoryKey } from '../keys/index.js';
import type { FieldPairs } from '../operations/entries.js';
import type { StreamOperations } from '../operations/stream-operations.js';
import { ConsoleAccessGuard, type ConsoleRequest } from './console-access.guard.js';
import { ConsoleHeadersInterceptor } from './console-headers.interceptor.js';
import {
  answer,
  count,
  cursorTarget,
  grafanaLink,
  id,
  type Input,
  name,
  optionalId,
  optionalFlag,
  optionalName,
  optionalPartitions,
  optionalTime,
} from './console-http.js';
import type { RedisStreamsConsoleOptions } from './console-options.interface.js';
import { actor, redactBlockedKey, redactFields } from './console-redaction.js';
import { ConsoleSession, ConsoleWrite } from './console-write.decorator.js';
import { CONSOLE_DEFAULTS, CONSOLE_MESSAGES, CONSOLE_OPERATIONS, CONSOLE_OPTIONS } from './console.constants.js';
import { CsrfToken } from './csrf-token.js';
import { ConsoleConnection } from './console-connection.js';
import { GroupHistory } from './group-history.js';
import { SharedRead } from './overview-cache.js';
import { Post } from './post.decorator.js';
import { RequestSignal } from './request-signal.decorator.js';

/**
 * The console's JSON API: every view and action of the page, on the shared `StreamOperations`.
 * Every size a client sends is bounded (count, partitions), and the reads that loop over Redis
 * stop when the client leaves (`RequestSignal`).
 */
@Controller('api')
@UseGuards(ConsoleAccessGuard)
@UseInterceptors(ConsoleHeadersInterceptor)
export class ConsoleApiController {
  private readonly overviewCache: SharedRead<Awaited<ReturnType<StreamOperations['overview']>>>;
  private readonly history: GroupHistory;
  private readonly grafanaUrl: string | null;
  private readonly historyCache: SharedRead<Awaited<ReturnType<GroupHistory['read']>>>;

  constructor(
    @Inject(CONSOLE_OPERATIONS) private readonly ops: StreamOperations,
    @Inject(CONSOLE_OPTIONS) private readonly options: RedisStreamsConsoleOptions,
    private readonly csrf: CsrfToken,
    connection: ConsoleConnection,
  ) {
    this.grafanaUrl = grafanaLink(options.grafanaUrl);
    const sampleMs = options.historySampleMs ?? CONSOLE_DEFAULTS.historySampleMs;
    this.history = new GroupHistory(connection.redis, groupHistoryKey(ops.audit.stream), sampleMs);
    this.overviewCache = new SharedRead(
      async () => {
        const rows = await ops.overview();
        // The charts' history: a sample per period, taken while someone watches. A failed sample
        // (e.g. an ACL without XADD on the key) leaves a gap in the charts, not the overview.
        void this.history.sample(rows).catch(() => undefined);
        return rows;
      },
      Math.max(250, (options.refreshMs ?? CONSOLE_DEFAULTS.refreshMs) / 2),
    );
    this.historyCache = new SharedRead(() => this.history.read(), Math.min(sampleMs, 5_000));
  }

  /**
   * What the page needs to know about itself: may this caller write (the guard was asked, as for a
   * write) and if not why, its CSRF token (only to a caller who may write), who it is.
   */
  @Get('session')
  @ConsoleSession()
  session(@Req() req: ConsoleRequest) {
    const reason = req.nrsConsoleWrite?.reason ?? CONSOLE_MESSAGES.noGuard;
    const writable = req.nrsConsoleWrite?.allowed === true;
    return {
      writable,
      reason: writable ? null : reason,
      readOnlyStreams: (this.options.streams ?? []).flatMap((s) => (typeof s === 'object' && s.readOnly ? [s.stream] : [])),
      csrfHeader: CONSOLE_DEFAULTS.csrfHeader,
      csrfToken: writable ? this.csrf.value : null,
      actor: req.nrsConsoleActor ?? 'anonymous',
      refreshMs: this.options.refreshMs ?? CONSOLE_DEFAULTS.refreshMs,
      grafanaUrl: this.grafanaUrl,
    };
  }

  @Get('overview')
  overview() {
    return answer(() => this.overviewCache.get());
  }

  /** What the server's nodes offer (XREADGROUP CLAIM, XADD IDMP, ACKED trimming…) and who is below the patch floor. */
  @Get('capabilities')
  capabilities() {
    return answer(() => this.ops.capabilities());
  }

  /**
   * Every served group's figures over the last samples (about an hour), oldest first, for the
   * charts. The history key is shared by every console on the audit stream: only the streams this
   * one serves are answered.
   */
  @Get('history')
  groupHistory() {
    return answer(async () => {
      const [series, served] = await Promise.all([this.historyCache.get(), this.ops.servedStreamNames()]);
      return {
        sampleMs: this.options.historySampleMs ?? CONSOLE_DEFAULTS.historySampleMs,
        groups: series.filter((s) => served.has(s.stream)),
      };
    });
  }

  @Get('pending')
  pending(@Query() q: Input) {
    return answer(async () => {
      const [stream, group] = [name(q, 'stream'), name(q, 'group')];
      const page = await this.ops.pending(stream, group, {
        after: optionalId(q, 'after'),
        from: optionalTime(q, 'from'),
        to: optionalTime(q, 'to'),
        consumer: optionalName(q, 'consumer'),
        count: count(q),
      });
      return { ...page, items: page.items.map((e) => ({ ...e, fields: this.redact(e.fields, stream, e.id, group) })) };
    });
  }

  @Get('entries')
  entries(@Query() q: Input) {
    return answer(async () => {
      const stream = name(q, 'stream');
      const page = await this.ops.entries(stream, {
        after: optionalId(q, 'after'),
        from: optionalTime(q, 'from'),
        to: optionalTime(q, 'to'),
        count: count(q),
      });
      return { ...page, items: page.items.map((e) => ({ ...e, fields: this.redact(e.fields, stream, e.id) })) };
    });
  }

  @Get('entry')
  entry(@Query() q: Input) {
    return answer(async () => {
      const [stream, group, entryId] = [name(q, 'stream'), optionalName(q, 'group'), id(q)];
      const entry = await this.ops.entry(stream, entryId, group);
      return { entry: entry && { ...entry, fields: this.redact(entry.fields, stream, entry.id, group) } };
    });
  }

  /**
   * Entries of a stream, a group's PEL (`group`) or the dead letters (`deadLetters=true`) that
   * match `where`, within the window and budget asked for (bounded by the search's maximums). The
   * condition is matched against the redacted fields, so it cannot find what the page would hide.
   */
  @Get('search')
  search(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(async () => {
      const stream = name(q, 'stream');
      const text = (key: string) => (typeof q?.[key] === 'string' && q[key] !== '' ? (q[key] as string) : undefined);
      return this.ops.search(stream, {
        where: text('where'),
        group: optionalName(q, 'group'),
        deadLetters: optionalFlag(q, 'deadLetters'),
        partitions: optionalPartitions(q),
        since: text('since'),
        until: text('until'),
        newest: optionalFlag(q, 'newest') || undefined,
        limit: text('limit'),
        budgetEntries: text('budgetEntries'),
        budgetMs: text('budgetMs'),
        cursor: text('cursor'),
        redact: this.options.redact,
        signal,
      });
    }, signal);
  }

  /** An entry's history: lineage, parks, deliveries and outcome per group, as far as Redis still tells. */
  @Get('entry-history')
  entryHistory(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(() => this.ops.entryHistory(name(q, 'stream'), id(q), signal), signal);
  }

  @Get('consumers')
  consumers(@Query() q: Input) {
    return answer(() => this.ops.consumers(name(q, 'stream'), name(q, 'group')));
  }

  /** Exclusive ownership of the group (members, owner, generation and lease per partition); null when shared. */
  @Get('ownership')
  ownership(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(async () => {
      const [stream, group, partitions] = [name(q, 'stream'), name(q, 'group'), optionalPartitions(q)];
      return { ownership: await this.ops.ownership(stream, group, partitions, signal) };
    }, signal);
  }

  /** The stream's schedule (delayed entries): count, next due, oldest overdue and the first entries, redacted. */
  @Get('scheduled')
  scheduled(@Query() q: Input) {
    return answer(async () => {
      const stream = name(q, 'stream');
      const summary = await this.ops.scheduled(stream, count(q));
      const entries = summary.entries.map(({ fields, ...rest }) => ({
        ...rest,
        fields: this.redact(pairsOf(fields), stream, rest.member, rest.group ?? undefined),
      }));
      return { ...summary, entries };
    });
  }

  /**
   * The ordering keys `onDeadLetter: 'block-key'` holds back in `group` (or every group), oldest
   * block first; `partitions` reads each partition stream. Keys go through `redact`.
   */
  @Get('blocked-keys')
  blockedKeys(@Query() q: Input) {
    return answer(async () => {
      const query = { group: optionalName(q, 'group'), partitions: optionalPartitions(q) };
      const items = await this.ops.blockedKeys(name(q, 'stream'), query);
      return { items: items.map((b) => redactBlockedKey(this.options, b)) };
    });
  }

  @Get('cursor-preview')
  cursorPreview(@Query() q: Input) {
    return answer(() => this.ops.previewCursor(name(q, 'stream'), name(q, 'group'), cursorTarget(q)));
  }

  /** The writes about served streams, newest first; `refusals=true`: the refused requests, kept apart. */
  @Get('audit')
  audit(@Query() q: Input, @RequestSignal() signal: AbortSignal) {
    return answer(() => this.ops.auditTrail(count(q), optionalId(q, 'before'), optionalFlag(q, 'refusals'), signal), signal);
  }

  @Post('ack')
  @ConsoleWrite('ack')
  ack(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.ack(actor(req), name(b, 'stream'), name(b, 'group'), id(b)));
  }

  @Post('claim')
  @ConsoleWrite('claim')
  claim(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.claim(actor(req), name(b, 'stream'), name(b, 'group'), id(b), name(b, 'consumer')));
  }

  @Post('park')
  @ConsoleWrite('park')
  park(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.park(actor(req), name(b, 'stream'), name(b, 'group'), id(b)));
  }

  @Post('scheduled/cancel')
  @ConsoleWrite('schedule.cancel')
  cancelScheduled(@Body() b: Input, @Req() req: ConsoleRequest) {
    // `eventId`: what this endpoint took before members were per group (a delayed emit's event id).
    const member = () => name(b, b?.member === undefined && b?.eventId !== undefined ? 'eventId' : 'member');
    return answer(() => this.ops.cancelScheduled(actor(req), name(b, 'stream'), member()));
  }

  @Post('cursor')
  @ConsoleWrite('setid')
  cursor(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.setCursor(actor(req), name(b, 'stream'), name(b, 'group'), cursorTarget(b), b?.force === true));
  }

  @Post('consumers/delete')
  @ConsoleWrite('consumer.delete')
  deleteConsumer(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.deleteConsumer(actor(req), name(b, 'stream'), name(b, 'group'), name(b, 'consumer')));
  }

  @Post('consumers/hand-over')
  @ConsoleWrite('consumer.hand-over')
  handOver(@Body() b: Input, @Req() req: ConsoleRequest) {
    return answer(() => this.ops.handOver(actor(req), name(b, 'stream'), name(b, 'group'), name(b, 'from'), name(b, 'to')));
  }

  private redact(fields: FieldPairs | null, stream: string, entryId: string, group?: string): FieldPairs | null {
    return redactFields(this.options, fields, { stream, group, id: entryId });
  }
}

/** A flat field list (name, value...) as pairs, the shape of the other views' fields. */
function pairsOf(fields: string[]): FieldPairs {
  const pairs: FieldPairs = [];
  for (let i = 0; i + 1 < fields.length; i += 2) pairs.push([fields[i], fields[i + 1]]);
  return pairs;
}
