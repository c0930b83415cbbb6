import type { Redis } from 'ioredis';

// The cheap ack without Lua. The ack script (lua/claim-epoch.ts) checks the claim epoch and
// sends XACK in one call, but every id passes through Lua on the way in and out: on Redis 8.6
// that doubled the Redis CPU of an ack (0.83 µs an id against a plain XACK's 0.40). Here the
// same check is Redis' own optimistic lock: WATCH the epoch hash, read it, and only when it is
// still the epoch every id was read under, MULTI / XACK / EXEC. A claim raises the epoch in the
// script that claims, so one between the WATCH and the EXEC aborts the EXEC; one before the
// WATCH shows as a newer epoch. Either way nothing is acked here and the caller sends the script.
//
// WATCH belongs to a connection, so this one is its own, and nothing else sends on it:
// - another MULTI / EXEC on it would end the watch before ours ran;
// - ioredis sends unanswered commands again after a reconnect, and a MULTI / XACK / EXEC sent
//   again on a new connection would run unwatched. It is opened with that resend and the offline
//   queue off, and an ack is abandoned (to the script) if the connection closed since its WATCH.
// Without the resend ioredis never settles the commands a dropped connection took with it, so a
// close settles the step in flight itself.

/** Options of the dedicated connection (see above). */
export const WATCHED_ACK_CONNECTION = { autoResendUnfulfilledCommands: false, enableOfflineQueue: false } as const;

/** A step abandoned because the connection closed under it; the script acks instead. */
class ConnectionClosedError extends Error {}

export class WatchedAck {
  /** Raised on every close: a WATCH holds only while it is unchanged. */
  private connectionGeneration = 0;
  /** One ack at a time: a second WATCH or EXEC would change what the first one watches. */
  private queue: Promise<unknown> = Promise.resolve();
  private abandonStep: ((err: Error) => void) | null = null;
  /** Set when Redis refuses WATCH, MULTI or EXEC to this user (ACL): every ack is the script's. */
  private refused = false;

  constructor(
    readonly redis: Redis,
    /** Redis refused WATCH, MULTI or EXEC (ACL): called once, and every ack is the script's from then on. */
    private readonly onRefused: (err: Error) => void = () => undefined,
  ) {
    redis.on('close', () => {
      this.connectionGeneration++;
      this.abandonStep?.(new ConnectionClosedError('the connection closed'));
    });
  }

  /**
   * XACK of `ids` if the claim epoch in `claimEpochKey` is `readUnder` from before the XACK to its
   * end: the count Redis acked, or null when it was not (or the connection could not tell), and
   * nothing was acked.
   */
  ack(stream: string, group: string, claimEpochKey: string, readUnder: string, ids: readonly string[]): Promise<number | null> {
    if (this.refused) return Promise.resolve(null);
    const turn = this.queue.then(() =>
      this.watchedXack(stream, group, claimEpochKey, readUnder, ids).catch((err: unknown) => {
        // Whatever failed here, the script finds out again and reports it (a missing group, OOM…).
        if (err instanceof Error && err.message.startsWith('NOPERM') && !this.refused) {
          this.refused = true;
          this.onRefused(err);
        }
        this.redis.unwatch().catch(() => undefined);
        return null;
      }),
    );
    this.queue = turn;
    return turn;
  }

  private async watchedXack(
    stream: string,
    group: string,
    claimEpochKey: string,
    readUnder: string,
    ids: readonly string[],
  ): Promise<number | null> {
    if (this.redis.status !== 'ready') return null;
    const generation = this.connectionGeneration;
    const watched = await this.step(this.redis.pipeline().watch(claimEpochKey).hmget(claimEpochKey, 'n', 'claim-reads').exec());
    if (generation !== this.connectionGeneration) return null;
    const [[watchErr], [readErr, row]] = watched as Array<[Error | null, unknown]>;
    if (watchErr || readErr) throw watchErr ?? readErr;
    const [epoch, claimReads] = row as Array<string | null>;
    if (epoch !== readUnder || claimReads !== null) {
      // The next ack WATCHes afresh; this one must not stay watched and abort it.
      await this.step(this.redis.unwatch());
      return null;
    }
    const done = await this.step(
      this.redis
        .multi()
        .xack(stream, group, ...ids)
        .exec(),
    );
    // null: the epoch hash changed after the WATCH (a claim, or it was recreated).
    if (!done) return null;
    const [err, acked] = done[0];
    if (err) throw err;
    return Number(acked);
  }

  /** Waits for a command, or for the connection to close under it (see above). */
  private step<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.abandonStep = reject;
      command.then(resolve, reject);
    }).finally(() => {
      this.abandonStep = null;
    });
  }
}
