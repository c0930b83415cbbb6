import { claimEpochKey } from '../keys/index.js';
import type { StreamEntryReply } from '../redis/replies.js';
import type { PartitionFence } from '../ownership/partition-fence.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';

/**
 * What a fenced read brought: the new entries (and the stream's last id, to wait from), `refused`
 * when Redis did not accept the generation, `not-held` when none is held.
 */
export type FencedRead = { entries: StreamEntryReply[]; lastId?: string } | 'refused' | 'not-held';

/**
 * The reads of a partition under exclusive ownership. Every call carries the fence (owner hash,
 * member, generation) into a script that checks it before touching the group, so a stale owner
 * can neither take entries into its PEL nor claim them. It returns what it read; the consumer
 * decides what to run.
 */
export class PartitionReader {
  constructor(
    private readonly rt: Pick<ConsumerRuntime, 'commands' | 'reader' | 'blockMs' | 'consumer'>,
    private readonly stream: string,
    private readonly group: string,
    private readonly fence: PartitionFence,
  ) {}

  /**
   * After a grant: every pending entry of the partition (a previous owner's, handed back or left
   * by a crash) becomes this consumer's (XAUTOCLAIM … JUSTID: no delivery counted), so the replay
   * that follows runs them in stream order before anything new is read. Ids whose payload was
   * trimmed away go to `onTrimmed` (tombstones). Resolves false when no generation is held or
   * Redis refused it (the coordinator finds out why), true once the whole PEL was taken over.
   */
  async takeOverPending(onTrimmed: (ids: string[]) => Promise<void>): Promise<boolean> {
    let cursor = '0-0';
    do {
      const { generation, ownerKey, member } = this.fence;
      if (generation === null) return false;
      const { stream, group } = this;
      const epochKey = claimEpochKey(stream, group);
      const args = [stream, epochKey, ownerKey, member, generation, group, this.rt.consumer] as const;
      const reply = await this.rt.commands.nrsFencedAutoClaim(...args, 0, cursor, 1000, '1');
      if (reply === null) return false;
      cursor = reply[0];
      if ((reply[2] ?? []).length > 0) await onTrimmed(reply[2]!);
    } while (cursor !== '0-0');
    return true;
  }

  /**
   * Reads up to `room` new entries in a script that checks the fence first (an XREADGROUP from a
   * stale owner would take entries into its PEL).
   */
  async read(room: number): Promise<FencedRead> {
    const fenced = this.fenceArgs();
    if (fenced === null) return 'not-held';
    const reply = await this.rt.commands.nrsFencedRead(...fenced, room);
    if (reply === null) return 'refused';
    const [entries, lastId] = reply;
    return { entries, lastId };
  }

  /** Waits for new entries with a plain XREAD BLOCK, which takes nothing from the group. */
  async waitForNew(lastId: string | undefined): Promise<void> {
    await this.rt.reader.xread('BLOCK', this.rt.blockMs, 'STREAMS', this.stream, lastId ?? '$');
  }

  /** The leading arguments of every fenced script, or null while no generation is held. */
  private fenceArgs(): [string, string, string, string, string, string] | null {
    const { generation, ownerKey, member } = this.fence;
    return generation === null ? null : [this.stream, ownerKey, member, generation, this.group, this.rt.consumer];
  }
}
