import type { Redis } from 'ioredis';
import { DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { isDeadLetterStream, scheduleKeysOf } from '../keys/index.js';
import { isCluster } from '../redis/connection.factory.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { StreamSetting } from './overview.js';
import { readStreamGroups, scanStreams } from './stream-discovery.js';
import type { StreamConfig } from './stream-operations-options.interface.js';

/**
 * Which streams the console and the CLI may show and act on: the configured list or, without
 * one, the streams with consumer groups (found by SCAN, reused for `discoveryTtlMs`), never a
 * dead-letter or an audit stream.
 */
export class ServedStreams {
  private readonly configured: Map<string, StreamSetting> | null;
  private discovered: { at: number; streams: Promise<string[]> } | null = null;

  /** @param excluded the audit streams: never served, never discovered */
  constructor(
    private readonly redis: Redis,
    streams: Array<string | StreamConfig> | undefined,
    private readonly excluded: readonly string[],
    private readonly discoveryTtlMs: number,
  ) {
    this.configured = streams ? new Map(streams.map((s) => this.toSetting(s)).map((s) => [s.stream, s])) : null;
  }

  /** True when the operator named the streams (then streams without groups are shown too). */
  get isConfigured(): boolean {
    return this.configured !== null;
  }

  /** See `StreamOperations.setting`. */
  setting(stream: string): StreamSetting {
    if (this.configured) {
      const found = this.configured.get(stream);
      if (!found) throw new OperationError('not-found', `Stream "${stream}" is not one of the configured streams.`);
      return found;
    }
    return this.toSetting(stream);
  }

  /** See `StreamOperations.served`. */
  async served(stream: string): Promise<StreamSetting> {
    if (this.configured) return this.setting(stream);
    const excluded = isDeadLetterStream(stream) || this.excluded.includes(stream);
    if (!excluded) {
      const groups = (await this.redis
        .xinfo('GROUPS', stream)
        .catch((err) => (/no such key/i.test(String(err)) ? [] : explainWrongType(this.redis, err, stream)))) as unknown[];
      if (groups.length > 0) return this.toSetting(stream);
    }
    throw new OperationError('not-found', OPERATIONS_MESSAGES.notServed(stream));
  }

  /** See `StreamOperations.streams`. */
  async list(): Promise<StreamSetting[]> {
    if (this.configured) return [...this.configured.values()];
    const now = Date.now();
    if (!this.discovered || now - this.discovered.at > this.discoveryTtlMs) {
      const streams = scanStreams(this.redis, this.excluded);
      this.discovered = { at: now, streams };
      streams.catch(() => (this.discovered = null));
    }
    return (await this.discovered.streams).map((s) => this.toSetting(s));
  }

  /**
   * The streams `served` accepts, listed: the configured ones, or the discovered streams that have
   * consumer groups. SCAN also finds streams nothing consumes (the handlers' error streams
   * `…:nrs-errors:<group>`): a read across streams would only report them as not served.
   */
  async listServed(): Promise<StreamSetting[]> {
    const all = await this.list();
    if (this.configured) return all;
    const found = await readStreamGroups(
      this.redis,
      all.map((s) => s.stream),
    );
    const consumed = new Set(found.filter((s) => s.groups.length > 0).map((s) => s.stream));
    return all.filter((s) => consumed.has(s.stream));
  }

  private toSetting(config: string | StreamConfig): StreamSetting {
    const c = typeof config === 'string' ? { stream: config } : config;
    return {
      stream: c.stream,
      deadLetterStream: c.deadLetterStream ?? DeadLetterService.streamFor(c.stream, isCluster(this.redis)),
      retention: c.retention,
      readOnly: c.readOnly ?? false,
    };
  }
}

/** A WRONGTYPE refusal names the first of `keys` (the stream, its dead-letter stream) that is not a stream. */
export async function explainWrongType(redis: Redis, err: unknown, ...keys: string[]): Promise<never> {
  if (!(err instanceof Error) || !err.message.startsWith('WRONGTYPE')) throw err;
  for (const key of keys) {
    const type = await redis.type(key).catch(() => 'value of another type');
    if (type !== 'stream' && type !== 'none') throw new OperationError('not-found', OPERATIONS_MESSAGES.notAStream(key, type));
  }
  throw err;
}

/**
 * A WRONGTYPE refusal on `stream`'s schedule names the schedule key that holds another type (a
 * key written by hand or by another program): refused, with the way out.
 */
export async function explainScheduleWrongType(redis: Redis, err: unknown, stream: string): Promise<never> {
  if (!(err instanceof Error) || !err.message.startsWith('WRONGTYPE')) throw err;
  const { due, entries } = scheduleKeysOf(stream);
  for (const [key, expected] of [
    [due, 'zset'],
    [entries, 'hash'],
  ] as const) {
    const type = await redis.type(key).catch(() => 'value of another type');
    if (type !== expected && type !== 'none') {
      throw new OperationError('refused', OPERATIONS_MESSAGES.scheduleKeyType(stream, key, type, expected));
    }
  }
  throw err;
}
