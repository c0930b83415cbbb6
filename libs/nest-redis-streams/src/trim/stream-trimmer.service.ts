import { Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { type AckedTrimResult, trimAcked } from './acked-retention.js';
import { type GroupBacklog, groupsAtRisk, readGroupBacklogs } from './group-backlog.js';
import type { TrimTarget } from './retention-options.interface.js';
import { type TrimFeatures, detectTrimFeatures } from './trim-features.js';
import { type SafeTrimResult, trimSafely } from './trim-safely.js';
import { TRIM_MESSAGES } from './trim.messages.js';

/** A connection, or a function that yields one once it is connected (a client that connects lazily). */
export type RedisSource = Redis | (() => Promise<Redis>);

/**
 * Trims streams without deleting entries that consumer groups still need (see `trimSafely`), and
 * checks plain MAXLEN retention against the groups' backlog. Provided by `RedisStreamsModule` on
 * the module's client connection; construct it yourself with any ioredis connection elsewhere.
 */
@Injectable()
export class StreamTrimmer {
  private readonly logger = new Logger(StreamTrimmer.name);
  private features: Promise<TrimFeatures> | null = null;

  constructor(private readonly source: RedisSource) {}

  /** Trims `stream` to `target`, never below what a group has not acknowledged. */
  async trim(stream: string, target: TrimTarget): Promise<SafeTrimResult> {
    const redis = await this.redis();
    return trimSafely(redis, stream, target, { features: await this.detect(redis, stream) });
  }

  /** Removes what every group of `stream` acknowledged, nothing else (see `trimAcked`). */
  async trimAcked(stream: string): Promise<AckedTrimResult> {
    const redis = await this.redis();
    return trimAcked(redis, stream, (await this.detect(redis, stream)).ackedOption);
  }

  /**
   * Warns (naming the stream, MAXLEN and the group's pending and lag) for every group whose backlog
   * is larger than `maxLen`, the situation in which a plain `MAXLEN` trim deletes unprocessed
   * entries. Resolves with those groups.
   */
  async checkMaxLen(stream: string, maxLen: number): Promise<GroupBacklog[]> {
    const atRisk = groupsAtRisk(await readGroupBacklogs(await this.redis(), stream), maxLen);
    for (const group of atRisk) this.logger.warn(TRIM_MESSAGES.maxLenBelowBacklog(stream, maxLen, group));
    return atRisk;
  }

  /** What the server supports for trimming; detected once per trimmer, `stream` is the probe key. */
  async detectFeatures(stream: string): Promise<TrimFeatures> {
    return this.detect(await this.redis(), stream);
  }

  private detect(redis: Redis, stream: string): Promise<TrimFeatures> {
    if (!this.features) {
      this.features = detectTrimFeatures(redis, stream);
      // A failed probe (connection lost) must not stick: the next trim probes again.
      this.features.catch(() => (this.features = null));
    }
    return this.features;
  }

  private redis(): Promise<Redis> {
    return typeof this.source === 'function' ? this.source() : Promise.resolve(this.source);
  }
}
