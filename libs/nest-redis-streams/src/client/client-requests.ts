import { randomUUID } from 'node:crypto';
import type { Logger } from '@nestjs/common';
import type { ReadPacket, WritePacket } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import type { ReplyPacket } from '../codec/reply.js';
import { defaultConsumerName } from '../constants.js';
import { replyStreamName } from '../keys/index.js';
import type { ClientConnections } from './client-connections.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { ConsumerGroupCheck } from './consumer-group-check.js';
import { ClientClosedError } from './errors/client-closed.error.js';
import { RequestTimeoutError } from './errors/request-timeout.error.js';
import type { EntryWriter } from './entry-writer.js';
import { PendingRequests } from './pending-requests.js';
import { ReplyReader } from './reply-reader.js';
import type { ResolvedClientOptions } from './resolve-client-options.js';

/**
 * The client's requests (`send()`): each registered until its last reply, written with this
 * client's reply stream, which is created and read (on a connection of its own) on the first one.
 */
export class ClientRequests {
  private readonly pending: PendingRequests;
  private readonly groups: ConsumerGroupCheck;
  private replies: Promise<ReplyReader> | null = null;

  constructor(
    private readonly options: ResolvedClientOptions,
    private readonly connect: () => Promise<Redis>,
    private readonly connections: ClientConnections,
    private readonly writer: EntryWriter,
    private readonly logger: Logger,
  ) {
    const { requestTimeoutMs } = options;
    this.pending = new PendingRequests(
      requestTimeoutMs,
      (stream) => new RequestTimeoutError(CLIENT_MESSAGES.requestTimeout(stream, requestTimeoutMs), stream),
    );
    this.groups = new ConsumerGroupCheck(connect);
  }

  /** Requests sent and still waiting for their (last) reply. */
  get size(): number {
    return this.pending.size;
  }

  /** Key of this client's reply stream once a request created it, else null. */
  async replyStream(): Promise<string | null> {
    return this.replies ? (await this.replies).stream : null;
  }

  /** Registers a request to `stream`, then writes it; returns what cancels it. */
  publish(packet: ReadPacket, stream: string, callback: (packet: WritePacket) => void): () => void {
    const correlationId = randomUUID();
    // The moment this request's timeout fires: past it the caller has been told it failed, so a
    // server that reads it later (it was down, or backlogged) must not run it.
    const deadline = Date.now() + this.options.requestTimeoutMs;
    // Registered before the write: the reply can be read before the XADD's own reply arrives.
    this.pending.add(correlationId, stream, callback);
    this.request(packet, stream, correlationId, deadline).catch((err: unknown) =>
      this.pending.fail(correlationId, this.writer.explain(err, stream)),
    );
    return () => this.pending.remove(correlationId);
  }

  /** Fails every waiting request: the client is closing. */
  failAll(): void {
    this.pending.failAll((stream) => new ClientClosedError(CLIENT_MESSAGES.closedBeforeReply(stream)));
  }

  /** Stops the reply reader (one still starting first) and deletes the reply stream. */
  async stopReplies(): Promise<void> {
    const replies = await this.replies?.catch(() => null);
    if (!replies) return;
    await replies
      .stop()
      .catch((err: Error) => this.logger.warn(CLIENT_MESSAGES.replyStreamNotDeleted(replies.stream, err.message)));
  }

  /** Forgets the reply stream and the streams known to be read: the client closed. */
  reset(): void {
    this.groups.clear();
    this.replies = null;
  }

  private async request(packet: ReadPacket, stream: string, correlationId: string, deadline: number): Promise<void> {
    const replies = await this.replyReader();
    await this.groups.require(stream);
    // The caller may have given up (unsubscribed, timed out) meanwhile: then nothing is written.
    if (!this.pending.has(correlationId)) return;
    await this.writer.write(packet, stream, { replyTo: replies.stream, correlationId, deadline });
  }

  private replyReader(): Promise<ReplyReader> {
    this.replies ??= this.startReplies().catch((err: unknown) => {
      this.replies = null;
      throw err;
    });
    return this.replies;
  }

  private async startReplies(): Promise<ReplyReader> {
    const commands = await this.connect();
    // XREAD BLOCK holds its connection, so replies get their own; it waits out outages for ever.
    const reader = await this.connections.open('replies', { maxRetriesPerRequest: null });
    const stream = replyStreamName(this.options.keyPrefix, defaultConsumerName(), randomUUID());
    const replies = new ReplyReader(
      stream,
      commands,
      reader,
      this.options.deserializer,
      (packet) => this.onReply(packet),
      this.logger,
    );
    try {
      await replies.start();
    } catch (err) {
      this.connections.drop(reader);
      throw err;
    }
    return replies;
  }

  private onReply({ correlationId, ...packet }: ReplyPacket): void {
    if (!this.pending.deliver(correlationId, packet)) {
      this.logger.debug(`Reply for request ${correlationId} arrived after it ended (timed out or cancelled); dropped.`);
    }
  }
}
