import type { WritePacket } from '@nestjs/microservices';
import { CLIENT_MESSAGES } from './client.messages.js';

type ReplyCallback = (packet: WritePacket) => void;

interface PendingRequest {
  stream: string;
  callback: ReplyCallback;
  timer: NodeJS.Timeout;
}

/**
 * Requests waiting for their replies, by correlation id. Every entry leaves the map on its last
 * reply, its error, its timeout, the caller's unsubscribe or close(): nothing piles up.
 */
export class PendingRequests {
  private readonly requests = new Map<string, PendingRequest>();

  constructor(
    private readonly timeoutMs: number,
    private readonly timeoutError: (stream: string) => Error,
  ) {}

  /** Requests waiting for a reply now. */
  get size(): number {
    return this.requests.size;
  }

  /** True while the request waits for a reply. */
  has(correlationId: string): boolean {
    return this.requests.has(correlationId);
  }

  /** Registers a request to `stream`; after the timeout it is removed and failed. */
  add(correlationId: string, stream: string, callback: ReplyCallback): void {
    const timer = setTimeout(() => this.fail(correlationId, this.timeoutError(stream)), this.timeoutMs);
    this.requests.set(correlationId, { stream, callback, timer });
  }

  /** Hands a reply to its request; false when no request waits for it (it timed out or was cancelled). */
  deliver(correlationId: string, packet: WritePacket): boolean {
    const request = this.requests.get(correlationId);
    if (!request) return false;
    // Nest's observer completes on an error as well: both end the request.
    if (packet.isDisposed || packet.err !== undefined) this.remove(correlationId);
    // Nest's observer ignores a falsy error, which would leave the caller waiting for ever.
    request.callback(packet.err !== undefined ? { err: packet.err || new Error(CLIENT_MESSAGES.emptyError) } : packet);
    return true;
  }

  /** Ends one request with an error. */
  fail(correlationId: string, err: unknown): void {
    const request = this.requests.get(correlationId);
    if (!request) return;
    this.remove(correlationId);
    request.callback({ err });
  }

  /** Forgets a request without calling it back (the caller unsubscribed or it already ended). */
  remove(correlationId: string): void {
    const request = this.requests.get(correlationId);
    if (!request) return;
    clearTimeout(request.timer);
    this.requests.delete(correlationId);
  }

  /** Ends every request with an error made from its stream. */
  failAll(errorFor: (stream: string) => unknown): void {
    for (const [correlationId, { stream }] of [...this.requests]) this.fail(correlationId, errorFor(stream));
  }
}
