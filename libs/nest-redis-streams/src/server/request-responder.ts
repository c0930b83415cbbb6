import type { Logger } from '@nestjs/common';
import type { BaseRpcContext, WritePacket } from '@nestjs/microservices';
import { type Observable, throwError } from 'rxjs';
import type { DecodedEntry } from '../codec/envelope.js';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import type { PartitionFence } from '../ownership/partition-fence.js';
import type { AnswerPacket, ReplyWriter } from './reply-writer.js';
import { SERVER_MESSAGES } from './server.messages.js';
import type { StreamSubscription } from '../consumer/index.js';

type Respond = (packet: WritePacket) => Promise<unknown> | void;

/** What answering needs of Nest's Server (`handleRequest` is protected there, and Nest 12's only). */
export interface NestResponses {
  /** Nest 12 runs a request between its processing hooks (tracing); undefined on Nest 11. */
  handleRequest?: (ctx: BaseRpcContext, produce: () => Promise<Observable<unknown>>, respond: Respond) => void;
  send(response$: Observable<unknown>, respond: Respond): unknown;
  transformToObservable(result: unknown): Observable<unknown>;
}

/**
 * Request/response: runs a `@MessagePattern` handler and writes its replies to the caller's own
 * reply stream. The request is settled (and then acked) after its last packet, written or not.
 */
export class RequestResponder {
  constructor(
    private readonly nest: NestResponses,
    private readonly replies: ReplyWriter,
    private readonly logger: Logger,
  ) {}

  /** Under exclusive ownership `fence` is the request's partition lease: a lost one writes no reply. */
  answer(sub: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext, fence?: PartitionFence): Promise<void> {
    const replyTo = entry.replyTo!;
    const correlationId = entry.correlationId!;
    return new Promise<void>((resolve) => {
      const produce = async () => {
        try {
          return this.nest.transformToObservable(await sub.handler(entry.data, ctx));
        } catch (err) {
          return throwError(() => err);
        }
      };
      const reply = (packet: AnswerPacket) =>
        this.replies
          .write(replyTo, correlationId, packet, fence)
          .catch((err: Error) => this.logger.error(SERVER_MESSAGES.replyWriteFailed(replyTo, err.message)))
          .then(() => {
            if (packet.isDisposed) resolve();
          });
      // Nest 11 has no handleRequest: its send() alone streams the replies.
      if (this.nest.handleRequest) this.nest.handleRequest(ctx, produce, reply);
      else void produce().then((response$) => this.nest.send(response$, reply));
    });
  }
}
