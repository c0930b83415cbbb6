import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { type ReplyPacket, decodeReply } from '../codec/reply.js';
import type { PayloadDeserializer } from '../interfaces/payload-codec.interface.js';
import { isConnectionClosedError } from '../redis/errors/reply-errors.js';
import { type StreamEntryReply, type XReadGroupReply, takeRows } from '../redis/replies.js';
import { nextStreamId } from '../keys/index.js';
import { REPLY_STREAM } from './client.constants.js';
import { CLIENT_MESSAGES } from './client.messages.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * This client's reply stream: created empty (so the server's `XADD ... NOMKSTREAM` finds it), read
 * with XREAD on a dedicated blocking connection, every reply handed to `onReply` and then deleted,
 * deleted itself on stop. It carries a TTL renewed while the client lives, so the stream of a
 * client that died without close() disappears on its own.
 */
export class ReplyReader {
  private lastId = '0-0';
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private renewTimer: NodeJS.Timeout | null = null;

  constructor(
    /** Stream key replies are written to. */
    readonly stream: string,
    private readonly commands: Redis,
    private readonly reader: Redis,
    private readonly deserializer: PayloadDeserializer,
    private readonly onReply: (packet: ReplyPacket) => void,
    private readonly logger: Logger,
  ) {}

  /** Creates the stream and starts reading it. */
  async start(): Promise<void> {
    await this.create();
    this.loop = this.readLoop();
    this.renewTimer = setInterval(() => {
      this.renew().catch((err: Error) => this.logger.warn(CLIENT_MESSAGES.replyRenewFailed(this.stream, err.message)));
    }, REPLY_STREAM.ttlMs / 3);
    this.renewTimer.unref();
  }

  /** Stops reading (interrupting the blocking read) and deletes the stream. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.reader.disconnect();
    await this.loop;
    await this.commands.del(this.stream);
  }

  /** An empty stream exists after XADD + XTRIM MAXLEN 0; its last id is where reading starts. */
  private async create(): Promise<void> {
    const results = await this.commands
      .multi()
      .xadd(this.stream, '*', 'created', String(Date.now()))
      .xtrim(this.stream, 'MAXLEN', 0)
      .pexpire(this.stream, REPLY_STREAM.ttlMs)
      .exec();
    const [err, id] = results?.[0] ?? [new Error('MULTI was aborted.')];
    if (err) throw err;
    this.lastId = id as string;
  }

  private async renew(): Promise<void> {
    if (this.stopping) return;
    if ((await this.commands.pexpire(this.stream, REPLY_STREAM.ttlMs)) === 1) return;
    this.logger.warn(CLIENT_MESSAGES.replyStreamLost(this.stream));
    await this.create();
  }

  private async readLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        const reply = (await this.reader.xread(
          'COUNT',
          REPLY_STREAM.readCount,
          'BLOCK',
          REPLY_STREAM.blockMs,
          'STREAMS',
          this.stream,
          this.lastId,
        )) as XReadGroupReply;
        failures = 0;
        const entries = reply?.[0]?.[1];
        if (!entries || entries.length === 0) continue;
        this.lastId = entries[entries.length - 1][0];
        takeRows(entries, this.route);
        this.forget(this.lastId);
      } catch (err) {
        if (this.stopping && isConnectionClosedError(err)) break;
        failures++;
        const delay = Math.min(100 * 2 ** Math.min(failures - 1, 6), 5_000);
        this.logger.error(CLIENT_MESSAGES.replyReadFailed(this.stream, (err as Error).message, delay));
        await sleep(delay);
      }
    }
  }

  private readonly route = ([id, fields]: StreamEntryReply): void => {
    if (!fields) return;
    let packet: ReplyPacket;
    try {
      packet = decodeReply(fields, this.deserializer);
    } catch (err) {
      this.logger.error(CLIENT_MESSAGES.replyUndecodable(this.stream, id, (err as Error).message));
      return;
    }
    this.onReply(packet);
  };

  /** Replies are read once: everything up to the last one read goes (exact MINID, a few entries). */
  private forget(lastReadId: string): void {
    this.commands
      .xtrim(this.stream, 'MINID', nextStreamId(lastReadId))
      .catch((err: Error) => this.logger.warn(CLIENT_MESSAGES.replyCleanupFailed(this.stream, err.message)));
  }
}
