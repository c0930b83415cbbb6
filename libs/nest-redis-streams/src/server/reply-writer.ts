import { type ReplyPacket, encodeReply } from '../codec/reply.js';
import type { PayloadSerializer } from '../interfaces/payload-codec.interface.js';
import type { PartitionFence } from '../ownership/partition-fence.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { SERVER_MESSAGES } from './server.messages.js';

/** Upper bound of reply entries kept in a client's reply stream. */
const REPLY_STREAM_MAXLEN = 10_000;

/** One packet of a request's answer as Nest's `send()` produces it (the id is the writer's). */
export type AnswerPacket = Omit<ReplyPacket, 'correlationId'>;

/**
 * Writes the replies of `@MessagePattern` handlers to the caller's reply stream. Under exclusive
 * ownership a reply is written only while the request's partition is owned: an instance that lost
 * it while the handler ran stays silent, and the new owner runs the request again and answers.
 */
export class ReplyWriter {
  constructor(
    private readonly commands: () => ScriptedRedis,
    private readonly cluster: boolean,
    private readonly serializer: PayloadSerializer,
  ) {}

  async write(replyTo: string, correlationId: string, packet: AnswerPacket, fence?: PartitionFence): Promise<void> {
    const fields = encodeReply({ correlationId, ...packet }, this.serializer);
    // NOMKSTREAM: a reply to a client that closed (and deleted its stream) must not re-create it.
    const args = ['NOMKSTREAM', 'MAXLEN', '~', REPLY_STREAM_MAXLEN, '*', ...fields] as const;
    if (fence) await this.writeFenced(fence, replyTo, [...args]);
    else await this.commands().xadd(replyTo, ...args);
  }

  /**
   * On a single node the fence is checked in the XADD's own script; on a cluster the reply stream
   * lives in another slot, so the local lease check is all there is.
   */
  private async writeFenced(fence: PartitionFence, replyTo: string, args: (string | number)[]): Promise<void> {
    const generation = fence.generation;
    const refused = () => new Error(SERVER_MESSAGES.replyFenced(replyTo));
    if (generation === null || !fence.held) throw refused();
    if (this.cluster) {
      await this.commands().xadd(replyTo, ...(args as [string]));
      return;
    }
    const id = await this.commands().nrsReplyFenced(replyTo, fence.ownerKey, fence.member, generation, ...args);
    if (id === null) throw refused();
  }
}
