import type { Redis } from 'ioredis';
import { DeadLetterService, type DeadLetter, type DeadLetterTally } from '../dead-letter/dead-letter.service.js';
import { auditRefusalStream, eventMember, partitionStream, probeKeyNear } from '../keys/index.js';
import { type CapabilitySummary, probeCapabilities, summarizeCapabilities } from '../redis/capabilities.js';
import { type ScriptedRedis, withStreamScripts } from '../redis/scripts.js';
import type { TrimTarget } from '../trim/retention-options.interface.js';
import { type SafeTrimResult, trimSafely } from '../trim/trim-safely.js';
import { type AuditIntent, AuditLog, type AuditRecord } from './audit-log.js';
import { auditedWrite } from './audited-write.js';
import { type BlockedKey, type BlockedKeysQuery, listBlockedKeys } from './blocked-keys.js';
import { CanaryRedrives } from './canary-redrive.js';
import { type ConsumerInfo, deleteConsumer, handOver, listConsumers } from './consumers.js';
import {
  checkFilter,
  type DeadLetterFilter,
  type FilteredPage,
  type RedriveReport,
  listDeadLetters,
  redriveMatching,
  redriveOne,
} from './dead-letters.js';
import { type EntryHistory, readEntryHistory } from './entry-history.js';
import { readServedAuditTrail } from './served-audit-trail.js';
import { type FailureGroups, readFailureGroups, readFailureGroupsAcross } from './failure-groups.js';
import { checkKeyField, previewRedrive, type RedrivePreview } from './redrive-preview.js';
import { type Page, type PendingEntry, type StreamEntry, readEntry, readEntryPage, readPendingPage } from './entries.js';
import { ackEntry, claimEntry, parkEntry } from './entry-actions.js';
import { type BlockedKeyRelease, type DiscardResult, discardOne, releaseKey } from './blocked-key-release.js';
import { type CursorPreview, type CursorTarget, previewGroupCursor, setGroupCursor } from './group-cursor.js';
import { OperationError } from './errors/operation.error.js';
import type { SearchResult } from './search.js';
import { type SearchRequest, searchStreams } from './search-request.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import { type StreamOverview, type StreamSetting, readOverview } from './overview.js';
import { type GroupOwnership, readOwnership } from './ownership.js';
import { type ResolvedOperationsOptions, resolveOperationsOptions } from './resolve-operations-options.js';
import { ServedStreams, explainScheduleWrongType, explainWrongType } from './served-streams.js';
import type { RangeOptions, StreamOperationsOptions } from './stream-operations-options.interface.js';
import { type ScheduleSummary, cancelScheduled, summarizeSchedule } from '../schedule/index.js';

/**
 * The one service behind the console and the CLI: every figure and action on streams, groups,
 * entries and dead letters, each write recorded in the audit stream with who did it and how it
 * went (before it runs: a write the audit stream refuses does not run). Without a configured
 * list it serves only the streams the overview lists (those with consumer groups). Built on the
 * transport's own pieces (`collectStreamStatsBatch`, `DeadLetterService`, `trimSafely`, the
 * ownership scripts), so the console never does anything the transport would not. Redis errors
 * propagate; bad input and refused actions throw `OperationError`.
 */
export class StreamOperations {
  readonly deadLetters: DeadLetterService;
  readonly audit: AuditLog;
  /** Canary re-drives of a failure group (start one, read a run's progress). */
  readonly canaries: CanaryRedrives;
  private readonly scripted: ScriptedRedis;
  private readonly servedStreams: ServedStreams;
  private capabilityProbe: Promise<CapabilitySummary> | null = null;
  private readonly o: ResolvedOperationsOptions;

