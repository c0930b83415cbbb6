import { Command, type Redis } from 'ioredis';
import { isPermissionError } from './acl-hint.js';

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

/**
 * Most ids one step acks. The acks of several consumers (one per stream and group) that wait
 * together go in one step, so a server with many busy streams does not queue each behind the
 * others; the bound keeps one EXEC short (Redis runs it in one go).
 */
const MAX_IDS_PER_STEP = 4_000;

/** One consumer's ack batch waiting for its step. */
interface WatchedAckRequest {
  readonly stream: string;
  readonly group: string;
  readonly claimEpochKey: string;
  readonly readUnder: string;
  readonly ids: readonly string[];
  readonly settle: (acked: number | null) => void;
}

export class WatchedAck {
  /** Raised on every close: a WATCH holds only while it is unchanged. */
  private connectionGeneration = 0;
  /**
   * One step at a time: a second WATCH or EXEC would change what the first one watches. What
   * waits meanwhile goes in the next step together.
   */
  private waiting: WatchedAckRequest[] = [];
  private stepping = false;
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
    // Refused once: a later MULTI could be refused too, and the XACK behind it would run unwatched.
    if (this.refused) return Promise.resolve(null);
    return new Promise((settle) => {
      this.waiting.push({ stream, group, claimEpochKey, readUnder, ids, settle });
      if (this.stepping) return;
      this.stepping = true;
      // A microtask later: acks asked in this same turn (several consumers' flushes) share the step.
      queueMicrotask(() => void this.stepThroughWaiting());
    });
  }

  private async stepThroughWaiting(): Promise<void> {
    while (this.waiting.length > 0) {
      const requests = this.nextStep();
      const answers = this.refused ? requests.map(() => null) : await this.ackInOneStep(requests);
      requests.forEach((request, i) => request.settle(answers[i]));
    }
    this.stepping = false;
  }

  /** The oldest waiting requests, up to MAX_IDS_PER_STEP ids (always at least one). */
  private nextStep(): WatchedAckRequest[] {
    let ids = this.waiting[0].ids.length;
    let count = 1;
    while (count < this.waiting.length && ids + this.waiting[count].ids.length <= MAX_IDS_PER_STEP) {
      ids += this.waiting[count].ids.length;
      count++;
    }
    return this.waiting.splice(0, count);
  }

  private async ackInOneStep(requests: WatchedAckRequest[]): Promise<Array<number | null>> {
    try {
      return await this.watchedXacks(requests);
    } catch (err) {
      // Whatever failed here, the script finds out again and reports it (a missing group, OOM…).
      this.noteRefusal(err);
      this.send('unwatch', []).catch(() => undefined);
      return requests.map(() => null);
    }
  }

  private noteRefusal(err: unknown): void {
    if (!isPermissionError(err) || this.refused) return;
    this.refused = true;
    this.onRefused(err as Error);
  }

  /**
   * WATCH of every request's epoch hash and a read of each; then one MULTI with the XACK of each
   * request whose epoch is its stamp, and EXEC. A change to any watched hash aborts the EXEC, and
   * every request of the step goes to the script (too cautious for the others, never unsafe).
   */
  private async watchedXacks(requests: WatchedAckRequest[]): Promise<Array<number | null>> {
    const none = requests.map(() => null);
    if (this.redis.status !== 'ready') return none;
    const generation = this.connectionGeneration;
    const keys = [...new Set(requests.map((request) => request.claimEpochKey))];
    const watched = this.send('watch', keys);
    const reads = keys.map((key) => this.send('hmget', [key, 'n', 'claim-reads']));
    const [, ...rows] = (await this.step(Promise.all([watched, ...reads]))) as [unknown, ...Array<Array<string | null>>];
    if (generation !== this.connectionGeneration) return none;
    // The epoch each hash holds; none where the group carries version 0.2's CLAIM-read mark.
    const epochOf = new Map(keys.map((key, i) => [key, rows[i][1] === null ? rows[i][0] : null]));
    const acking = requests.map((request) => epochOf.get(request.claimEpochKey) === request.readUnder);
    if (!acking.includes(true)) {
      // The next step WATCHes afresh; this one must not stay watched and abort it.
      await this.step(this.send('unwatch', []));
      return none;
    }
    // Written in this same turn of the event loop as the check above: no reconnect can come in
    // between. A command that fails to queue makes the EXEC fail as a whole (EXECABORT). A MULTI
    // refused (the server checked it can run at start: openWatchedAck) ends the lane.
    const began = this.send('multi', []);
    requests.forEach((request, i) => {
      if (acking[i]) this.send('xack', [request.stream, request.group, ...request.ids]).catch(() => undefined);
    });
    const [, done] = (await this.step(Promise.all([began, this.send('exec', [])]))) as [unknown, unknown[] | null];
    // null: an epoch hash changed after the WATCH (a claim, or it was recreated).
    if (done === null) return none;
    let reply = 0;
    return requests.map((_, i) => {
      if (!acking[i]) return null;
      const acked = done[reply++];
      if (!(acked instanceof Error)) return Number(acked);
      this.noteRefusal(acked);
      return null;
    });
  }

  /**
   * One command as a bare ioredis Command, as LeanScript sends its scripts: acks run at the pace
   * of entries, and a pipeline or MULTI object per ack allocated enough to lengthen the
   * consumer's p99 (5,000 entries/s: 8-12 ms against 2 ms).
   */
  private send(name: string, args: string[]): Promise<unknown> {
    const command = new Command(name, args, { replyEncoding: 'utf8', keyPrefix: this.redis.options.keyPrefix });
    void this.redis.sendCommand(command);
    return command.promise;
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
