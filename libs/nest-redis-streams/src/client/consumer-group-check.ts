import type { Redis } from 'ioredis';
import { readGroupBacklogs } from '../trim/group-backlog.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { NoMessageHandlerError } from './errors/no-message-handler.error.js';

/**
 * Requests to a stream that no group reads would wait for their timeout: the server has no
 * handler to say so (it never reads that stream). Checked once per stream, before writing.
 */
export class ConsumerGroupCheck {
  /** Streams known to have a consumer group, so requests to them can be answered. */
  private readonly readStreams = new Set<string>();
  /** The check in flight per stream, shared by the requests that arrive while it runs. */
  private readonly checks = new Map<string, Promise<void>>();

  constructor(private readonly connect: () => Promise<Redis>) {}

  /** Resolves when `stream` has a consumer group; fails with NoMessageHandlerError when it has none. */
  require(stream: string): Promise<void> {
    if (this.readStreams.has(stream)) return Promise.resolve();
    // One check for a burst: 1,000 requests sent at once to a new stream made 1,000 XINFO round
    // trips before the first write, and on a loaded machine the last ones timed out unwritten.
    let check = this.checks.get(stream);
    if (!check) {
      check = this.check(stream).finally(() => this.checks.delete(stream));
      this.checks.set(stream, check);
    }
    return check;
  }

  /** Forgets what was learnt (the client closed: groups may be gone when it connects again). */
  clear(): void {
    this.readStreams.clear();
  }

  private async check(stream: string): Promise<void> {
    const groups = await readGroupBacklogs(await this.connect(), stream);
    if (groups.length === 0) throw new NoMessageHandlerError(CLIENT_MESSAGES.noMessageHandler(stream), stream);
    this.readStreams.add(stream);
  }
}