  constructor(
    private readonly redis: Redis,
    options: StreamOperationsOptions = {},
  ) {
    this.o = resolveOperationsOptions(options);
    this.scripted = withStreamScripts(redis);
    this.deadLetters = new DeadLetterService(redis);
    this.audit = new AuditLog(redis, {
      stream: this.o.auditStream,
      maxLen: this.o.auditMaxLen,
      refusalStream: auditRefusalStream(this.o.auditStream),
      refusalMaxLen: this.o.auditRefusalsMaxLen,
    });
    const served = (stream: string) => this.served(stream);
    this.canaries = new CanaryRedrives({
      redis,
      deadLetters: this.deadLetters,
      audit: this.audit,
      served,
      scanLimit: this.o.scanLimit,
    });
    const auditStreams = [this.audit.stream, this.audit.refusalStream];
    this.servedStreams = new ServedStreams(redis, options.streams, auditStreams, this.o.discoveryTtlMs);
  }

  /**
   * The stream's settings; refused for a stream outside the configured list. Without a list it
   * checks nothing: `served` does.
   */
  setting(stream: string): StreamSetting {
    return this.servedStreams.setting(stream);
  }

  /**
   * The settings of a stream this service serves: one of the configured streams or, without a
   * list, a stream the overview lists (a stream with consumer groups, neither a dead-letter nor an
   * audit stream), checked in Redis on every call. Anything else is refused as not found.
   */
  served(stream: string): Promise<StreamSetting> {
    return this.servedStreams.served(stream);
  }

  /** The configured streams, or every stream found by SCAN (reused for `discoveryTtlMs`). */
  streams(): Promise<StreamSetting[]> {
    return this.servedStreams.list();
  }

  /**
   * The newer stream commands each node offers and each node's patch floor, probed once (next to
   * the first stream, inside a restricted user's key patterns); a failed probe is tried again.
   */
  capabilities(): Promise<CapabilitySummary> {
    this.capabilityProbe ??= this.streams()
      .then((streams) => probeCapabilities(this.redis, streams[0] ? probeKeyNear(streams[0].stream) : undefined))
      .then(summarizeCapabilities);
    this.capabilityProbe.catch(() => (this.capabilityProbe = null));
    return this.capabilityProbe;
  }

  /** Every stream with its groups' figures and badges; streams without groups only when configured. */
  async overview(): Promise<StreamOverview[]> {
    const rows = await readOverview(this.redis, await this.streams(), this.o);
    return this.servedStreams.isConfigured ? rows : rows.filter((r) => r.groups.length > 0);
  }

  pending(stream: string, group: string, range: RangeOptions & { consumer?: string } = {}): Promise<Page<PendingEntry>> {
    return this.read(stream, () =>
      readPendingPage(this.redis, stream, group, { ...range, count: range.count ?? OPERATIONS_DEFAULTS.pageSize }),
    );
  }

  entries(stream: string, range: RangeOptions = {}): Promise<Page<StreamEntry>> {
    return this.read(stream, () =>
      readEntryPage(this.redis, stream, { ...range, count: range.count ?? OPERATIONS_DEFAULTS.pageSize }),
    );
  }

  entry(stream: string, id: string, group?: string): Promise<StreamEntry | null> {
    return this.read(stream, () => readEntry(this.redis, stream, id, group));
  }

  /**
   * The entries of a stream, of a group's PEL (`group`) or of the dead-letter stream (`deadLetters`)
   * that match a condition, newest or oldest first, within a time window and a scan budget; the
   * answer says how far it got and hands back a cursor to go on (docs/search.md). A read: allowed
   * on read-only streams too.
   */
  search(stream: string, request: SearchRequest = {}): Promise<SearchResult> {
    return searchStreams(this.redis, (key) => this.served(key), stream, request);
  }

  consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    return this.read(stream, () => listConsumers(this.redis, stream, group, this.o.activeConsumerMs));
  }

  /**
   * Exclusive ownership of the logical stream of `stream` (itself or one of its partition streams)
   * in `group`: members, each partition's owner, generation and lease; null under shared
   * consumption. Without `partitions`, the owned partitions are found by probing (see readOwnership);
   * either way at most `OPERATIONS_DEFAULTS.maxPartitions`, and `signal` stops the probe. The
   * logical stream is served when its partition 0 is.
   */
  async ownership(stream: string, group: string, partitions?: number, signal?: AbortSignal): Promise<GroupOwnership | null> {
    await this.served(stream).catch(async (err: unknown) => {
      if (!(err instanceof OperationError)) throw err;
      await this.served(partitionStream(stream, 0)).catch(() => Promise.reject(err));
    });
    return readOwnership(this.redis, stream, group, partitions, signal);
  }

  /** A page of the stream's dead letters matching `filter`; `signal` (the request ended) stops the scan. */
  async listDeadLetters(
    stream: string,
    filter: DeadLetterFilter = {},
    page: { after?: string; count?: number } = {},
    signal?: AbortSignal,
  ): Promise<FilteredPage> {
    checkFilter(filter);
    return this.read(stream, ({ deadLetterStream }) =>
      listDeadLetters(this.deadLetters, deadLetterStream, filter, {
        after: page.after,
        count: page.count ?? OPERATIONS_DEFAULTS.pageSize,
        scanLimit: this.o.scanLimit,
        signal,
      }),
    );
  }

  /** The stream's dead letters grouped by cause, from at most `scanLimit` records (oldest first). */
  failureGroups(stream: string, signal?: AbortSignal): Promise<FailureGroups> {
    return this.read(stream, ({ deadLetterStream }) =>
      readFailureGroups(this.deadLetters, stream, deadLetterStream, { scanLimit: this.o.scanLimit, signal }),
    );
  }

  /**
   * The failure groups of every served stream merged by fingerprint (without a configured list, the
   * streams with consumer groups); each stream read within `scanLimit`.
   */
  async failureGroupsAcross(signal?: AbortSignal): Promise<FailureGroups> {
    const streams = (await this.servedStreams.listServed()).map((s) => s.stream);
    return readFailureGroupsAcross(streams, (stream) => this.failureGroups(stream, signal));
  }

  /** A dry run of `redriveMatching`: what it would re-drive, with keys read from `keyField` of the payload. */
  async previewRedrive(
    stream: string,
    filter: DeadLetterFilter,
    keyField?: string,
    signal?: AbortSignal,
  ): Promise<RedrivePreview> {
    checkFilter(filter);
    checkKeyField(keyField);
    return this.read(stream, ({ deadLetterStream }) =>
      previewRedrive(this.deadLetters, deadLetterStream, filter, { scanLimit: this.o.scanLimit, keyField, signal }),
    );
  }

  /**
   * What happened to an entry and the whole re-drive chain it belongs to (asked by any of its
   * ids): first id, parks, re-drives, and where its newest entry stands in its groups. `signal`
   * (the request ended) stops the reads between pages.
   */
  entryHistory(stream: string, id: string, signal?: AbortSignal): Promise<EntryHistory> {
    return this.read(stream, ({ deadLetterStream }) =>
      readEntryHistory(this.redis, stream, deadLetterStream, id, this.o.scanLimit, signal),
    );
  }

  deadLetter(stream: string, id: string): Promise<DeadLetter | null> {
    return this.read(stream, ({ deadLetterStream }) => this.deadLetters.inspect(deadLetterStream, id));
  }

  /** The stream's dead letters counted by reason and group (at most `scanLimit`); `signal` stops the count. */
  tallyDeadLetters(stream: string, signal?: AbortSignal): Promise<DeadLetterTally> {
    return this.read(stream, ({ deadLetterStream }) =>
      this.deadLetters.tally(deadLetterStream, { limit: this.o.scanLimit, signal }),
    );
  }

  /**
   * The stream's schedule (delayed emits, long RetryLaters): how many entries wait, when the next
   * is due, how long the first is overdue (a figure that grows when no server runs the mover), and
   * the first `limit` entries by due time.
   */
  scheduled(stream: string, limit: number = OPERATIONS_DEFAULTS.pageSize): Promise<ScheduleSummary> {
    return this.read(stream, () =>
      summarizeSchedule(this.redis, stream, limit).catch((err) => explainScheduleWrongType(this.redis, err, stream)),
    );
  }

  /**
   * The ordering keys that `onDeadLetter: 'block-key'` holds back, per group: state, the entry they
   * wait for (and its dead letter once parked), how many later entries wait and since when, oldest
   * block first within each stream key and group. `partitions` reads each partition stream.
   */
  blockedKeys(stream: string, query: BlockedKeysQuery = {}): Promise<BlockedKey[]> {
    return listBlockedKeys(this.redis, (key) => this.served(key), stream, query);
  }

  previewCursor(stream: string, group: string, target: CursorTarget): Promise<CursorPreview> {
    return this.read(stream, () =>
      previewGroupCursor(this.redis, stream, group, target, {
        limit: this.o.scanLimit,
        activeConsumerMs: this.o.activeConsumerMs,
      }),
    );
  }

  /**
   * The newest audit records first: the writes, or with `refusals` the refused requests; only those
   * about a stream this service serves (or about none), read through at most `scanLimit` records
   * (an audit stream may be shared with other apps). `signal` stops the read between pages.
   */
  async auditTrail(
    count = OPERATIONS_DEFAULTS.pageSize,
    before?: string,
    refusals = false,
    signal?: AbortSignal,
  ): Promise<{ items: AuditRecord[]; next: string | null }> {
    const served = await this.servedStreamNames();
    const keep = (record: AuditRecord) => record.stream === '' || served.has(record.stream);
    return readServedAuditTrail(this.audit, keep, { count, before, refusals, scanLimit: this.o.scanLimit, signal });
  }

  /**
   * The names of the streams this service serves, as the overview lists them: the configured ones,
   * or the discovered streams with consumer groups. What every read that is not asked by stream
   * (charts, audit, failure groups across streams) keeps to.
   */
  async servedStreamNames(): Promise<Set<string>> {
    return new Set((await this.servedStreams.listServed()).map((s) => s.stream));
  }

  // Writes: each one is recorded in the audit stream before it runs, then its outcome; refusals apart.

  ack(actor: string, stream: string, group: string, id: string) {
    return this.audited(actor, 'ack', stream, group, id, {}, ({ deadLetterStream }) =>
      ackEntry(this.redis, { stream, group, deadLetterStream }, id),
    );
  }

  claim(actor: string, stream: string, group: string, id: string, consumer: string) {
    return this.audited(actor, 'claim', stream, group, id, { consumer }, ({ deadLetterStream }) =>
      claimEntry(this.scripted, { stream, group, deadLetterStream }, id, consumer),
    );
  }

  park(actor: string, stream: string, group: string, id: string) {
    return this.audited(actor, 'park', stream, group, id, {}, ({ deadLetterStream }) =>
      parkEntry(this.scripted, { stream, group, deadLetterStream }, id, actor),
    );
  }

  redrive(actor: string, stream: string, id: string) {
    return this.audited(actor, 'dlq.redrive', stream, '', id, {}, ({ deadLetterStream }) =>
      redriveOne(this.deadLetters, deadLetterStream, id),
    );
  }

  redriveMatching(actor: string, stream: string, filter: DeadLetterFilter): Promise<RedriveReport> {
    return this.audited(actor, 'dlq.redrive-matching', stream, filter.group ?? '', '', filter, async ({ deadLetterStream }) => {
      checkFilter(filter);
      const report = await redriveMatching(this.deadLetters, deadLetterStream, filter, this.o.scanLimit);
      const touched = report.redriven.length + report.tombstones + report.failed.length;
      if (filter.cause && touched === 0) {
        throw new OperationError(
          'not-found',
          OPERATIONS_MESSAGES.noSuchCause(deadLetterStream, filter.cause, report.scanned, !report.more),
        );
      }
      return report;
    });
  }

  /** Deletes a dead letter; one that blocks its ordering key (`onDeadLetter: 'block-key'`) releases it. */
  discard(actor: string, stream: string, id: string): Promise<DiscardResult> {
    return this.audited(actor, 'dlq.discard', stream, '', id, {}, ({ deadLetterStream }) =>
      discardOne(this.redis, deadLetterStream, id),
    );
  }

  /**
   * Releases a blocked ordering key (`onDeadLetter: 'block-key'`) of `group`, e.g. after fixing its
   * data by hand: the next held entry runs, or the key is free when none waits. The blocking dead
   * letter, if any, stays: the block no longer waits for it, so discarding it later releases
   * nothing and re-driving it later adds a new entry of the key, held or run like any other.
   * Refused (not found) when the key is not blocked, and (refused) while its blocking entry is
   * still retried or a released entry runs, unless `force` (the next entry then runs beside it).
   */
  releaseBlockedKey(
    actor: string,
    stream: string,
    key: string,
    options: { group: string; force?: boolean },
  ): Promise<BlockedKeyRelease> {
    const force = options.force === true;
    return this.audited(
      actor,
      'blocked-key.release',
      stream,
      options.group,
      key,
      force ? { force } : {},
      ({ deadLetterStream }) => releaseKey(this.redis, { stream, group: options.group, deadLetterStream }, key, force),
    );
  }

  /**
   * Cancels a scheduled entry by its member as `scheduled()` lists it (a delayed emit's event id, a
   * RetryLater copy's `nrs:retry:<entry id>:<group>`), or removes a record set aside; a delayed
   * emit's event id is taken too. Refused (not found) when none waits.
   */
  cancelScheduled(actor: string, stream: string, member: string): Promise<{ cancelled: string }> {
    return this.audited(actor, 'schedule.cancel', stream, '', member, {}, async () => {
      const cancelled = await cancelScheduled(this.redis, stream, [...new Set([member, eventMember(member)])]).catch((err) =>
        explainScheduleWrongType(this.redis, err, stream),
      );
      if (cancelled === null) throw new OperationError('not-found', OPERATIONS_MESSAGES.notScheduled(stream, member));
      return { cancelled };
    });
  }

  setCursor(actor: string, stream: string, group: string, target: CursorTarget, force = false): Promise<CursorPreview> {
    return this.audited(actor, 'setid', stream, group, '', { ...target, force }, () =>
      setGroupCursor(this.scripted, stream, group, target, {
        limit: this.o.scanLimit,
        activeConsumerMs: this.o.activeConsumerMs,
        force,
      }),
    );
  }

  deleteConsumer(actor: string, stream: string, group: string, consumer: string) {
    return this.audited(actor, 'consumer.delete', stream, group, consumer, {}, () =>
      deleteConsumer(this.scripted, stream, group, consumer),
    );
  }

  handOver(actor: string, stream: string, group: string, from: string, to: string) {
    return this.audited(actor, 'consumer.hand-over', stream, group, from, { to }, ({ deadLetterStream }) =>
      handOver(this.scripted, { stream, group, deadLetterStream }, from, to),
    );
  }

  trim(actor: string, stream: string, target: TrimTarget): Promise<SafeTrimResult> {
    return this.audited(actor, 'trim', stream, '', '', target, () => trimSafely(this.redis, stream, target));
  }

  /** A read of a served stream; a key of another type answers not found, naming it. */
  private async read<T>(stream: string, run: (setting: StreamSetting) => Promise<T>): Promise<T> {
    const setting = await this.served(stream);
    return run(setting).catch((err) => explainWrongType(this.redis, err, stream, setting.deadLetterStream));
  }

  /** A write under the audit (see `auditedWrite`); a key of another type is refused, naming it. */
  private audited<T>(
    actor: string,
    action: string,
    stream: string,
    group: string,
    target: string,
    params: object,
    run: (setting: StreamSetting) => Promise<T>,
  ): Promise<T> {
    const intent: AuditIntent = { actor, action, stream, group, target, params: JSON.stringify(params) };
    return auditedWrite(
      this.audit,
      intent,
      () => this.served(stream),
      (setting) => run(setting).catch((err) => explainWrongType(this.redis, err, stream, setting.deadLetterStream)),
    );
  }
}
